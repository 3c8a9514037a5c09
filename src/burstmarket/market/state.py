"""The state rows that tenants, the operator, the declarations' hot copy and the ticks all read:
an island, a cluster, the nodes a cluster holds; and an island's creation with its nodes."""

from __future__ import annotations

from burstmarket.errors import NotFound
from burstmarket.market.model import Cluster, Island, Node
from burstmarket.market.tables import CLUSTERS, ISLANDS, NODES
from burstmarket.store.rows import Cursor, fetch, fetch_one, run


def node_id(island: str, idx: int) -> str:
    return f"{island}-n{idx:04d}"


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


def create_island(cur: Cursor, new: Island, at: int) -> None:
    run(
        cur,
        "insert_island",
        id=new.id,
        gpus_per_node=new.gpus_per_node,
        nodes=new.nodes,
        reserve_price=new.reserve_price,
        node_spec=new.node_spec,
        created_at=at,
    )
    add_nodes(cur, new.id, 0, new.nodes)


def add_nodes(cur: Cursor, island_id: str, start: int, stop: int) -> None:
    """Free nodes `start` .. `stop` - 1 of the island."""
    # no holder, job, grant, window, hold, idle time, locked price or commitment
    free = [Node(island_id, node_id(island_id, i), i, *[None] * 9) for i in range(start, stop)]
    NODES.insert(cur, free)
