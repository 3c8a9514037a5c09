"""Core-selecting payments: the minimum-revenue core point nearest to VCG, exactly.

Working in surplus over the reserve, winner j pays p_j ∈ [vcg_j, bid_j]. The core asks, for every
set T of winners left out of a coalition with all the losers:

    Σ_{j∈T} p_j  ≥  β_T = V(S, N∖T) − V(S) + Σ_{j∈T} bid_j

There are 2^|W| such sets, so they are generated as needed (Day & Raghavan 2007): the payments
are the revenue-minimising point of the constraints found so far (an LP) nearest to VCG (a QP,
Day & Cramton 2012), and the loop ends only when an exact separation finds no coalition blocking
that point. No round bound: the answer is always the exact point, rounded up to whole µUSD.

What keeps the rounds few and cheap (Bünz, Seuken & Lubin 2015 add several constraints per round
and keep them across rounds; the rest is this market's structure):

- The nodes are identical, so separation is a knapsack over one capacity axis: each winner either
  stays out (keeping bid − payment) or takes part with any of its own units (`_Separation`).
- One table pass certifies a point. When it is blocked, a second pass from the other end gives,
  for every winner j at once, the most violated coalition leaving j out: up to |W| constraints
  per round instead of one.
- Equal-sized winners are interchangeable in a coalition, so a found coalition stands for many:
  replacing a member by a winner that kept a slot at least as large in the blocking allocation
  never lowers the bound. Between exact separations, the constraints found are re-aimed that way
  at the new point (`_Pool`), which costs no table pass at all.
- The LP and the QP see only the constraints that bind or nearly do; the rest are checked
  afterwards and brought in only if the solution breaks them (`_Relaxation`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from burstmarket.auction.kernels import add_winner, best_split
from burstmarket.auction.knapsack import Item, Table, bundles, empty
from burstmarket.auction.qp import SolverError, minimize, nearest_to_origin

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

_USD = 1e-6  # µUSD -> USD: the programs run in USD above VCG, far above the solvers' tolerances
_SNAP = 1e-2  # µUSD: a solver value this close above a whole µUSD is that µUSD
_REVENUE_SLACK = (1e-9, 1e-7, 1e-5)  # USD over the LP's minimum revenue the QP may use
_NEAR = 1e-7  # USD: a constraint this close to binding goes into the programs
_TABLE_BUDGET = 256 << 20  # bytes of separation tables kept at once


@dataclass(frozen=True, slots=True)
class Winner:
    lo: int
    """VCG surplus: the least the winner can pay (µUSD/h over the reserve)."""
    hi: int
    """Its bid surplus: the value of what it won over the reserve; the most it can pay."""
    nodes: int
    """Nodes it won."""
    units: Sequence[Item]
    """All of its units, won or not: what it could do in a coalition."""


@dataclass(frozen=True, slots=True)
class CorePayments:
    surplus: list[int]
    """Per winner, µUSD/h over the reserve."""
    rounds: int
    """Exact separations run, the last of which found no blocking coalition."""
    exact: bool
    """Checked at the end: the point blocks no coalition, lies between VCG and the bids, and its
    revenue is the relaxation's minimum rounded up to whole µUSD."""


@dataclass(frozen=True, slots=True)
class _Coalition:
    left_out: tuple[int, ...]
    """T: the winners the coalition leaves out."""
    bound: int
    """A lower bound on β_T (exact for a coalition the separation found)."""
    slots: Ints
    """Per winner, the nodes it uses in the blocking allocation (0: left out)."""


