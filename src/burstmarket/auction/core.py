"""Core-selecting payments: the minimum-revenue core point nearest to VCG.

Working in surplus over the reserve, winner j pays p_j ∈ [vcg_j, bid_j]. The core asks, for every
set T of winners left out of a coalition with all the losers:

    Σ_{j∈T} p_j  ≥  V(S, N∖T) − V(S) + Σ_{j∈T} bid_j

There are 2^|W| such sets, so they are generated as needed (Day & Raghavan 2007): the most
violated one at a payment point is a winner-determination problem in which winner j may take part
only by giving up what it keeps, bid_j − p_j. The payments are the revenue-minimising point of the
generated constraints (an LP) that lies nearest to VCG (a QP, Day & Cramton 2012); the loop ends
when the point found blocks no coalition. Both programs go to HiGHS in USD so its tolerances sit
far below a µUSD; the point is then rounded up to whole µUSD and checked again exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from burstmarket.auction.knapsack import Table
from burstmarket.auction.qp import SolverError, minimize, nearest_to_origin

Floats = npt.NDArray[np.float64]

_SNAP = 1e-2  # µUSD: a solver value this close above a whole µUSD is that µUSD
_MAX_ROUNDS = 20
_BISECTION = 1 << 10  # steps between the last point and the bids in the fallback
_REVENUE_SLACK = (1e-9, 1e-7, 1e-5)  # USD over the LP's minimum revenue the QP may use


@dataclass(frozen=True, slots=True)
class Winner:
    lo: int
    """VCG surplus: the least the winner can pay (µUSD/h over the reserve)."""
    hi: int
    """Its bid surplus: the value of what it won over the reserve; the most it can pay."""
    own: Table
    """Best value of the winner's own units on at most x nodes (length capacity + 1)."""


@dataclass(frozen=True, slots=True)
class _Constraint:
    members: tuple[int, ...]
    bound: int


def core_payments(winners: Sequence[Winner], losers: Table, capacity: int, best: int) -> list[int]:
    """Surplus payments in µUSD/h, one per winner, at the nearest minimum-revenue core point.

    `losers` is the table over every unit of clusters that won nothing; `best` is V(S).
    """
    lo = [w.lo for w in winners]
    bids = [w.hi for w in winners]
    options = [_options(w.own) for w in winners]
    base = losers[: capacity + 1].astype(np.float64)
    constraints: list[_Constraint] = []
    point = [w.lo for w in winners]
    for _ in range(_MAX_ROUNDS):
        keeps = [b - p for b, p in zip(bids, point, strict=True)]
        blocking = _most_blocking(base, options, keeps, best)
        if blocking is None:
            return point
        coalition_value, left_out = blocking
        # value(x) − V(S) + Σ_T bid_j, with value(x) = coalition_value − Σ_T (bid_j − p_j)
        bound = coalition_value - best + sum(point[j] for j in left_out)
        constraints.append(_Constraint(tuple(left_out), bound))
        point = _nearest_minimum_revenue(lo, bids, constraints)
    return _toward_bids(point, bids, lambda p: _blocks(base, options, bids, p, best))


def _blocks(
    base: Floats,
    options: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]],
    bids: Sequence[int],
    point: Sequence[int],
    best: int,
) -> bool:
    keeps = [b - p for b, p in zip(bids, point, strict=True)]
    return _most_blocking(base, options, keeps, best) is not None


