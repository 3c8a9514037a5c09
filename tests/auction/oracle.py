"""A brute-force reference auction, from docs/market.md alone, for islands of at most 8 units.

Nothing here shares code with the engine (only its input types and the price grid): winner
determination and every V(·) enumerate all subsets of units; the core constraints enumerate all
subsets of winning clusters; the minimum core revenue is an exact rational simplex whose answer
is re-checked by an LP duality certificate; the point nearest VCG comes from an exact active-set
method and is accepted only if it satisfies the KKT conditions exactly (the problem is strictly
convex, so that point is the unique optimum), with a plain enumeration of active sets behind it;
the ladder re-runs the whole auction with a newcomer at successive grid prices.

Payments inside are *surpluses* over the reserve (payment − r·K·g), the form in which the core
constraints are simplest; `Expected` adds the reserve back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

from burstmarket.auction.types import IslandInput, Unit
from burstmarket.money import PRICE_STEP

MAX_UNITS = 8
NEWCOMER = "\x00newcomer"  # a unit id and cluster no instance uses


class Brute:
    """Every subset of the auction's units, with its nodes, value over reserve and clusters."""

    def __init__(self, units: Sequence[Unit], reserve: int, gpus_per_node: int) -> None:
        # docs/market.md step 5: a unit priced under the reserve is not in the auction at all
        self.indexed = [(i, u) for i, u in enumerate(units) if u.price >= reserve]
        if len(self.indexed) > MAX_UNITS + 1:  # + 1: the ladder's newcomer
            raise ValueError("the oracle enumerates subsets: at most 8 units")
        clusters = sorted({u.cluster for _, u in self.indexed})
        self.cluster_bit = {c: 1 << k for k, c in enumerate(clusters)}
        self.all_clusters = (1 << len(clusters)) - 1
        count = len(self.indexed)
        self.nodes = [0] * (1 << count)
        self.value = [0] * (1 << count)
        self.clusters = [0] * (1 << count)
        for mask in range(1, 1 << count):
            low = (mask & -mask).bit_length() - 1
            rest = mask & (mask - 1)
            unit = self.indexed[low][1]
            self.nodes[mask] = self.nodes[rest] + unit.nodes
            self.value[mask] = (
                self.value[rest] + (unit.price - reserve) * unit.nodes * gpus_per_node
            )
            self.clusters[mask] = self.clusters[rest] | self.cluster_bit[unit.cluster]
        # age: smaller `since` is older; equal `since` -> the unit given first
        self.age_order = sorted(
            range(count), key=lambda k: (self.indexed[k][1].since, self.indexed[k][0])
        )

    def clusters_mask(self, names: frozenset[str]) -> int:
        return sum(self.cluster_bit.get(c, 0) for c in names)

    def best(self, capacity: int, without: frozenset[str] = frozenset()) -> int:
        """V(capacity nodes, demand of `without` removed): the best value over every subset."""
        banned = self.clusters_mask(without)
        return max(
            (
                self.value[m]
                for m in range(len(self.value))
                if self.nodes[m] <= capacity and not self.clusters[m] & banned
            ),
            default=0,
        )

    def preferred(self, capacity: int) -> list[Unit]:
        """The optimal subset holding the oldest unit on which optimal subsets differ."""
        optimum = self.best(capacity)
        optimal = [
            m
            for m in range(len(self.value))
            if self.nodes[m] <= capacity and self.value[m] == optimum
        ]
        chosen = max(optimal, key=lambda m: [bool(m >> k & 1) for k in self.age_order])
        return [u for k, (_, u) in enumerate(self.indexed) if chosen >> k & 1]


@dataclass(frozen=True)
class Expected:
    """What docs/market.md says one island's tick produces (µUSD per hour, reserve included)."""

    value: int
    winners: tuple[str, ...]
    """Winning unit ids in input order."""
    won_nodes: dict[str, int]
    bid: dict[str, int]
    """Σ p·k·g over the cluster's winning units: what it offered for what it won."""
    reserve_part: dict[str, int]
    """r·K_c·g: the reserve share of a winning cluster's payment."""
    vcg: dict[str, int]
    coalitions: tuple[tuple[frozenset[str], int], ...]
    """(T, β_T): Σ_{j∈T} (pay_j − r·K_j·g) ≥ β_T keeps the seller and everyone but T from
    blocking, for every non-empty set T of winning clusters."""
    min_core_revenue: Fraction
    core: dict[str, Fraction]
    protected: dict[str, int]
    protected_nodes: dict[str, int]
    bid_too_low: frozenset[str]

    def blocking(self, core: dict[str, int]) -> list[frozenset[str]]:
        """Coalitions T whose constraint the integer payments `core` violate (exact)."""
        return [
            t
            for t, beta in self.coalitions
            if sum(core[c] - self.reserve_part[c] for c in t) < beta
        ]


