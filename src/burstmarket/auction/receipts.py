"""Why each cluster pays what it pays (docs/market.md "Receipts"): the demand behind the VCG and
protected payments, and the coalition behind a core payment, as price levels × nodes.

Read off the clearing's own figures: V(S, c̄) and V(S + P_c, c̄) (clear.py's `_without`), the
chosen allocation and the core's binding coalitions (core.py). What is traced here is only
which units reach those values:

- Without c, its K_c won nodes and the F free ones are open to the others. Most of the time the
  best use of them is the others' winners as they are plus the best of the losing units on the
  K_c + F nodes: a knapsack over a few nodes, checked against V(S, c̄), which is exact. Only when
  the check fails (reaching V(S, c̄) moves another winner's gang) is the others' allocation
  traced over the whole supply. The protected nodes' P_c more nodes are the same, one step on.
- A coalition T left out of the core's binding constraint is traced over the whole supply, once
  per distinct T (they are few: only winners paying above VCG cite one).

The losing units a knapsack over at most `reach` nodes can hold are the same for every cluster
but a cluster's own, so they are pruned once (`allocation.dominated`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from burstmarket.auction.allocation import dominated, optima
from burstmarket.auction.types import Coalition, Level, Unit

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


class Tracer:
    """The clearing's units in age order, which of them won, and their clusters' codes."""

    def __init__(
        self,
        units: Sequence[Unit],
        sizes: Ints,
        values: Ints,
        cluster: Ints,
        chosen: Mask,
        supply: int,
        reach: int,
    ) -> None:
        self.prices = np.array([u.price for u in units], dtype=np.int64)
        self.sizes, self.values, self.cluster, self.chosen = sizes, values, cluster, chosen
        self.supply = supply
        self.free = supply - int(sizes[chosen].sum())
        self.chosen_value = int(values[chosen].sum())
        losing = np.flatnonzero(~chosen & (sizes <= reach))
        # a cluster's own units leave the pool with it: prune as if `reach` more singles could
        # be missing, then a cluster's own singles (the most any cluster has)
        singles = np.bincount(cluster[losing][sizes[losing] == 1], minlength=1)
        keep = ~dominated(sizes[losing], values[losing], 2 * reach + int(singles.max()))
        self.pool = losing[keep]
        # VM demand is single nodes: on fewer nodes than the pool's smallest gang, the best
        # is its single nodes taken greedily, value first (then age, as the units are in age
        # order), with no knapsack to run per cluster
        single = sizes[self.pool] == 1
        ranked = self.pool[single][np.argsort(-values[self.pool][single], kind="stable")]
        self.singles = list(zip(ranked.tolist(), cluster[ranked].tolist(), strict=True))
        """(unit, its cluster's code), the best first."""
        self.smallest_gang = int(sizes[self.pool][~single].min(initial=supply + reach + 1))
        self._coalitions: dict[bytes, Coalition] = {}

    def displaced(self, c: int, won_nodes: int, won_value: int, without: int) -> tuple[Ints, Ints]:
        """Units that would win without cluster c and lose now (entering), and units winning now
        that would not (leaving): V(S, c̄) − O_c is their values' difference."""
        others = self.chosen_value - won_value
        entering = self._best_in(c, self.free + won_nodes, np.empty(0, dtype=np.int64))
        if others + int(self.values[entering].sum()) == without:
            return entering, np.empty(0, dtype=np.int64)
        return self._traced(self.cluster != c, self.supply)

    def protected(
        self,
        c: int,
        won_nodes: int,
        entering: Ints,
        leaving: Ints,
        more: int,
        without: int,
        at: int,
    ) -> tuple[Ints, Ints]:
        """What `more` protected nodes of cluster c keep out: units the others would add (and
        those they would drop) going from V(S, c̄) (reached by `entering`, `leaving`, value
        `without`) to V(S + P_c, c̄) = `at`."""
        if not len(leaving):
            room = self.free + won_nodes + more - int(self.sizes[entering].sum())
            added = self._best_in(c, room, entering)
            if without + int(self.values[added].sum()) == at:
                return added, np.empty(0, dtype=np.int64)
        others = self.cluster != c
        base = (self.chosen & others).copy()
        base[entering] = True
        base[leaving] = False
        wide = self._mask(others, self.supply + more)
        return np.flatnonzero(wide & ~base), np.flatnonzero(base & ~wide)

    def coalition(self, left_out: Sequence[int]) -> Coalition:
        """The best allocation without the clusters `left_out`, as what it brings in and drops
        against the chosen one (their own won units aside)."""
        key = np.asarray(sorted(left_out), dtype=np.int64).tobytes()
        if key not in self._coalitions:
            kept = ~np.isin(self.cluster, np.asarray(left_out, dtype=np.int64))
            entering, leaving = self._traced(kept, self.supply)
            value = int(self.values[entering].sum()) - int(self.values[leaving].sum())
            self._coalitions[key] = Coalition(self.levels(entering, leaving), value)
        return self._coalitions[key]

    def levels(self, entering: Ints, leaving: Ints) -> tuple[Level, ...]:
        """Units as price levels, the highest first: those entering, then those leaving (their
        nodes negative)."""
        out: list[Level] = []
        if not len(entering) and not len(leaving):
            return ()
        for units, sign in ((entering, 1), (leaving, -1)):
            nodes: dict[int, int] = defaultdict(int)
            for i in units.tolist():
                nodes[int(self.prices[i])] += int(self.sizes[i])
            out += [Level(price, sign * n) for price, n in sorted(nodes.items(), reverse=True)]
        return tuple(out)

    def _best_in(self, c: int, room: int, taken: Ints) -> Ints:
        """The best losing units of clusters other than c on `room` nodes, `taken` aside."""
        if room < self.smallest_gang:
            aside = set(taken.tolist())
            best: list[int] = []
            for i, owner in self.singles:
                if len(best) >= room:
                    break
                if owner != c and i not in aside:
                    best.append(i)
            return np.array(best, dtype=np.int64)
        pool = self.pool[(self.cluster[self.pool] != c) & (self.sizes[self.pool] <= room)]
        pool = pool[~np.isin(pool, taken)]
        if not len(pool) or room <= 0:
            return np.empty(0, dtype=np.int64)
        found = optima(self.sizes[pool], self.values[pool], room).decide(room, [])
        taken_now: Ints = pool[np.asarray(found.chosen, dtype=np.bool_)]
        return taken_now

    def _traced(self, kept: Mask, capacity: int) -> tuple[Ints, Ints]:
        """The best allocation of the `kept` units on `capacity` nodes against the chosen one."""
        wide = self._mask(kept, capacity)
        return np.flatnonzero(wide & ~self.chosen), np.flatnonzero(self.chosen & kept & ~wide)

    def _mask(self, kept: Mask, capacity: int) -> Mask:
        """The preferred optimum (age tie-break) of the `kept` units on `capacity` nodes."""
        index = np.flatnonzero(kept)
        mask = np.zeros(len(kept), dtype=np.bool_)
        if len(index) and capacity > 0:
            found = optima(self.sizes[index], self.values[index], capacity).decide(capacity, [])
            mask[index[np.asarray(found.chosen, dtype=np.bool_)]] = True
        return mask
