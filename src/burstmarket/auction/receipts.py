"""Why each cluster pays what it pays (docs/market.md "Receipts"): the demand behind the VCG and
protected payments, and the coalition behind a core payment, as price levels × nodes.

Read off the clearing's own figures: V(S, c̄) and V(S + P_c, c̄) (clear.py's `_without`), the
chosen allocation and the core's binding coalitions (core.py). What is traced here is only
which units reach those values:

- Without c, its K_c won nodes and the F free ones are open to the others. Most of the time the
  best use of them is the others' winners as they are plus the best of the losing units on the
  K_c + F nodes: a knapsack over a few nodes, checked against V(S, c̄), which is exact. When the
  check fails (reaching V(S, c̄) moves another winner's gang), a band is tried next: the others'
  winners may give up to 16 nodes to losing units, then up to 128 (`_banded`, `_BANDS`); only if
  that does not reach V(S, c̄) either is the others' allocation traced over the whole supply. A
  narrow band that reaches the value finds the wide one's plan: both take, of the best plans,
  the one giving the fewest nodes way, which the narrow band holds, and on the capacities both
  span their candidates hold the same preferred plan. The protected nodes'
  P_c more nodes are the same, one step on.
- A coalition T left out of the core's binding constraint is the same band from the winners
  outside T, checked against the most V(S, N∖T) can be at the core's point (which blocks no
  coalition: V(S) − Σ_T (bid − payment)); over the whole supply only when the band falls short,
  once per distinct T.

The losing units a knapsack over at most `reach` nodes can hold are the same for every cluster
but a cluster's own, so they are pruned once (`allocation.dominated`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from burstmarket.auction.allocation import dominated
from burstmarket.auction.kernels import band, first_of_each_size, preferred
from burstmarket.auction.types import Coalition, Level

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
_NONE: Ints = np.empty(0, dtype=np.int64)
"""No units (shared: an empty array has nothing to write)."""

_BANDS = (16, 128)
"""Nodes of the winners a traced allocation may take back, tried in turn before the whole supply
is traced (a gang coming in displaces a few gangs' worth; the core's separation starts from the
same). On the Kubernetes-heavy 25,000-node island every trace gives back at most 15 nodes, and
the narrow band's knapsacks have a tenth of the wide one's candidates on a fifth of its nodes."""


class Tracer:
    """The clearing's units in age order (their prices, sizes, values), which of them won, and
    their clusters' codes."""

    def __init__(
        self,
        prices: Ints,
        sizes: Ints,
        values: Ints,
        cluster: Ints,
        chosen: Mask,
        won_nodes: Ints,
        won_value: Ints,
        supply: int,
        reach: int,
    ) -> None:
        """`won_nodes`, `won_value`: what each cluster won, by code (the payments' own)."""
        self.prices = prices
        self.sizes, self.values, self.cluster, self.chosen = sizes, values, cluster, chosen
        self.won_nodes, self.won_value = won_nodes, won_value
        self.supply = supply
        self.free = supply - int(sizes[chosen].sum())
        self.chosen_value = int(values[chosen].sum())
        # what every unit's value is a multiple of (the price grid × g): so is every allocation's
        self.grain = max(1, int(np.gcd.reduce(values))) if len(values) else 1
        losing = np.flatnonzero(~chosen & (sizes <= reach))
        # a cluster's own units leave the pool with it: prune as if `reach` more singles could
        # be missing, then a cluster's own singles (the most any cluster has)
        singles = np.bincount(cluster[losing][sizes[losing] == 1], minlength=1)
        keep = ~dominated(sizes[losing], values[losing], 2 * reach + int(singles.max()))
        pool = losing[keep]
        # by size, the most valuable first (then the oldest): of one size, a plan holds the
        # first ones (kernels.first_of_each_size)
        pool = pool[np.lexsort((pool, -values[pool], sizes[pool]))]
        self.pool = _Ranked(pool, sizes, cluster)
        # VM demand is single nodes: on fewer nodes than the pool's smallest gang, the best
        # is its single nodes taken greedily in the pool's order (value first, then age), with
        # no knapsack to run per cluster
        single = sizes[pool] == 1
        ranked = pool[single]
        self.singles = list(zip(ranked.tolist(), cluster[ranked].tolist(), strict=True))
        """(unit, its cluster's code), the best first."""
        self.smallest_gang = int(sizes[pool][~single].min(initial=supply + reach + 1))
        index = np.arange(len(sizes))
        # the band's candidates, by size: to bring in, the losing units, the most valuable first
        # (then the oldest); to give way, the winning ones, the least valuable first (then the
        # youngest). Ranking each side apart spares every trace a walk past the other side's
        # units (the winners are the most valuable, and most losers cost less than any winner)
        by_value = np.lexsort((index, -values, sizes))
        self.losers_by_value = _Ranked(by_value[~chosen[by_value]], sizes, cluster)
        by_cost = np.lexsort((-index, values, sizes))
        self.winners_by_cost = _Ranked(by_cost[chosen[by_cost]], sizes, cluster)
        self.cost_rank = np.empty(len(sizes), dtype=np.int64)
        self.cost_rank[by_cost] = index
        self._coalitions: dict[bytes, Coalition] = {}

    def displaced(self, c: int, without: int) -> tuple[Ints, Ints]:
        """Units that would win without cluster c and lose now (entering), and units winning now
        that would not (leaving): V(S, c̄) − O_c is their values' difference."""
        others = self.chosen_value - int(self.won_value[c])
        room = self.free + int(self.won_nodes[c])
        entering = self._best_in(c, room, _NONE)
        if others + int(self.values[entering].sum()) == without:
            return entering, _NONE
        return self._reached(self._but(c), _NONE, _NONE, room, others, self.supply, without)

    def protected(
        self,
        c: int,
        entering: Ints,
        leaving: Ints,
        more: int,
        without: int,
        at: int,
    ) -> tuple[Ints, Ints]:
        """What `more` protected nodes of cluster c keep out: units the others would add (and
        those they would drop) going from V(S, c̄) (reached by `entering`, `leaving`, value
        `without`) to V(S + P_c, c̄) = `at`."""
        # the nodes open to the others from V(S, c̄)'s allocation on: S + P_c less what it holds
        room = self.free + int(self.won_nodes[c]) + more
        room += int(self.sizes[leaving].sum()) - int(self.sizes[entering].sum())
        if not len(leaving):
            added = self._best_in(c, room, entering)
            if without + int(self.values[added].sum()) == at:
                return added, _NONE
        others = self._but(c)
        return self._reached(others, entering, leaving, room, without, self.supply + more, at)

    def coalition(self, left_out: Sequence[int], paid: int) -> Coalition:
        """The best allocation without the clusters T = `left_out`, as what it brings in and
        drops against the chosen one (their own won units aside). `paid`: what T pays together
        above the reserve at the core's point, which no coalition blocks, so V(S, N∖T) is at
        most the others' chosen value plus `paid`."""
        key = np.asarray(sorted(left_out), dtype=np.int64).tobytes()
        if key not in self._coalitions:
            members = np.asarray(left_out, dtype=np.int64)
            kept = np.ones(len(self.won_nodes), dtype=np.bool_)
            kept[members] = False
            room = self.free + int(self.won_nodes[members].sum())
            others = self.chosen_value - int(self.won_value[members].sum())
            entering, leaving = self._reached(
                kept, _NONE, _NONE, room, others, self.supply, others + paid
            )
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
        pool = self.pool.first(self._but(c), np.sort(taken), room)
        if not len(pool) or room <= 0:
            return _NONE
        pool.sort()  # age order, as optima takes units
        taken_now: Ints = pool[preferred(self.sizes[pool], self.values[pool], room)]
        return taken_now

    def _but(self, c: int) -> Mask:
        """Every cluster but c (a mask by cluster code)."""
        kept = np.ones(len(self.won_nodes), dtype=np.bool_)
        kept[c] = False
        return kept

    def _reached(
        self,
        kept: Mask,
        added: Ints,
        dropped: Ints,
        room: int,
        value: int,
        capacity: int,
        most: int,
    ) -> tuple[Ints, Ints]:
        """A best allocation of the units of the `kept` clusters (a mask by cluster code) on
        `capacity` nodes, as the units it adds to the base (the kept winners, with the losing
        units `added` and without the winning ones `dropped`: worth `value`, leaving `room`
        nodes) and those it drops from it. `most`: the best value can be no more (V itself
        where it is known). Every allocation is worth a multiple of `grain`, so the band's
        allocation is a best one when it comes within less than that of `most`; else the
        preferred optimum over the whole supply is traced."""
        for width in _BANDS:
            entering, leaving = self._banded(kept, added, dropped, room, width)
            reached = value + int(self.values[entering].sum()) - int(self.values[leaving].sum())
            if most - reached < self.grain:
                return entering, leaving
        units = kept[self.cluster]
        wide = self._mask(units, capacity)
        base = self.chosen & units
        base[added] = True
        base[dropped] = False
        return np.flatnonzero(wide & ~base), np.flatnonzero(base & ~wide)

    def _banded(
        self, kept: Mask, added: Ints, dropped: Ints, room: int, width: int
    ) -> tuple[Ints, Ints]:
        """The best allocation of the `kept` clusters' units on `room` nodes more than the base
        holds (`_reached`) that keeps the base but for at most `width` of its nodes: units to
        bring in, units to give way. Of one size, a plan brings in the most valuable and gives
        up the least valuable, so only the first few candidates of each size count (as many as
        fit): here the first few of the losing units outside the base and of the winners in it,
        and every unit `added` or `dropped` (a handful), a superset of the first few of all
        units, which holds the same preferred plan."""
        reach = room + width
        enter = np.concatenate((self.losers_by_value.first(kept, np.sort(added), reach), dropped))
        enter.sort()  # age order (the units' order), as optima takes units
        give = np.concatenate((self.winners_by_cost.first(kept, np.sort(dropped), width), added))
        give = give[np.argsort(self.cost_rank[give])]  # the least valuable first, as ranked
        return band(enter, give, self.sizes, self.values, room, width)

    def _mask(self, kept: Mask, capacity: int) -> Mask:
        """The preferred optimum (age tie-break) of the `kept` units on `capacity` nodes."""
        index = np.flatnonzero(kept)
        mask = np.zeros(len(kept), dtype=np.bool_)
        if len(index) and capacity > 0:
            mask[index[preferred(self.sizes[index], self.values[index], capacity)]] = True
        return mask


class _Ranked:
    """Units by size ascending, then as a plan would take those of one size."""

    def __init__(self, ranked: Ints, sizes: Ints, cluster: Ints) -> None:
        self.ranked, self.sizes, self.cluster = ranked, sizes, cluster
        size = sizes[ranked]
        self.ends = np.searchsorted(size, size, side="right")

    def first(self, kept: Mask, aside: Ints, room: int) -> Ints:
        """The units of the `kept` clusters (a mask by cluster code) but those `aside`
        (sorted) a plan on `room` nodes can hold of each size, the first ones."""
        return first_of_each_size(
            self.ranked, self.ends, self.sizes, self.cluster, kept, aside, room
        )