def expected(island: IslandInput) -> Expected:
    """The clearing of a small island by enumeration (no ladder: see `ladder`)."""
    g, r = island.gpus_per_node, island.reserve_price
    brute = Brute(island.units, r, g)
    supply = island.nodes
    won = brute.preferred(supply)
    won_ids = {u.id for u in won}
    value = sum((u.price - r) * u.nodes * g for u in won)
    assert value == brute.best(supply)

    won_nodes: dict[str, int] = {}
    bid: dict[str, int] = {}
    surplus_bid: dict[str, int] = {}  # b_c: winning value over reserve
    for u in won:
        won_nodes[u.cluster] = won_nodes.get(u.cluster, 0) + u.nodes
        bid[u.cluster] = bid.get(u.cluster, 0) + u.price * u.nodes * g
        surplus_bid[u.cluster] = surplus_bid.get(u.cluster, 0) + (u.price - r) * u.nodes * g
    winners = sorted(won_nodes)
    reserve_part = {c: r * won_nodes[c] * g for c in winners}

    # VCG: V(S, c̄) − O_c with O_c = V(S) − b_c, the others' value in the chosen allocation
    vcg_surplus = {
        c: brute.best(supply, frozenset({c})) - (value - surplus_bid[c]) for c in winners
    }
    coalitions = []
    for size in range(1, len(winners) + 1):
        for members in combinations(winners, size):
            t = frozenset(members)
            beta = brute.best(supply, t) - value + sum(surplus_bid[c] for c in t)
            coalitions.append((t, beta))

    min_surplus, core_surplus = nearest_core(winners, vcg_surplus, surplus_bid, coalitions)

    protected_nodes: dict[str, int] = {}
    cap: dict[str, int] = {}
    for p in island.protected:
        protected_nodes[p.cluster] = protected_nodes.get(p.cluster, 0) + p.nodes
        cap[p.cluster] = cap.get(p.cluster, 0) + p.locked_price * p.nodes * g
    protected = {}
    for c, held in protected_nodes.items():
        without = frozenset({c})
        displaced = brute.best(supply + held, without) - brute.best(supply, without)
        protected[c] = min(cap[c], r * held * g + displaced)

    return Expected(
        value=value,
        winners=tuple(u.id for u in island.units if u.id in won_ids),
        won_nodes=won_nodes,
        bid=bid,
        reserve_part=reserve_part,
        vcg={c: reserve_part[c] + vcg_surplus[c] for c in winners},
        coalitions=tuple(coalitions),
        min_core_revenue=sum(reserve_part.values()) + min_surplus,
        core={c: reserve_part[c] + core_surplus[c] for c in winners},
        protected=protected,
        protected_nodes=protected_nodes,
        bid_too_low=frozenset(u.cluster for u in island.units if u.price < r),
    )


# --- the ladder: re-run the auction with a new youngest atomic unit ------------------------------


def wins_in_full(island: IslandInput, nodes: int, price: int) -> bool:
    """Would a new atomic unit of `nodes` at `price`, younger than all others, be granted?"""
    youngest = max((u.since for u in island.units), default=0) + 1
    newcomer = Unit(id=NEWCOMER, cluster=NEWCOMER, nodes=nodes, price=price, since=youngest)
    brute = Brute((*island.units, newcomer), island.reserve_price, island.gpus_per_node)
    return any(u.id == NEWCOMER for u in brute.preferred(island.nodes))


