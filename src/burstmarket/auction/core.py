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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from burstmarket.auction.knapsack import Table
from burstmarket.auction.qp import solve

Floats = npt.NDArray[np.float64]

_SNAP = 1e-3  # µUSD: a solver value this close above a whole µUSD is that µUSD
_MAX_ROUNDS = 500


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
    lo = np.array([w.lo for w in winners], dtype=np.float64)
    hi = np.array([w.hi for w in winners], dtype=np.float64)
    bids = [w.hi for w in winners]
    options = [_options(w.own) for w in winners]
    base = losers[: capacity + 1].astype(np.float64)
    constraints: list[_Constraint] = []
    point = [w.lo for w in winners]
    for _ in range(_MAX_ROUNDS):
        blocking = _most_blocking(base, options, [b - p for b, p in zip(bids, point, strict=True)])
        coalition_value, left_out = blocking
        if coalition_value <= best:
            return point
        # value(x) − V(S) + Σ_T bid_j, with value(x) = coalition_value − Σ_T (bid_j − p_j)
        bound = coalition_value - best + sum(point[j] for j in left_out)
        constraints.append(_Constraint(tuple(left_out), bound))
        point = _nearest_minimum_revenue(lo, hi, constraints)
    raise RuntimeError("core constraint generation did not converge")  # a bug, never input


def _options(own: Table) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The capacities at which the winner's own table improves, and its value there."""
    steps = np.flatnonzero(np.diff(own) > 0) + 1
    return steps, own[steps]


def _most_blocking(
    base: Floats,
    options: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]],
    keeps: Sequence[int],
) -> tuple[int, list[int]]:
    """max over allocations x of value(x) + Σ_{winners j outside x} keeps_j, and who is outside.

    A multiple-choice knapsack: each winner either stays out (and keeps its surplus) or takes
    some of its own units at a cost of that surplus.
    """
    capacity = len(base) - 1
    table = base
    choices: list[npt.NDArray[np.int32]] = []
    for (sizes, values), keep in zip(options, keeps, strict=True):
        new = table.copy()
        choice = np.zeros(capacity + 1, dtype=np.int32)
        for size, value in zip(sizes.tolist(), values.tolist(), strict=True):
            if size > capacity:
                break
            candidate = table[: capacity + 1 - size] + float(value - keep)
            better = candidate > new[size:]
            new[size:][better] = candidate[better]
            choice[size:][better] = size
        table = new
        choices.append(choice)
    left_out: list[int] = []
    room = capacity
    for j in range(len(options) - 1, -1, -1):
        taken = int(choices[j][room])
        if taken:
            room -= taken
        else:
            left_out.append(j)
    total = float(table[capacity]) + sum(keeps[j] for j in left_out)
    return round(total), sorted(left_out)


def _nearest_minimum_revenue(
    lo: Floats, hi: Floats, constraints: Sequence[_Constraint]
) -> list[int]:
    """The revenue-minimising point nearest to `lo` (VCG), rounded up to whole µUSD."""
    scale = 1e-6  # µUSD -> USD for the solver
    rows = [c.members for c in constraints]
    bounds = [c.bound * scale for c in constraints]
    lp = solve(lo * scale, hi * scale, rows, bounds, linear=np.ones(len(lo)))
    revenue = float(lp.sum())
    qp = solve(
        lo * scale,
        hi * scale,
        rows,
        bounds,
        linear=-2 * lo * scale,
        quadratic=True,
        revenue_at_most=revenue,
    )
    point = [
        min(int(h), max(int(low), math.ceil(x / scale - _SNAP)))
        for x, low, h in zip(qp.tolist(), lo.tolist(), hi.tolist(), strict=True)
    ]
    return point
