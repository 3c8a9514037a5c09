"""A cluster's own ladder (`GET /api/ladder`, docs/market.md "The cluster's own ladder"): read
from its island's last tick, kept in memory (`Figures.own_ladders`), never priced per request."""

from __future__ import annotations

from burstmarket.clock import to_datetime
from burstmarket.contract import LaterPriceView, OwnLadderView, OwnRungView
from burstmarket.errors import Invalid, NotFound
from burstmarket.market.lookups import read_cluster
from burstmarket.market.market import Market
from burstmarket.market.own_ladder import OWN_RUNGS
from burstmarket.money import usd


class LadderDesk:
    def __init__(self, market: Market) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._figures = market.figures

    def own(self, cluster_id: str, max_nodes: int | None = None) -> OwnLadderView:
        """The first `max_nodes` rungs (all of them, at most `OWN_RUNGS`, by default)."""
        if max_nodes is not None and not 1 <= max_nodes <= OWN_RUNGS:
            raise Invalid("max_nodes", f"must be from 1 to {OWN_RUNGS}")
        with self._db.read() as cur:
            c = read_cluster(cur, cluster_id)
        island = c.island
        kept = self._figures.own_ladders(island)
        if kept is None:
            raise NotFound(
                f"island {island!r} has not ticked since the service started", island=island
            )
        # a cluster made since the tick has no demand in it: it reads a newcomer's of its kind
        rungs = kept.rungs.get(cluster_id, kept.newcomer.get(c.kind, ()))[:max_nodes]
        return OwnLadderView(
            cluster=cluster_id,
            island=island,
            tick=kept.tick,
            time=to_datetime(kept.time),
            held_nodes=kept.held.get(cluster_id, 0),
            rungs=[
                OwnRungView(
                    nodes=r.nodes,
                    gpus=r.gpus,
                    price_per_gpu_hour=usd(r.price),
                    usd_per_hour=usd(r.usd_per_hour),
                    contestable_at=None
                    if r.contestable_at is None
                    else to_datetime(r.contestable_at),
                    later=[
                        LaterPriceView(at=to_datetime(at), price_per_gpu_hour=usd(price))
                        for at, price in r.later
                    ],
                )
                for r in rungs
            ],
        )