def price_to_win(island: IslandInput, nodes: int) -> int:
    """The lowest grid price at which `wins_in_full` holds, by scanning grid prices."""
    r, g = island.reserve_price, island.gpus_per_node
    if wins_in_full(island, nodes, r):
        return r
    # start near the price docs/market.md predicts; the scan alone decides the answer: winning only
    # gets easier as the price rises, so the first winning price above a losing one is lowest
    brute = Brute(island.units, r, g)
    displaced = brute.best(island.nodes) - brute.best(island.nodes - nodes)
    steps = -(-displaced // (nodes * g * PRICE_STEP))
    price = max(r, r + (steps - 1) * PRICE_STEP)
    while price > r and wins_in_full(island, nodes, price):
        price -= PRICE_STEP
    while not wins_in_full(island, nodes, price):
        price += PRICE_STEP
    return price


def ladder(island: IslandInput) -> list[tuple[int, int, int]]:
    """(nodes, gpus, price) for n = 1 … S."""
    g = island.gpus_per_node
    return [(n, n * g, price_to_win(island, n)) for n in range(1, island.nodes + 1)]


# --- exact linear algebra, LP and QP over the rationals ------------------------------------------

Vector = list[Fraction]


def solve(rows: Sequence[Sequence[Fraction | int]], rhs: Sequence[Fraction | int]) -> Vector | None:
    """x with rows·x = rhs for a square system, or None if it is singular (exact Gauss-Jordan)."""
    n = len(rows)
    a = [[Fraction(x) for x in row] + [Fraction(b)] for row, b in zip(rows, rhs, strict=True)]
    for col in range(n):
        pivot = next((i for i in range(col, n) if a[i][col] != 0), None)
        if pivot is None:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for i in range(n):
            if i != col and a[i][col] != 0:
                f = a[i][col] / a[col][col]
                a[i] = [x - f * y for x, y in zip(a[i], a[col], strict=True)]
    return [a[i][n] / a[i][i] for i in range(n)]


def dot(a: Sequence[Fraction | int], b: Sequence[Fraction | int]) -> Fraction:
    return Fraction(sum(x * y for x, y in zip(a, b, strict=True)))


def nearest_core(
    winners: list[str],
    vcg: dict[str, int],
    bid: dict[str, int],
    coalitions: list[tuple[frozenset[str], int]],
) -> tuple[Fraction, dict[str, Fraction]]:
    """Minimum core revenue, and the minimum-revenue core point nearest VCG (surpluses).

    In δ = payment − VCG the core is {δ ≥ 0, δ ≤ bid − VCG, Σ_{j∈T} δ_j ≥ γ_T} with
    γ_T = β_T − Σ_{j∈T} vcg_j (the single-cluster constraints are exactly δ_j ≥ 0).
    """
    n = len(winners)
    if n == 0:
        return Fraction(0), {}
    slack = [bid[c] - vcg[c] for c in winners]
    assert all(s >= 0 for s in slack), "VCG above a bid"
    rows: list[tuple[list[int], int]] = []  # a·δ ≥ c
    for t, beta in coalitions:
        gamma = beta - sum(vcg[c] for c in t)
        if len(t) > 1 and gamma > 0:  # γ ≤ 0 is implied by δ ≥ 0
            rows.append(([int(c in t) for c in winners], gamma))
    rows += [([int(k == j) for k in range(n)], 0) for j in range(n)]
    rows += [([-int(k == j) for k in range(n)], -slack[j]) for j in range(n)]

    start = min_sum(rows, n)
    delta = nearest_on_face(rows, n, start)
    return (
        sum(vcg.values()) + sum(start),
        {c: vcg[c] + delta[j] for j, c in enumerate(winners)},
    )


def min_sum(rows: list[tuple[list[int], int]], n: int) -> Vector:
    """A δ of least Σδ subject to a·δ ≥ c for every row, by the simplex method on the dual.

    The dual, max Σ c_i y_i subject to Σ_i y_i a_i ≤ 1 and y ≥ 0, starts feasible at y = 0, so
    no phase one is needed; Bland's rule prevents cycling. The answer is then checked by a
    duality certificate (δ feasible, y feasible, equal objectives), so it does not rest on the
    simplex code being right.
    """
    cols = [list(a) for a, _ in rows] + [[int(k == j) for k in range(n)] for j in range(n)]
    cost = [Fraction(c) for _, c in rows] + [Fraction(0)] * n
    basis = list(range(len(rows), len(rows) + n))  # the slacks
    ones = [Fraction(1)] * n
    for _ in range(10_000):
        b = [[cols[j][i] for j in basis] for i in range(n)]
        bt = [[cols[j][i] for i in range(n)] for j in basis]
        x_b = solve(b, ones)
        duals = solve(bt, [cost[j] for j in basis])
        assert x_b is not None
        assert duals is not None
        entering = next((j for j in range(len(cols)) if cost[j] - dot(duals, cols[j]) > 0), None)
        if entering is None:
            break
        d = solve(b, cols[entering])
        assert d is not None
        ratios = [(x_b[i] / d[i], basis[i], i) for i in range(n) if d[i] > 0]
        assert ratios, "the minimum core revenue LP is bounded (δ ≥ 0)"
        _, _, leaving = min(ratios)
        basis[leaving] = entering
    else:
        raise AssertionError("simplex did not terminate")

    y = [Fraction(0)] * len(cols)
    for i, j in enumerate(basis):
        y[j] = x_b[i]
    delta = duals
    assert all(v >= 0 for v in y)
    assert all(dot(y, [col[i] for col in cols]) <= 1 for i in range(n))
    assert all(dot(a, delta) >= c for a, c in rows)
    assert all(v >= 0 for v in delta)
    assert sum(delta) == dot(cost, y), "LP certificate: objectives differ"
    return delta


Rows = list[tuple[list[int], int]]


def nearest_on_face(rows: Rows, n: int, start: Vector) -> Vector:
    """argmin |δ|² subject to Σδ = Σ start and a·δ ≥ c for every row, from the feasible `start`.

    A primal active-set method (Nocedal & Wright, Algorithm 16.3) in exact arithmetic. Its answer
    is accepted only when `is_optimum` confirms the KKT conditions exactly, which for this
    strictly convex problem identify the unique optimum. Should it stall on a degenerate corner,
    the plain search `enumerate_active_sets` decides instead.
    """
    total = sum(start, Fraction(0))
    delta = list(start)
    working: list[int] = []  # rows held tight, always independent together with Σδ = total
    for _ in range(500):
        projected = project(rows, n, total, working, with_equality=True)
        assert projected is not None, "the working set stays linearly independent"
        target, multipliers = projected
        step = [t - d for t, d in zip(target, delta, strict=True)]
        if not any(step):
            negative = [(m, i) for m, i in zip(multipliers[1:], working, strict=True) if m < 0]
            if not negative:
                if is_optimum(rows, total, target, multipliers, with_equality=True):
                    return target
                break
            working.remove(min(negative)[1])
            continue
        length, blocking = Fraction(1), None
        for i, (a, c) in enumerate(rows):
            along = dot(a, step)
            if i not in working and along < 0 and (c - dot(a, delta)) / along < length:
                length, blocking = (c - dot(a, delta)) / along, i
        delta = [d + length * x for d, x in zip(delta, step, strict=True)]
        if blocking is not None:
            working.append(blocking)
    return enumerate_active_sets(rows, n, total)


def project(
    rows: Rows, n: int, total: Fraction, active: Sequence[int], *, with_equality: bool
) -> tuple[Vector, Vector] | None:
    """The least-norm δ with the `active` rows (and Σδ = total) tight, with its multipliers
    (the equality's first): δ = Σ m_k a_k. None if those rows are linearly dependent."""
    system = [rows[i][0] for i in active]
    rhs: list[Fraction | int] = [rows[i][1] for i in active]
    if with_equality:
        system = [[1] * n, *system]
        rhs = [total, *rhs]
    multipliers = solve([[dot(a, b) for b in system] for a in system], rhs)
    if multipliers is None:
        return None
    delta = [
        sum((m * a[k] for m, a in zip(multipliers, system, strict=True)), Fraction(0))
        for k in range(n)
    ]
    return delta, multipliers


def is_optimum(
    rows: Rows, total: Fraction, delta: Vector, multipliers: Vector, *, with_equality: bool
) -> bool:
    """KKT, exactly, for a `project` result: multipliers of inequality rows ≥ 0 (stationarity
    and tightness of the active rows hold by construction), Σδ = total, every row satisfied."""
    inequalities = multipliers[1:] if with_equality else multipliers
    return (
        all(m >= 0 for m in inequalities)
        and sum(delta) == total
        and all(dot(a, delta) >= c for a, c in rows)
    )


def enumerate_active_sets(rows: Rows, n: int, total: Fraction) -> Vector:
    """The same optimum by brute force: some linearly independent set of tight rows carries the
    KKT multipliers (Carathéodory), so trying every such set by size finds it."""
    for size in range(n + 1):
        for active in combinations(range(len(rows)), size):
            for with_equality in (True, False):
                projected = project(rows, n, total, active, with_equality=with_equality)
                if projected is not None and is_optimum(
                    rows, total, *projected, with_equality=with_equality
                ):
                    return projected[0]
    raise AssertionError("no KKT point: the minimum-revenue core face is empty")
