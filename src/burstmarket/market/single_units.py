"""Everyone else's best value W(x) for the own ladders (market/own_ladder.py) when every unit
that bids is one node, as on an island of VM clusters: the best plan on x nodes is then the x
best units, so W(x) for every cluster at once comes from one sorted array and its running sums.
The integers are those of `growth.without` and `growth.full` (auction/growth.py), whose
knapsack makes one pass over the island's nodes per cluster; here a sort and a search are all.

The others of cluster c, in the island's order of value (best first), are the units left once
c's are taken out. If c's units sit at places q_0 < q_1 < … of that order, q_i − i others come
before its i-th, so j(x) = #{i : q_i − i < x} of its units come before the x-th other, and the
x best others are the first x + j(x) units but c's j(x): W(x) = P[x + j(x)] − C_c[j(x)], with
P the running sum of every value and C_c that of c's own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from burstmarket.auction.growth import Others, bidding
from burstmarket.auction.types import Unit

Ints = npt.NDArray[np.int64]


def without(
    units: Sequence[Unit],
    supply: int,
    g: int,
    reserve: int,
    removed: Sequence[frozenset[str]],
    depth: int,
) -> list[Others] | None:
    """`growth.without` (for each set of unit ids in `removed`, the sets disjoint: V(x) over
    every other unit for x in [S − depth, S]), or None when a unit that bids is not one node."""
    kept = bidding(units, reserve)
    if any(u.nodes != 1 for u in kept):
        return None
    if not removed:
        return []
    values, order = _ordered(kept, reserve, g)
    total = len(kept)
    running = np.concatenate([[0], np.cumsum(values[order])])
    group = {uid: k for k, ids in enumerate(removed) for uid in ids}
    codes = np.array([group.get(u.id, -1) for u in kept], dtype=np.int64)[order]
    # each cluster's units, cluster by cluster, each in the order of value: their places q_i
    places = np.flatnonzero(codes >= 0)
    places = places[np.argsort(codes[places], kind="stable")]
    mine = codes[places]
    own = np.bincount(mine, minlength=len(removed))
    starts = np.concatenate([[0], np.cumsum(own)])
    rank = np.arange(len(places)) - starts[mine]
    own_running = np.concatenate([[0], np.cumsum(running[places + 1] - running[places])])
    low = max(0, supply - depth)
    x = np.minimum(np.arange(low, supply + 1)[None, :], (total - own)[:, None])
    # j(x) per cluster by one search over every cluster's q_i − i, kept apart by cluster
    span = total + supply + 2
    keys = mine * span + (places - rank)
    base = np.arange(len(removed))[:, None] * span
    before = np.searchsorted(keys, base + x, side="left") - starts[:-1, None]
    rows = running[x + before] - (
        own_running[starts[:-1, None] + before] - own_running[starts[:-1, None]]
    )
    return [Others(low, rows[k], total - int(own[k])) for k in range(len(removed))]


def full(units: Sequence[Unit], supply: int, g: int, reserve: int) -> Others | None:
    """`growth.full` (everyone's demand, for a cluster with none of its own), or None when a
    unit that bids is not one node."""
    kept = bidding(units, reserve)
    if any(u.nodes != 1 for u in kept):
        return None
    values, order = _ordered(kept, reserve, g)
    running = np.concatenate([[0], np.cumsum(values[order])])
    return Others(0, running[np.minimum(np.arange(supply + 1), len(kept))], len(kept))


def _ordered(kept: Sequence[Unit], reserve: int, g: int) -> tuple[Ints, Ints]:
    """Each unit's value over the reserve, µUSD per hour, and the units' order, best first."""
    values = np.array([(u.price - reserve) * g for u in kept], dtype=np.int64)
    return values, np.argsort(-values, kind="stable")