def core_payments(
    winners: Sequence[Winner], losers: Table, capacity: int, best: int
) -> CorePayments:
    """The minimum-revenue core point nearest VCG. `losers` is the table over every unit of
    clusters that won nothing; `best` is V(S)."""
    lo = np.array([w.lo for w in winners], dtype=np.int64)
    bids = np.array([w.hi for w in winners], dtype=np.int64)
    if not winners:
        return CorePayments([], 0, True)
    separation = _Separation(winners, losers[: capacity + 1], best)
    pool = _Pool(np.array([w.nodes for w in winners], dtype=np.int64))
    relaxation = _Relaxation(lo, bids)
    point = lo.copy()
    rounds = 0
    while True:
        variants = pool.violated(point)
        if not variants:
            rounds += 1
            found = separation.blocking(bids - point, point)
            if not found:
                break
            pool.extend(found)
            variants = found
        if not relaxation.add(variants):
            # `solve` returns a point meeting every constraint it holds, so a violated one is new
            raise SolverError("a blocked point violates no new constraint")
        point = relaxation.solve(point)
    return CorePayments(
        [int(p) for p in point], rounds, relaxation.certifies(point)
    )


class _Separation:
    """The most blocking coalitions at a payment point: a knapsack over node capacities in which
    the losers take any of their units and each winner either stays out, keeping bid − payment,
    or takes part with any of its own units. A coalition blocks when the best such value exceeds
    V(S)."""

    def __init__(self, winners: Sequence[Winner], losers: Table, best: int) -> None:
        self.capacity = len(losers) - 1
        self.losers = losers.astype(np.int64)
        self.best = best
        self.units = [bundles(w.units) for w in winners]
        length = self.capacity + 1
        kind = np.int16 if length <= np.iinfo(np.int16).max else np.int32
        count = len(winners)
        self.forward = np.zeros((count, length), dtype=kind)
        self.backward = np.zeros((count, length), dtype=kind)
        self.scratch = empty(length)
        self.used = empty(length)
        # backward tables are kept whole within the budget, else every `block`-th one
        self.block = 1 if (count + 1) * length * 8 <= _TABLE_BUDGET else max(1, math.isqrt(count))

    def _add(self, table: Table, j: int, keep: int, choices: npt.NDArray[np.integer]) -> None:
        sizes, values = self.units[j]
        add_winner(table, keep, sizes, values, self.scratch, self.used, choices[j])

    def blocking(self, keeps: Ints, point: Ints) -> list[_Coalition]:
        """Nothing if no coalition blocks; else, for each winner j that some blocking coalition
        leaves out, the most blocking coalition leaving j out."""
        count, capacity = len(keeps), self.capacity
        table = self.losers.copy()
        for j in range(count):
            self._add(table, j, int(keeps[j]), self.forward)
        if int(table[capacity]) <= self.best:
            return []
        checkpoints = self._backward(keeps)
        values = np.empty(count, dtype=np.int64)
        splits = np.empty(count, dtype=np.int64)
        prefix = self.losers.copy()  # losers and winners before j
        for start in range(0, count, self.block):
            end = min(start + self.block, count)
            suffixes = self._suffixes(checkpoints, keeps, start, end)
            for j in range(start, end):
                value, split = best_split(prefix, suffixes[j - start], capacity)
                values[j], splits[j] = value + keeps[j], split
                self._add(prefix, j, int(keeps[j]), self.forward)
        blocked = np.flatnonzero(values > self.best)
        return self._coalitions(blocked, values[blocked], splits[blocked], point)

    def _backward(self, keeps: Ints) -> dict[int, Table]:
        """Tables over the winners after j (j + 1 … end), kept at every `block`-th j."""
        count = len(keeps)
        table = empty(self.capacity + 1)
        kept = {count: table.copy()}
        for j in range(count - 1, -1, -1):
            self._add(table, j, int(keeps[j]), self.backward)
            if j % self.block == 0:
                kept[j] = table.copy()
        return kept

    def _suffixes(
        self, kept: dict[int, Table], keeps: Ints, start: int, end: int
    ) -> list[Table]:
        """For j in [start, end): the table over winners j + 1 … end of the row."""
        if self.block == 1:
            return [kept[j + 1] for j in range(start, end)]
        tables = [kept[end]]
        scratch_choices = np.empty((1, self.capacity + 1), dtype=self.backward.dtype)
        for j in range(end - 1, start, -1):
            table = tables[-1].copy()
            sizes, values = self.units[j]
            add_winner(table, int(keeps[j]), sizes, values, self.scratch, self.used,
                       scratch_choices[0])
            tables.append(table)
        return tables[::-1]

    def _coalitions(
        self, left_out: Ints, values: Ints, splits: Ints, point: Ints
    ) -> list[_Coalition]:
        """Walk the recorded choices back from each blocked winner's split, all at once."""
        count, capacity = len(self.units), self.capacity
        columns = np.arange(len(left_out))
        slots = np.zeros((count, len(left_out)), dtype=np.int64)
        room = splits.copy()
        for i in range(count - 1, -1, -1):  # winners before j, from the forward choices
            taken = np.where(left_out > i, self.forward[i][room], 0)
            slots[i] += taken
            room -= taken
        room = capacity - splits
        for i in range(count):  # winners after j, from the backward choices
            taken = np.where(left_out < i, self.backward[i][room], 0)
            slots[i] += taken
            room -= taken
        slots[left_out, columns] = 0
        found: dict[tuple[int, ...], _Coalition] = {}
        for column in np.argsort(-values, kind="stable").tolist():
            members = tuple(np.flatnonzero(slots[:, column] == 0).tolist())
            if members in found:
                continue  # already there with at least this value (visited in value order)
            bound = int(values[column]) - self.best + int(point[list(members)].sum())
            found[members] = _Coalition(members, bound, slots[:, column].copy())
        return list(found.values())


