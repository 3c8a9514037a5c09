"""The rows every desk, the declarations' hot copy and the tick runner look up by id: an island,
a cluster (with its island, in one read), the nodes a cluster holds, an account. Each missing
id is `not-found`."""

from __future__ import annotations

from burstmarket.errors import NotFound
from burstmarket.market.ledger import BALANCE
from burstmarket.market.model import Cluster, Island, Node
from burstmarket.market.tables import CLUSTERS, ISLANDS, NODES
from burstmarket.store.rows import Cursor, fetch, fetch_one


def read_island(cur: Cursor, island_id: str) -> Island:
    row = fetch_one(cur, "island", island=island_id)
    if row is None:
        raise NotFound(f"no island {island_id!r}", island=island_id)
    return ISLANDS.from_row(row)


def read_cluster(cur: Cursor, cluster_id: str) -> Cluster:
    row = fetch_one(cur, "cluster", cluster=cluster_id)
    if row is None:
        raise NotFound(f"no cluster {cluster_id!r}", cluster=cluster_id)
    return CLUSTERS.from_row(row)


def read_cluster_and_island(cur: Cursor, cluster_id: str) -> tuple[Cluster, Island]:
    """A cluster and its island in one read: what every tenant request starts from."""
    row = fetch_one(cur, "cluster_island", cluster=cluster_id)
    if row is None:
        raise NotFound(f"no cluster {cluster_id!r}", cluster=cluster_id)
    return CLUSTERS.from_row(row["c"]), ISLANDS.from_row(row["i"])


def cluster_nodes(cur: Cursor, cluster_id: str) -> list[Node]:
    """The nodes the cluster has in service, in index order."""
    return [NODES.from_row(r) for r in fetch(cur, "cluster_nodes", cluster=cluster_id)]


def check_account(cur: Cursor, name: str) -> None:
    """The account exists."""
    if fetch_one(cur, "account", name=name) is None:
        raise NotFound(f"no account {name!r}", account=name)


def billing_hold_since(cur: Cursor, account: str) -> int | None:
    """Since when the account's balance is at or below zero (market ns; read only while it
    is)."""
    row = fetch_one(cur, "billing_hold_since", account=account, kinds=list(BALANCE))
    return None if row is None or row["since"] is None else int(row["since"])
