"""Each cluster's own ladder (docs/market.md "The cluster's own ladder"): for n = 1 … N, the
lowest grid price at which, if nothing else changed, the next tick grants it n more nodes, its
own losing demand left out, and what its whole holding would then be billed per hour.

It is priced on the auction the next tick would run (tick/clearing.py `next_bids`), so a rung
that reads "now" is one the next tick can grant; a rung that needs nodes windows hold now reads
from when (`contestable_at`) and its price then, and every rung lists its price at each later
time windows lapse within the hour (`later`): waiting may cost less than bidding now.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from burstmarket.auction import IslandInput, Release, growth
from burstmarket.clock import NS_PER_HOUR
from burstmarket.market.single_units import SingleUnits

Ints = npt.NDArray[np.int64]

OWN_RUNGS = 16
"""The most rungs a cluster's own ladder has (`GET /api/ladder?max_nodes=` keeps the first)."""
LATER_TIMES = 8
"""The most times within the hour a cluster's own ladder is priced at, the earliest first: each
is one more pass over the island's demand (docs/market.md "The cluster's own ladder")."""


class OwnRung(NamedTuple):
    """One rung (a tuple, immutable: a tick makes sixteen for every cluster of the island)."""

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
    caps: tuple[tuple[int, int], ...] = ()
    """(window end, lock) of each VM node it holds under a window: the new ceiling lifts the
    cap to it; once the window ends the node bids again with the cluster's others."""
    paid: int = 0
    """µUSD/h it pays for what it holds (Kubernetes: a new job adds to it)."""

    def at(self, time: int, released: frozenset[str]) -> Holding:
        """The holding once the windows ending by `time` have lapsed: a VM cluster's released
        nodes (their units `released`) bid with its others."""
        if self.gang:
            return self
        lapsed = sum(1 for end, _ in self.caps if end <= time)
        return Holding(
            self.cluster,
            self.own | released,
            self.held + lapsed,
            False,
            tuple((end, lock) for end, lock in self.caps if end > time),
        )


def own_ladders(
    auction: IslandInput,
    holdings: Sequence[Holding],
    releases: Sequence[Release],
    now: int,
    rungs: int = OWN_RUNGS,
) -> dict[str, tuple[OwnRung, ...]]:
    """Every cluster's own ladder on the next tick's `auction`, then at each of the first
    `LATER_TIMES` times within the hour after `now` that windows end (`releases`: the nodes
    under a window then, by the time it ends, tick/clearing.py `window_releases`)."""
    g = auction.gpus_per_node
    times: list[int | None] = [None]
    levels = [_priced(auction, holdings, rungs)]
    coming = sorted({r.at for r in releases if r.at <= now + NS_PER_HOUR})[:LATER_TIMES]
    for end in coming:
        come = [r for r in releases if r.at <= end]
        then = replace(
            auction,
            nodes=auction.nodes + sum(r.nodes for r in come),
            units=auction.units + tuple(u for r in come for u in r.units),
        )
        mine: dict[str, set[str]] = defaultdict(set)
        for u in then.units[len(auction.units) :]:
            mine[u.cluster].add(u.id)
        times.append(end)
        moved = [h.at(end, frozenset(mine[h.cluster])) for h in holdings]
        levels.append(_priced(then, moved, rungs))
    out: dict[str, tuple[OwnRung, ...]] = {}
    for h in holdings:
        out[h.cluster] = _rungs(g, times, [level[h.cluster] for level in levels])
    return out


def _rungs(
    g: int, times: Sequence[int | None], levels: Sequence[tuple[list[int], list[int]]]
) -> tuple[OwnRung, ...]:
    """A cluster's rungs from its (prices, bills) at each time: a rung's own is the first that
    has one (−1: none then); `later` lists the times after it where its price changes."""
    prices, bills = levels[0]
    if len(levels) == 1:  # no window ends within the hour: the rungs there are, and no later
        count = next((i for i, price in enumerate(prices) if price < 0), len(prices))
        return tuple(
            OwnRung(n, n * g, price, billed, None, ())
            for n, price, billed in zip(range(1, count + 1), prices, bills, strict=False)
        )
    ladder = []
    for i, price in enumerate(prices):
        first = 0
        if price < 0:
            first = next((k for k in range(1, len(levels)) if levels[k][0][i] >= 0), -1)
            if first < 0:
                break
            price = levels[first][0][i]
        # the times are in order: those after the rung's own are the levels after `first`
        later: list[tuple[int, int]] = []
        last = price
        for at, (p, _) in zip(times[first + 1 :], levels[first + 1 :], strict=True):
            if p[i] >= 0 and p[i] != last:
                assert at is not None
                later.append((at, p[i]))
                last = p[i]
        n = i + 1
        ladder.append(OwnRung(n, n * g, price, levels[first][1][i], times[first], tuple(later)))
    return tuple(ladder)


def _priced(
    auction: IslandInput, holdings: Sequence[Holding], rungs: int
) -> dict[str, tuple[list[int], list[int]]]:
    """Cluster -> the prices of rungs 1 … `rungs` in `auction` (−1: more nodes than there
    are) and its bills then."""
    supply, g, reserve = auction.nodes, auction.gpus_per_node, auction.reserve_price
    groups = [h for h in holdings if h.own]
    depth = max((h.held + rungs for h in holdings), default=0)
    removed = [h.own for h in groups]
    # every unit one node (VM demand): the others' best from one sorted array, not a knapsack
    singles = SingleUnits.of(auction.units, g, reserve)
    if singles is not None:
        rows = singles.without(supply, removed, depth)
    else:
        rows = growth.without(auction.units, supply, g, reserve, removed, depth)
    tables = {h.cluster: row for h, row in zip(groups, rows, strict=True)}
    everyone = None
    if len(groups) < len(holdings):  # some cluster has no demand of its own there
        everyone = (
            singles.full(supply)
            if singles is not None
            else growth.full(auction.units, supply, g, reserve)
        )
    others = []
    for h in holdings:
        theirs = tables.get(h.cluster, everyone)
        assert theirs is not None
        others.append(theirs)
    held = np.array([h.held for h in holdings], dtype=np.int64)
    gang = np.array([h.gang for h in holdings], dtype=np.bool_)
    prices = growth.prices_of(others, supply, held, rungs, g, reserve, gang)
    billed = np.where(prices < 0, 0, _bills(holdings, held, gang, prices, g))
    return {
        h.cluster: (p, b)
        for h, p, b in zip(holdings, prices.tolist(), billed.tolist(), strict=True)
    }


def _bills(
    holdings: Sequence[Holding], held: Ints, gang: npt.NDArray[np.bool_], prices: Ints, g: int
) -> Ints:
    """Each holding's whole bill per hour at most with n = 1, 2 … more at `prices[k, n − 1]`
    (row k for `holdings[k]`, its `held[k]` and `gang[k]`): a payment never exceeds the bid nor
    a protected node's cap."""
    more = np.arange(1, prices.shape[1] + 1)
    paid = np.array([h.paid for h in holdings], dtype=np.int64)
    # a Kubernetes cluster's new job adds to what it pays; a VM cluster's nodes all pay the
    # price, those under a window at most their lock
    bills = np.where(
        gang[:, None], paid[:, None] + more * prices * g, (held[:, None] + more) * prices * g
    )
    for k, h in enumerate(holdings):
        if not h.gang:
            for _, lock in h.caps:
                bills[k] += np.maximum(lock, prices[k]) * g
    return bills