class _Pool:
    """Every coalition found, re-aimed at each new point: a member of T may be swapped for a
    winner outside T whose slot in the blocking allocation has at least the member's won nodes
    and at most its own (the member then takes that slot, worth at least its bid, and the other
    gives up at most its bid): β of the new set is at least β_T."""

    def __init__(self, won: Ints) -> None:
        self.won = won
        self.found: list[_Coalition] = []

    def extend(self, coalitions: Sequence[_Coalition]) -> None:
        self.found.extend(coalitions)

    def violated(self, point: Ints) -> list[_Coalition]:
        variants: dict[tuple[int, ...], _Coalition] = {}
        for coalition in self.found:
            members = self._cheapest(coalition, point)
            if int(point[list(members)].sum()) < coalition.bound:
                known = variants.get(members)
                if known is None or known.bound < coalition.bound:
                    variants[members] = _Coalition(members, coalition.bound, coalition.slots)
        return list(variants.values())

    def _cheapest(self, coalition: _Coalition, point: Ints) -> tuple[int, ...]:
        slots, won = coalition.slots, self.won
        outside = np.flatnonzero((slots > 0) & (slots <= won))
        if not len(outside):
            return coalition.left_out
        outside = outside[np.argsort(point[outside], kind="stable")]
        free = np.ones(len(outside), dtype=bool)
        members = set(coalition.left_out)
        for member in sorted(coalition.left_out, key=lambda m: (-int(point[m]), m)):
            fits = free & (slots[outside] >= won[member]) & (point[outside] < point[member])
            candidates = np.flatnonzero(fits)
            if len(candidates):
                taken = int(candidates[0])
                free[taken] = False
                members.discard(member)
                members.add(int(outside[taken]))
        return tuple(sorted(members))