def _toward_bids(
    point: list[int], bids: Sequence[int], blocks: Callable[[list[int]], bool]
) -> list[int]:
    """The first core point on the way from `point` to the bids, found by bisection.

    The fallback when constraint generation has not closed in `_MAX_ROUNDS` (an island with
    thousands of distinct blocking coalitions): paying the bids blocks nothing and the core is
    convex, so the points of the segment that are in the core form one stretch ending at the
    bids. The answer is in the core and between VCG and the bids, but not revenue-minimal.
    """

    def along(step: int) -> list[int]:
        return [p + -(-(b - p) * step // _BISECTION) for p, b in zip(point, bids, strict=True)]

    low, high = -1, _BISECTION  # blocked at low (or not checked: -1), in the core at high
    while high - low > 1:
        middle = (low + high) // 2
        if blocks(along(middle)):
            low = middle
        else:
            high = middle
    return along(high)


def _options(own: Table) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The capacities at which the winner's own table improves, and its value there."""
    steps = np.flatnonzero(np.diff(own) > 0) + 1
    return steps, own[steps]


def _most_blocking(
    base: Floats,
    options: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]],
    keeps: Sequence[int],
    best: int,
) -> tuple[int, list[int]] | None:
    """The coalition worth most: max over allocations x of value(x) + Σ_{winners j outside x}
    keeps_j, with the winners outside x; None when it is worth no more than `best`.

    A multiple-choice knapsack: each winner either stays out (and keeps its surplus) or takes
    some of its own units at a cost of that surplus. An option worth no more than the keep never
    beats staying out, so it is dropped; the value alone is computed first because most points
    block nothing, and only a blocked point pays for tracking who takes part.
    """
    gains = [
        (sizes[values > keep], (values[values > keep] - keep).astype(np.float64))
        for (sizes, values), keep in zip(options, keeps, strict=True)
    ]
    capacity = len(base) - 1
    table = base.copy()
    for sizes, values in gains:
        source = table.copy() if len(sizes) > 1 else table
        for size, gain in zip(sizes.tolist(), values.tolist(), strict=True):
            if size <= capacity:
                np.maximum(table[size:], source[: capacity + 1 - size] + gain, out=table[size:])
    if round(float(table[capacity])) + sum(keeps) <= best:
        return None
    table = base
    # per taking part winner, the size it takes at each capacity (0: stays out)
    choices: dict[int, npt.NDArray[Any]] = {}
    size_type = np.int16 if capacity < np.iinfo(np.int16).max else np.int32
    for j, (sizes, values) in enumerate(gains):
        if not len(sizes):
            continue  # nothing it could take is worth its keep: it stays out
        new = table.copy()
        choice = np.zeros(capacity + 1, dtype=size_type)
        for size, gain in zip(sizes.tolist(), values.tolist(), strict=True):
            if size <= capacity:
                candidate = table[: capacity + 1 - size] + gain
                better = candidate > new[size:]
                new[size:][better] = candidate[better]
                choice[size:][better] = size
        table = new
        choices[j] = choice
    left_out: list[int] = []
    room = capacity
    for j in range(len(gains) - 1, -1, -1):
        taken = int(choices[j][room]) if j in choices else 0
        if taken:
            room -= taken
        else:
            left_out.append(j)
    return round(float(table[capacity])) + sum(keeps), sorted(left_out)


def _nearest_minimum_revenue(
    lo: Sequence[int], hi: Sequence[int], constraints: Sequence[_Constraint]
) -> list[int]:
    """The revenue-minimising point nearest to `lo` (VCG), rounded up to whole µUSD.

    Only winners named by some constraint can move off VCG (any other extra payment would only
    raise revenue), so the programs are over those alone, in USD above VCG: small numbers that
    keep the solvers' tolerances far below a µUSD.
    """
    scale = 1e-6  # µUSD -> USD
    involved = sorted({j for c in constraints for j in c.members})
    column = {j: i for i, j in enumerate(involved)}
    rows = [[column[j] for j in c.members] for c in constraints]
    bounds = np.array([(c.bound - sum(lo[j] for j in c.members)) * scale for c in constraints])
    lower = np.zeros(len(involved))
    upper = np.array([(hi[j] - lo[j]) * scale for j in involved])
    least = float(minimize(lower, upper, rows, bounds, linear=np.ones(len(involved))).sum())
    nearest = _on_least_revenue(lower, upper, rows, bounds, least)
    point = list(lo)
    for j, above in zip(involved, nearest.tolist(), strict=True):
        point[j] = lo[j] + min(hi[j] - lo[j], max(0, math.ceil(above / scale - _SNAP)))
    return point


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
