"""Clusters: the operator makes one (an account's, on an island, of a kind, with its token shown
once); its token reads what it acts for (`GET /api/cluster`). Every tenant desk starts from the
cluster and checks its kind here."""

from __future__ import annotations

import secrets
from typing import get_args

from burstmarket.contract import ClusterCreatedView, ClusterView, NewCluster
from burstmarket.errors import Conflict, Forbidden, Invalid
from burstmarket.market.desks.inputs import name
from burstmarket.market.figures import token_hash
from burstmarket.market.lookups import check_account, read_cluster_and_island, read_island
from burstmarket.market.market import Market
from burstmarket.market.model import Cluster
from burstmarket.states import Kind
from burstmarket.store.rows import fetch_one, run

KINDS: tuple[Kind, ...] = get_args(Kind)


class ClustersDesk:
    def __init__(self, market: Market) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures

    def create(self, new: NewCluster) -> ClusterCreatedView:
        name("name", new.name)
        if new.kind not in KINDS:
            raise Invalid("kind", "must be 'vm' or 'k8s'")
        token = secrets.token_urlsafe(32)
        with self._lock, self._db.write() as cur:
            check_account(cur, new.account)
            read_island(cur, new.island)
            if fetch_one(cur, "cluster", cluster=new.name) is not None:
                raise Conflict(f"cluster {new.name!r} exists", cluster=new.name)
            run(
                cur,
                "insert_cluster",
                id=new.name,
                account=new.account,
                island=new.island,
                kind=new.kind,
                token_hash=token_hash(token),
                created_at=self._clock.now_ns(),
            )
        self._figures.add_token(new.name, token)
        # the token is shown here, once; only its hash is stored
        return ClusterCreatedView(
            id=new.name, token=token, account=new.account, island=new.island, kind=new.kind
        )

    def view(self, cluster_id: str) -> ClusterView:
        """The cluster a token acts for: its account, island, kind and the island's node size."""
        with self._db.read() as cur:
            c, island = read_cluster_and_island(cur, cluster_id)
        return ClusterView(
            id=c.id,
            account=c.account,
            island=island.id,
            kind=c.kind,
            gpus_per_node=island.gpus_per_node,
        )


def check_kind(c: Cluster, kind: Kind) -> None:
    """A cluster's token on the other kind's endpoints is `forbidden`."""
    if c.kind != kind:
        raise Forbidden(
            f"this endpoint is for {kind} clusters; cluster {c.id} is {c.kind}",
            cluster=c.id,
            kind=c.kind,
        )