class _Relaxation:
    """The constraints found so far, and the point of least revenue nearest VCG under them."""

    def __init__(self, lo: Ints, bids: Ints) -> None:
        self.lo, self.bids = lo, bids
        self.bound: dict[tuple[int, ...], int] = {}
        self.least = 0.0

    def add(self, coalitions: Sequence[_Coalition]) -> bool:
        new = False
        for c in coalitions:
            if self.bound.get(c.left_out, -1) < c.bound:
                self.bound[c.left_out] = c.bound
                new = True
        return new

    def solve(self, previous: Ints) -> Ints:
        """Least revenue (LP), then the point on it nearest VCG (QP), in USD above VCG over the
        winners some constraint names (any other extra payment would only raise revenue).
        Each program starts from the constraints that bind at the last point or come new and
        takes in any other it then breaks, so it ends feasible for all of them."""
        sets = list(self.bound)
        involved = np.array(sorted({j for members in sets for j in members}), dtype=np.int64)
        column = {int(j): i for i, j in enumerate(involved.tolist())}
        rows = [[column[j] for j in members] for members in sets]
        short = np.array([self.bound[m] - int(self.lo[list(m)].sum()) for m in sets])
        need: Floats = (short * _USD).astype(np.float64)
        membership = np.zeros((len(rows), len(involved)))
        for i, row in enumerate(rows):
            membership[i, row] = 1.0
        lower = np.zeros(len(involved))
        upper: Floats = ((self.bids[involved] - self.lo[involved]) * _USD).astype(np.float64)
        start = (previous[involved] - self.lo[involved]) * _USD
        active = set(np.flatnonzero(membership @ start - need <= _NEAR).tolist())

        def lp(chosen: list[int]) -> Floats:
            return minimize(
                lower, upper, [rows[i] for i in chosen], need[chosen],
                linear=np.ones(len(involved)),
            )

        x = _feasible(lp, active, membership, need)
        self.least = float(x.sum())
        active |= set(np.flatnonzero(membership @ x - need <= _NEAR).tolist())

        def qp(chosen: list[int]) -> Floats:
            return _on_least_revenue(
                lower, upper, [rows[i] for i in chosen], need[chosen], self.least
            )

        x = _feasible(qp, active, membership, need)
        slack = self.bids[involved] - self.lo[involved]
        snapped = np.minimum(slack, np.maximum(0, np.ceil(x / _USD - _SNAP)).astype(np.int64))
        # snapping may leave a large set a µUSD short: plain ceilings for its members
        for i in np.flatnonzero(membership @ snapped < short).tolist():
            members = rows[i]
            snapped[members] = np.minimum(slack[members], np.ceil(x[members] / _USD))
        point = self.lo.copy()
        point[involved] += snapped
        return point

    def certifies(self, point: Ints) -> bool:
        """The last point is between VCG and the bids, meets every constraint found, and its
        revenue above VCG is the LP's least rounded up: under a µUSD per winner above it."""
        within = bool(np.all(self.lo <= point)) and bool(np.all(point <= self.bids))
        meets = all(int(point[list(m)].sum()) >= b for m, b in self.bound.items())
        raised = int((point - self.lo).sum())
        least = self.least / _USD
        return within and meets and least - _SNAP <= raised <= least + len(point)


def _feasible(
    solve: Callable[[list[int]], Floats], active: set[int], membership: Floats, need: Floats
) -> Floats:
    """Solve over the `active` rows, adding any other row the answer breaks, until none."""
    while True:
        x = solve(sorted(active))
        broken = set(np.flatnonzero(membership @ x - need < -1e-9).tolist()) - active
        if not broken:
            return x
        active |= broken


def _on_least_revenue(
    lower: Floats, upper: Floats, rows: list[list[int]], bounds: Floats, least: float
) -> Floats:
    """The point nearest the origin with revenue at most the LP's minimum plus a slack.

    The slack stays far under the snap to whole µUSD, so it never shows in a payment; only
    when the LP's own rounding leaves that face empty does it grow, and a payment may then read
    one µUSD high.
    """
    for slack in _REVENUE_SLACK[:-1]:
        try:
            return nearest_to_origin(lower, upper, rows, bounds, least + slack)
        except SolverError:
            continue
    return nearest_to_origin(lower, upper, rows, bounds, least + _REVENUE_SLACK[-1])
