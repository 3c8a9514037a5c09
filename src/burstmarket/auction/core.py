"""Core-selecting payments: the minimum-revenue core point nearest to VCG, exactly.

Working in surplus over the reserve, winner j pays p_j ∈ [vcg_j, bid_j]. The core asks, for every
set T of winners left out of a coalition with all the losers:

    Σ_{j∈T} p_j  ≥  β_T = V(S, N∖T) − V(S) + Σ_{j∈T} bid_j

There are 2^|W| such sets, so they are generated as needed (Day & Raghavan 2007): the payments
are the revenue-minimising point of the constraints found so far (an LP) nearest to VCG (a QP,
Day & Cramton 2012), and the loop ends only when an exact separation finds no coalition blocking
that point and the point is proven optimal. No round bound: the answer is always the exact point,
rounded up to whole µUSD. What keeps it fast is this market's structure:

- The nodes are identical, so separation is a knapsack over one capacity axis: each winner stays
  out (keeping bid − payment) or takes part with any of its own units (`kernels.separate`). One
  pass forward and one backward give, for every winner j at once, the most blocking coalition
  leaving j out (Bünz, Seuken & Lubin 2015 add several constraints a round; here one per class
  below). Those passes follow the winning allocation within a band of nodes (a blocking
  coalition frees a few gangs' worth). Only the certificate is exact: one pass over every
  capacity (`kernels.most_blocking`), run once the band finds nothing; if it finds what the band
  missed, the band widens.
- Winners that won as many nodes at the same VCG payment are interchangeable: a coalition leaving
  one out stands for the same coalition leaving out any other, whenever that other took part on
  exactly the nodes it won (swap them: each takes the other's place and gives up at most its bid,
  so β does not fall). The programs therefore run over classes of such winners, one payment per
  class, which both shrinks them (a few dozen classes for a thousand winners) and spares the
  rounds that would otherwise raise the members of a class one at a time.
- The class solution is the exact optimum, not an approximation: the constraints binding at it,
  with every swapped copy, are a relaxation of the core that is symmetric within classes, whose
  unique nearest minimum-revenue point is therefore the class point; it lies in the core (the
  exact separation), so it is the core's. Where a binding coalition had a class member take part
  on other nodes (so its copies are unproven), or a member's bid caps its class, that member gets
  a class of its own and the programs run again.
- The LP stays one HiGHS model that rows join as they are found (each solve starts from the last
  basis); the QP holds only the rows binding at the LP's point or at its own last one, and any
  other its answer breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from burstmarket.auction.kernels import NEG, advance, blocking_back, most_blocking, separate
from burstmarket.auction.knapsack import Table
from burstmarket.auction.qp import LeastRevenue, nearest

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Helper = Callable[..., Future[Ints]]
"""Runs a function on another thread, its result to come (`_Spread.submit` in clear.py)."""

_USD = 1e-6  # µUSD -> USD: the programs run in USD above VCG, far above the solvers' tolerances
_SNAP = 1e-2  # µUSD: a solver value this close above a whole µUSD is that µUSD
_REVENUE_SLACK = (1e-9, 1e-7, 1e-5)  # USD over the LP's minimum revenue the QP may use
_BINDING = 1e-7  # USD: a constraint this close to binding counts as binding
_WIDTH = 128  # nodes: how far the separation's band first reaches from the winning allocation
_BAND_BUDGET = 64 << 20  # bytes of band tables; past it, every round is an exact separation


@dataclass(frozen=True, slots=True)
class Winner:
    lo: int
    """VCG surplus: the least the winner can pay (µUSD/h over the reserve)."""
    hi: int
    """Its bid surplus: the value of what it won over the reserve; the most it can pay."""
    nodes: int
    """Nodes it won."""
    sizes: Ints
    values: Ints
    """All of its units, won or not, as knapsack items: what it could do in a coalition."""


@dataclass(frozen=True, slots=True)
class CorePayments:
    surplus: list[int]
    """Per winner, µUSD/h over the reserve."""
    rounds: int
    """Payment points examined, from VCG on: the last one no coalition blocks (the exact
    separation says so)."""
    exact: bool
    """Checked at the end: the point blocks no coalition found, lies between VCG and the bids,
    and its revenue is the programs' minimum rounded up to whole µUSD."""
    binding: list[Ints | None] = field(default_factory=list)
    """Per winner paying above VCG, the winners T left out of the coalition that required it
    (the tightest constraint found holding it, indices into the winners); None at VCG."""


@dataclass(frozen=True, slots=True)
class _Coalition:
    left_out: Ints
    """T: the winners the coalition leaves out."""
    bound: int
    """A lower bound on β_T: the value of the plan the separation found."""
    moved: Ints
    """Winners taking part on other nodes than they won (their classes' copies are unproven)."""


