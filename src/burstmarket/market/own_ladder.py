"""Each cluster's own ladder (docs/market.md "The cluster's own ladder"): for n = 1 … N, the
lowest grid price at which, if nothing else changed, the next tick grants it n more nodes, its
own losing demand left out, and what its whole holding would then be billed per hour.

It is priced on the auction the next tick would run (tick/clearing.py `next_bids`), so a rung
that reads "now" is one the next tick can grant; a rung that needs nodes windows hold now reads
from when (`contestable_at`) and its price then, and every rung lists its price at each later
time windows lapse within the hour (`later`): waiting may cost less than bidding now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from burstmarket.auction import IslandInput, Release, growth

OWN_RUNGS = 64
"""The most rungs a cluster's own ladder has (`GET /api/ladder?max_nodes=` keeps the first)."""


@dataclass(frozen=True, slots=True)
class OwnRung:
    nodes: int
    """n more nodes."""
    gpus: int
    price: int
    """µUSD/GPU-h: the lowest grid price granting n more (at the next tick, or at
    `contestable_at` when windows hold the nodes)."""
    usd_per_hour: int
    """µUSD/h the cluster's whole holding would be billed then, at most."""
    contestable_at: int | None
    """Market ns; None: winnable at the next tick."""
    later: tuple[tuple[int, int], ...]
    """(at ns, price µUSD/GPU-h) at each time windows lapse within the next hour, after the
    rung's own time, where its price changes."""


@dataclass(frozen=True, slots=True)
class Holding:
    """What one cluster brings to its own ladder, from the next tick's auction."""

    cluster: str
    own: frozenset[str]
    """Its units left out of everyone else's demand: a VM cluster's every unit (they all bid
    the new ceiling), a Kubernetes cluster's pending jobs."""
    held: int
    """Its held nodes out of their window, which must keep winning (VM: they bid the ceiling)."""
    gang: bool
    """A Kubernetes cluster grows by one new job of n nodes; a VM cluster by n single units."""
    caps: tuple[int, ...] = ()
    """The locks of its nodes under a window (VM: the new ceiling lifts each cap to it)."""
    paid: int = 0
    """µUSD/h it pays for the rest of what it holds (Kubernetes: all of it now)."""
    released: dict[int, int] = field(default_factory=dict)
    """Window end -> its own nodes under a window ending then (VM: they bid again with it)."""

    def billed(self, n: int, price: int, g: int) -> int:
        """Its whole holding's bill per hour at most, with n more at `price`: a payment never
        exceeds the bid nor a protected node's cap."""
        if self.gang:
            return self.paid + n * price * g
        capped = sum(max(cap, price) for cap in self.caps)
        return self.paid + (capped + (self.held + n) * price) * g


def own_ladders(
    auction: IslandInput,
    holdings: Sequence[Holding],
    releases: Sequence[Release],
    now: int,
    rungs: int = OWN_RUNGS,
) -> dict[str, tuple[OwnRung, ...]]:
    """Every cluster's own ladder on the next tick's `auction`; `releases`: the nodes under a
    window then, by the time it ends (tick/clearing.py `window_releases`)."""
    supply, g, reserve = auction.nodes, auction.gpus_per_node, auction.reserve_price
    groups = [h for h in holdings if h.own]
    depth = max((h.held + rungs for h in holdings), default=0)
    rows = growth.without(auction.units, supply, g, reserve, [h.own for h in groups], depth)
    tables = {h.cluster: row for h, row in zip(groups, rows, strict=True)}
    alone = len(groups) < len(holdings)  # some cluster has no demand of its own there
    everyone = growth.full(auction.units, supply, g, reserve) if alone else None
    out: dict[str, tuple[OwnRung, ...]] = {}
    for h in holdings:
        others = tables.get(h.cluster, everyone)
        assert others is not None
        prices = growth.prices(others, supply, h.held, rungs, g, reserve, h.gang)
        ladder = []
        for n, price in enumerate(prices, start=1):
            if price is None:
                break
            ladder.append(OwnRung(n, n * g, price, h.billed(n, price, g), None, ()))
        out[h.cluster] = tuple(ladder)
    return out
