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
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from burstmarket.auction.growth import Others, bidding
from burstmarket.auction.types import Unit

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class SingleUnits:
    """The island's units that bid, every one a single node, in the order of value."""

    ids: list[str]
    """Best first (equal values: in the order given)."""
    running: Ints
    """running[t]: the sum of the t best values over the reserve, µUSD per hour."""

    @classmethod
    def of(cls, units: Sequence[Unit], g: int, reserve: int) -> SingleUnits | None:
        """None when a unit that bids is not one node: the knapsack's, then."""
        kept = bidding(units, reserve)
        if any(u.nodes != 1 for u in kept):
            return None
        values = np.array([(u.price - reserve) * g for u in kept], dtype=np.int64)
        order = np.argsort(-values, kind="stable")
        return cls([kept[i].id for i in order], np.concatenate([[0], np.cumsum(values[order])]))

    def without(self, supply: int, removed: Sequence[frozenset[str]], depth: int) -> list[Others]:
        """`growth.without`: for each set of unit ids in `removed` (the sets disjoint), V(x)
        over every other unit for x in [S − depth, S]."""
        if not removed:
            return []
        total, running = len(self.ids), self.running
        group = {uid: k for k, ids in enumerate(removed) for uid in ids}
        codes = np.array([group.get(uid, -1) for uid in self.ids], dtype=np.int64)
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
        first = starts[:-1, None]
        before = np.searchsorted(keys, base + x, side="left") - first
        rows = running[x + before] - (own_running[first + before] - own_running[first])
        return [Others(low, rows[k], total - int(own[k])) for k in range(len(removed))]

    def full(self, supply: int) -> Others:
        """`growth.full`: everyone's demand, for a cluster with none of its own."""
        total = len(self.ids)
        return Others(0, self.running[np.minimum(np.arange(supply + 1), total)], total)