def core_payments(
    winners: Sequence[Winner],
    losers: Table,
    capacity: int,
    best: int,
    helper: Helper | None = None,
) -> CorePayments:
    """The minimum-revenue core point nearest VCG. `losers` is the table over every unit of
    clusters that won nothing; `best` is V(S). `helper` runs a kernel on another thread (the
    exact separation's back half); None: all on the caller's."""
    if not winners:
        return CorePayments([], 0, True)
    lo = np.array([w.lo for w in winners], dtype=np.int64)
    bids = np.array([w.hi for w in winners], dtype=np.int64)
    separation = _Separation(winners, losers[: capacity + 1], best, helper)
    program = _Program(lo, bids, np.array([w.nodes for w in winners], dtype=np.int64))
    point = lo.copy()
    rounds = 1
    while True:
        found = separation.band(bids - point, point, program.classes)
        if not found:
            if not program.certified():  # classes were split: solve again first
                point = program.solve()
                rounds += 1
                continue
            found = separation.exact(bids - point, point)
            if not found:
                break
        program.add(found)
        point = program.solve()
        rounds += 1
    return CorePayments(
        [int(p) for p in point], rounds, program.exact(point), program.binding(point)
    )


class _Separation:
    """The most blocking coalitions at a payment point (see `kernels.separate`)."""

    def __init__(
        self, winners: Sequence[Winner], losers: Table, best: int, helper: Helper | None
    ) -> None:
        self.losers = losers.astype(np.int64)
        self.best = best
        # the winners that could use the most nodes first: the exact pass's tables shrink soonest
        demand = [int(w.sizes.sum()) for w in winners]
        self.order = np.argsort(-np.array(demand), kind="stable")
        ordered = [winners[j] for j in self.order.tolist()]
        self.sizes = np.concatenate([w.sizes for w in ordered])
        self.values = np.concatenate([w.values for w in ordered])
        self.starts = np.cumsum([0] + [len(w.sizes) for w in ordered]).astype(np.int64)
        self.won = np.array([winners[j].nodes for j in self.order.tolist()], dtype=np.int64)
        self.width = _WIDTH
        self._helper = helper if len(winners) > 1 else None
        # the exact pass's halves split where each is about half its cells: winner j's step
        # spans the nodes j … n−1 could use, once per unit of its own
        capacity = len(self.losers) - 1
        use = np.minimum(capacity, np.cumsum(np.array(demand)[self.order][::-1])[::-1])
        cells = np.cumsum((use + 1) * np.diff(self.starts))
        self._half = int(np.clip(np.searchsorted(cells, cells[-1] / 2), 1, len(winners) - 1))
        # the first winner's plans beside the losers, built once (see kernels.stay_or_join)
        length = len(self.losers)
        self.joined = np.empty(length, dtype=np.int64)
        self.took = np.empty(length, dtype=np.int64)
        first = slice(0, int(self.starts[1]))
        advance(
            self.losers,
            0,
            0,
            length - 1,
            NEG,
            self.sizes[first],
            self.values[first],
            self.joined,
            self.took,
            np.empty(length, dtype=np.int64),
            np.empty_like(self.took),
        )

    def band(self, keeps: Ints, point: Ints, classes: Ints) -> list[_Coalition]:
        """In each class of interchangeable winners, the most blocking coalition the band finds
        leaving one of them out; nothing if it finds none (or its tables would not fit)."""
        capacity = len(self.losers) - 1
        free = capacity - int(self.won.sum())
        band = min(capacity + 1, 2 * self.width + free + 1)
        if 16 * band * (len(keeps) + 1) > _BAND_BUDGET:
            return []
        totals, traced, roles = separate(
            *self._inputs(keeps), classes[self.order], self.width, self.best
        )
        return self._coalitions(totals[traced], roles, point)

    def exact(self, keeps: Ints, point: Ints) -> list[_Coalition]:
        """The most blocking coalition of all, or nothing if none blocks."""
        if self._most_blocking(keeps) <= self.best:
            return []
        # the band missed it: trace it, and reach further from now on
        capacity = len(self.losers) - 1
        self.width = min(capacity, 2 * self.width + 1)
        kind = np.int16 if capacity <= np.iinfo(np.int16).max else np.int32
        choices = np.empty((len(keeps), capacity + 1), dtype=kind)
        table, roles = most_blocking(*self._inputs(keeps), choices, len(keeps))
        return self._coalitions(table[-1:], roles[None, :], point)

    def _most_blocking(self, keeps: Ints) -> int:
        """The most blocking coalition's value: on a helper thread, its front and back halves
        at once (`kernels.blocking_back`), which gives the same maximum."""
        no_choices = np.empty((0, 0), dtype=np.int16)
        if self._helper is None:
            table, _ = most_blocking(*self._inputs(keeps), no_choices, len(keeps))
            return int(table[-1])
        capacity = len(self.losers) - 1
        back = self._helper(
            blocking_back,
            keeps[self.order],
            self.starts,
            self.sizes,
            self.values,
            self._half,
            capacity,
        )
        front, _ = most_blocking(*self._inputs(keeps), no_choices, self._half)
        return int((front + back.result()[::-1]).max())

    def _inputs(self, keeps: Ints) -> tuple[Ints, Ints, Ints, Ints, Ints, Ints, Ints, Ints]:
        return (
            self.losers,
            self.joined,
            self.took,
            keeps[self.order],
            self.won,
            self.starts,
            self.sizes,
            self.values,
        )

    def _coalitions(
        self, values: Ints, roles: npt.NDArray[np.int8], point: Ints
    ) -> list[_Coalition]:
        found: dict[bytes, _Coalition] = {}
        in_order = np.empty_like(roles)
        in_order[:, self.order] = roles
        for value, role in zip(values.tolist(), in_order, strict=True):
            left_out = np.flatnonzero(role == 1)
            # value = Σ_T (bid − p) + the plan's value, so β_T ≥ value − V(S) + Σ_T p
            bound = value - self.best + int(point[left_out].sum())
            key = left_out.tobytes()
            if key not in found or found[key].bound < bound:
                found[key] = _Coalition(left_out, bound, np.flatnonzero(role == 2))
        return list(found.values())


class _Program:
    """The constraints found, over classes of interchangeable winners, and the point of least
    revenue nearest VCG under them."""

    def __init__(self, lo: Ints, bids: Ints, won: Ints) -> None:
        self.lo, self.bids = lo, bids
        self.room = bids - lo
        keys: dict[tuple[int, int], int] = {}
        self.classes = np.array(
            [keys.setdefault((int(w), int(v)), len(keys)) for w, v in zip(won, lo, strict=True)],
            dtype=np.int64,
        )
        self.coalitions: list[_Coalition] = []
        self.least = 0.0
        self._restart()

    def _restart(self) -> None:
        """Rows from every coalition found, over the classes as they are now."""
        self.index: dict[bytes, int] = {}
        self.matrix = np.zeros((0, int(self.classes.max()) + 1))
        self.need = np.zeros(0, dtype=np.int64)
        self.proven = np.zeros(0, dtype=np.bool_)
        self.reps: list[_Coalition] = []
        self.lp: LeastRevenue | None = None
        self.active = np.zeros(0, dtype=np.bool_)  # rows the QP holds
        self.x: Floats = np.zeros(self.matrix.shape[1])
        self._count(self.coalitions)

    def add(self, found: Sequence[_Coalition]) -> None:
        self.coalitions.extend(found)
        self._count(found)

    def _count(self, coalitions: Sequence[_Coalition]) -> None:
        """A row per distinct class count of the coalitions: the count, the most any of them
        needs above VCG (µUSD), and a coalition needing it (one whose copies are proven, if
        any is)."""
        count = self.matrix.shape[1]
        fresh: list[Ints] = []
        for c in coalitions:
            counts = np.bincount(self.classes[c.left_out], minlength=count)
            need = c.bound - int(self.lo[c.left_out].sum())
            proven = not np.any(counts[self.classes[c.moved]])
            key = counts.tobytes()
            row = self.index.get(key)
            if row is None:
                self.index[key] = len(self.reps)
                self.reps.append(c)
                self.need = np.append(self.need, need)
                self.proven = np.append(self.proven, proven)
                fresh.append(counts)
            elif (need, proven) > (self.need[row], self.proven[row]):
                if self.lp is not None and need > self.need[row]:
                    self.lp.raise_need(row, need * _USD)
                self.need[row], self.proven[row], self.reps[row] = need, proven, c
        if fresh:
            rows = np.array(fresh, dtype=np.float64)
            self.matrix = np.vstack([self.matrix, rows])
            self.active = np.append(self.active, np.ones(len(fresh), dtype=np.bool_))
            if self.lp is not None:
                self.lp.add(rows, (self.need[-len(fresh) :] * _USD).astype(np.float64))

    def _split(self, members: Ints) -> bool:
        """Give each of `members` a class of its own (those not alone in theirs already)."""
        split = False
        for j in members.tolist():
            if np.count_nonzero(self.classes == self.classes[j]) > 1:
                self.classes[j] = self.classes.max() + 1
                split = True
        if split:
            self._restart()
        return split

    def solve(self) -> Ints:
        """Least revenue (LP), then the point on it nearest VCG (QP), one payment per class, in
        USD above VCG; a member whose bid caps its class's payment gets a class of its own."""
        while True:
            count = self.matrix.shape[1]
            sizes = np.bincount(self.classes, minlength=count).astype(np.float64)
            room = (self.room * _USD).astype(np.float64)
            upper = np.zeros(count)
            np.maximum.at(upper, self.classes, room)
            required = (self.need * _USD).astype(np.float64)
            if self.lp is None:
                self.lp = LeastRevenue(sizes, upper)
                self.lp.add(self.matrix, required)
            x = self.lp.solve()
            self.least = float(sizes @ x)
            # the QP holds the rows binding at the LP's point or at its own last one, and any
            # other it then breaks
            self.active |= self.matrix @ x - required <= _BINDING
            while True:
                x = self._nearest(sizes, upper, self.matrix[self.active], required[self.active])
                broken = (self.matrix @ x - required < -1e-9) & ~self.active
                if not broken.any():
                    break
                self.active |= broken
            self.active = self.matrix @ x - required <= _BINDING
            capped = np.flatnonzero(room <= x[self.classes] + 1e-12)
            if not self._split(capped):
                break
        self.x = x
        snapped = np.maximum(0, np.ceil(x / _USD - _SNAP)).astype(np.int64)
        # snapping may leave a row a µUSD short: plain ceilings for its classes
        for i in np.flatnonzero(self.matrix @ snapped < self.need).tolist():
            involved = self.matrix[i] > 0
            snapped[involved] = np.ceil(x[involved] / _USD)
        point: Ints = self.lo + np.minimum(self.room, snapped[self.classes])
        return point

    def _nearest(self, sizes: Floats, upper: Floats, matrix: Floats, required: Floats) -> Floats:
        """The QP with the revenue at most the LP's minimum plus a slack. The slack stays far
        under the snap to whole µUSD, so it never shows in a payment; only when the LP's own
        rounding leaves that face empty does it grow, and a payment may then read one µUSD
        high."""
        for slack in _REVENUE_SLACK[:-1]:
            try:
                return nearest(sizes, upper, matrix, required, self.least + slack)
            except RuntimeError:
                continue
        return nearest(sizes, upper, matrix, required, self.least + _REVENUE_SLACK[-1])

    def certified(self) -> bool:
        """True when every coalition binding at the last solution has its copies proven, so that
        the solution is the optimum of a relaxation of the core (see the module's docstring);
        else the members standing in the way get classes of their own (solve again)."""
        binding = self.matrix @ self.x - self.need * _USD <= _BINDING
        blocking = [
            c.moved[np.isin(self.classes[c.moved], self.classes[c.left_out])]
            for c in (self.reps[i] for i in np.flatnonzero(binding & ~self.proven).tolist())
        ]
        return not blocking or not self._split(np.concatenate(blocking))

    def binding(self, point: Ints) -> list[Ints | None]:
        """For each winner above VCG, the left-out set of the tightest coalition found that holds
        it (the first found of the tightest). A winner raised only as a copy of its class stands
        in for the class member that coalition left out first (the swap of the module's
        docstring). One pass per coalition over every winner at once."""
        count = len(point)
        tightest = np.full(count, np.iinfo(np.int64).max, dtype=np.int64)
        which = np.full(count, -1, dtype=np.int64)
        stand_in = np.full(count, -1, dtype=np.int64)  # the member a copy takes the place of
        classes_count = int(self.classes.max()) + 1
        for k, c in enumerate(self.coalitions):
            left_out = c.left_out
            slack = int(point[left_out].sum()) - c.bound
            # per class, the coalition's first member of it (-1: none)
            classes, first = np.unique(self.classes[left_out], return_index=True)
            mate_of = np.full(classes_count, -1, dtype=np.int64)
            mate_of[classes] = left_out[first]
            mate = mate_of[self.classes]
            mate[left_out] = -2  # a member stands for itself
            held = np.where(mate == -2, slack, slack - point[np.maximum(mate, 0)] + point)
            tighter = (mate != -1) & (held < tightest)
            tightest[tighter] = held[tighter]
            which[tighter] = k
            stand_in[tighter] = mate[tighter]
        found: list[Ints | None] = []
        for j in range(count):
            if point[j] <= self.lo[j] or which[j] < 0:
                found.append(None)
                continue
            left_out = self.coalitions[int(which[j])].left_out
            if stand_in[j] >= 0:
                left_out = np.sort(np.append(left_out[left_out != stand_in[j]], j))
            found.append(left_out)
        return found

    def exact(self, point: Ints) -> bool:
        """The point is between VCG and the bids, meets every constraint found, and its revenue
        above VCG is the LP's least rounded up: under a µUSD per winner above it."""
        within = bool(np.all(self.lo <= point)) and bool(np.all(point <= self.bids))
        meets = all(int(point[c.left_out].sum()) >= c.bound for c in self.coalitions)
        raised = int((point - self.lo).sum())
        least = self.least / _USD
        return within and meets and least - _SNAP <= raised <= least + len(point)
