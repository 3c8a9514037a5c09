"""One island's clearing: winners, payments, ladder and statistics (docs/market.md steps 5–10).

Pure: plain values in, plain values out, no I/O, no clock. Values are µUSD per hour over the
reserve: a unit of k nodes at price p is worth (p − r)·k·g.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from math import isqrt
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from burstmarket.auction import kernels
from burstmarket.auction.allocation import optima
from burstmarket.auction.core import CorePayments, Winner, core_payments
from burstmarket.auction.knapsack import Table
from burstmarket.auction.receipts import Tracer
from burstmarket.auction.types import (
    Clearing,
    ClusterClearing,
    IslandInput,
    Level,
    Protected,
    Rung,
    Stats,
    Unit,
)
from burstmarket.collector import collector_paused
from burstmarket.money import PRICE_STEP, round_div

Ints = npt.NDArray[np.int64]

WORKERS = min(4, len(os.sched_getaffinity(0)))
"""Threads a clearing's payments use by default: the cores this process may run on (a few at
most: the compiled kernels and numpy's loops run without the GIL, the Python around them holds
it). The VCG's parts run side by side, and the core beside the receipts' tracing; the results
are the same on any number."""
_PARTS = 4
"""Parts the VCG's "without c" tables are split into (measured at 25,000 × 100,000: 0.51 s in
one part, 0.25 s in four on one thread, 0.23 s in six)."""
_SPREAD_FROM = 1 << 22
"""Clusters priced × nodes below which an island's payments stay on the caller's thread
(starting threads would cost more than they save)."""


def clear(island: IslandInput, *, workers: int = WORKERS) -> Clearing:
    """`workers`: threads a large island's payments may use (1: the caller's alone)."""
    with collector_paused():  # it makes no cycles: reference counts free it all
        return _clear(island, workers)


def _clear(island: IslandInput, workers: int) -> Clearing:
    a = _allocate(island)
    clusters, core = _payments(
        island, a.units, a.prices, a.sizes, a.values, a.chosen, a.best, workers
    )
    given = island.units
    under = np.flatnonzero(a.given_prices < island.reserve_price).tolist()
    return Clearing(
        winners=tuple(given[i].id for i in np.sort(a.order[a.chosen]).tolist()),
        clusters=clusters,
        ladder=a.ladder,
        stats=_stats(clusters),
        value=a.best,
        bid_too_low=frozenset(given[i].cluster for i in under),
        core_rounds=core.rounds,
        core_exact=core.exact,
    )


def price_ladder(island: IslandInput) -> tuple[Rung, ...]:
    """The ladder alone (step 9), with no payments: the ladders price the auction the next
    tick would run with it (market/ladder.py)."""
    return _allocate(island).ladder


@dataclass(frozen=True, slots=True)
class _Allocation:
    """Winner determination and the ladder (`_allocate`)."""

    given_prices: Ints
    """Every unit's price, in the order given."""
    order: Ints
    """The bidding units (at or above the reserve) in age order, as indices of those given."""
    units: list[Unit]
    prices: Ints
    sizes: Ints
    values: Ints
    """The bidding units in age order, their prices, sizes and values above the reserve."""
    chosen: npt.NDArray[np.bool_]
    """Which the preferred optimum holds."""
    best: int
    """Its value."""
    ladder: tuple[Rung, ...]


def _allocate(island: IslandInput) -> _Allocation:
    supply, g, reserve = island.nodes, island.gpus_per_node, island.reserve_price
    # age order: older first, equal `since` in the order given (a stable sort)
    given = island.units
    given_prices = np.fromiter((u.price for u in given), dtype=np.int64, count=len(given))
    bidding = np.flatnonzero(given_prices >= reserve)
    ages = [given[i].since for i in bidding.tolist()]
    since = np.array(ages)
    if since.dtype.kind == "i":  # the market's ages (ns): sorted with no Python key per unit
        bidding = bidding[np.argsort(since, kind="stable")]
    else:  # a float among them: Python compares exactly where float64 could round a large int
        bidding = bidding[sorted(range(len(ages)), key=ages.__getitem__)]
    units = [given[i] for i in bidding.tolist()]
    sizes = np.fromiter((u.nodes for u in units), dtype=np.int64, count=len(units))
    prices = given_prices[bidding]
    values = (prices - reserve) * sizes * g

    found = optima(sizes, values, supply)
    full = found.full
    best = int(full[supply])
    decisions = found.decide(supply, _ladder_probes(full, supply, g))
    chosen = decisions.chosen
    used = int(sizes[chosen].sum())
    probe_wins = dict(decisions.probe_wins)
    # break-even exactly at the reserve with fewer than n nodes free (rare: another optimum packs
    # tighter than the preferred one) needs probes known only once `used` is: a second walk
    level = [int(c) for c in np.flatnonzero(full[:used] == best)]
    if level:
        probe_wins.update(found.decide(supply, level).probe_wins)
    ladder = _ladder(full, supply, g, reserve, supply - used, probe_wins)
    return _Allocation(given_prices, bidding, units, prices, sizes, values, chosen, best, ladder)


def _ladder_probes(full: Table, supply: int, g: int) -> list[int]:
    """Capacities S − n where a newcomer of n nodes breaks even exactly on the price grid above
    the reserve."""
    n = np.arange(1, supply + 1)
    diff = full[supply] - full[supply - n]
    exact = (diff % (n * g * PRICE_STEP) == 0) & (diff > 0)
    return [int(c) for c in (supply - n[exact])]


def _ladder(
    full: Table, supply: int, g: int, reserve: int, free: int, probe_wins: dict[int, bool]
) -> tuple[Rung, ...]:
    n = np.arange(1, supply + 1)
    steps, rest = np.divmod(full[supply] - full[supply - n], n * g * PRICE_STEP)
    # one step above the break-even unless it is on the grid and the newcomer wins the tie there
    lost = np.array([not probe_wins.get(supply - k, False) for k in n[rest == 0].tolist()])
    above = rest != 0
    above[rest == 0] = lost
    prices = np.where(n <= free, reserve, reserve + (steps + above) * PRICE_STEP)
    return tuple(map(Rung, n.tolist(), (n * g).tolist(), prices.tolist()))


def _payments(
    island: IslandInput,
    units: Sequence[Unit],
    prices: Ints,
    sizes: Ints,
    values: Ints,
    chosen: npt.NDArray[np.bool_],
    best: int,
    workers: int,
) -> tuple[dict[str, ClusterClearing], CorePayments]:
    supply, g, reserve = island.nodes, island.gpus_per_node, island.reserve_price
    owners = [u.cluster for u in units]
    names = sorted({*owners, *(hold.cluster for hold in island.protected)})
    code = {name: k for k, name in enumerate(names)}
    count = len(names)
    cluster = np.fromiter(map(code.__getitem__, owners), dtype=np.int64, count=len(owners))
    won_nodes = np.zeros(count, dtype=np.int64)
    won_value = np.zeros(count, dtype=np.int64)
    np.add.at(won_nodes, cluster[chosen], sizes[chosen])
    np.add.at(won_value, cluster[chosen], values[chosen])
    protected_nodes = np.zeros(count, dtype=np.int64)
    protected_cap = np.zeros(count, dtype=np.int64)
    for hold in island.protected:
        protected_nodes[code[hold.cluster]] += hold.nodes
        protected_cap[code[hold.cluster]] += hold.locked_price * hold.nodes * g

    # every cluster's units as knapsack items, equal ones bundled
    order = np.lexsort((values, sizes, cluster))
    item_sizes, item_values, starts = kernels.bundle(
        cluster[order], sizes[order], values[order], count
    )
    won = won_nodes > 0
    removed = won | (protected_nodes > 0)  # the clusters whose V(·, c̄) is asked for
    queried = np.flatnonzero(removed)
    spread = _Spread(workers if len(queried) * supply >= _SPREAD_FROM else 1)
    without, losers = _without(
        supply, item_sizes, item_values, starts, removed, won, protected_nodes, spread
    )
    row = {int(c): k for k, c in enumerate(queried.tolist())}

    winners = np.flatnonzero(won).tolist()
    vcg_surplus = [int(without[row[c], 0]) - (best - int(won_value[c])) for c in winners]
    # the core on one worker while the others trace what the VCG and protected payments cite
    core_running = spread.submit(
        core_payments,
        [
            Winner(
                lo=lo,
                hi=int(won_value[c]),
                nodes=int(won_nodes[c]),
                sizes=item_sizes[starts[c] : starts[c + 1]],
                values=item_values[starts[c] : starts[c + 1]],
            )
            for c, lo in zip(winners, vcg_surplus, strict=True)
        ],
        losers,
        supply,
        best,
        spread.submit if spread.workers > 1 else None,  # the main thread traces meanwhile
    )
    vcg = dict(zip(winners, vcg_surplus, strict=True))

    # what the receipts cite (receipts.py): the units behind each payment
    free = supply - int(sizes[chosen].sum())
    reach = free + int((won_nodes + protected_nodes).max(initial=0))
    tracer = Tracer(prices, sizes, values, cluster, chosen, won_nodes, won_value, supply, reach)
    none = np.empty(0, dtype=np.int64)

    def traced(c: int) -> dict[str, Any]:
        """Cluster c's payments but the core's, and the demand its VCG and protected payments
        cite: the fields of its `ClusterClearing`, made once the core is found (below)."""
        k, p = int(won_nodes[c]), int(protected_nodes[c])
        floor = reserve * k * g
        entering, leaving = none, none
        if k:
            entering, leaving = tracer.displaced(c, int(without[row[c], 0]))
        protected, capped = 0, False
        protected_displaced: tuple[Level, ...] = ()
        if p:
            displaced = int(without[row[c], 1] - without[row[c], 0])
            protected = min(int(protected_cap[c]), reserve * p * g + displaced)
            capped = int(protected_cap[c]) < reserve * p * g + displaced
            protected_displaced = tracer.levels(
                *tracer.protected(
                    c, entering, leaving, p, int(without[row[c], 0]), int(without[row[c], 1])
                )
            )
        return {
            "won_nodes": k,
            "protected_nodes": p,
            "gpus": (k + p) * g,
            "vcg": floor + vcg[c] if k else 0,
            "protected": protected,
            "displaced": tracer.levels(entering, leaving),
            "protected_displaced": protected_displaced,
            "capped": capped,
        }

    found = {c: traced(c) for c in queried.tolist()}
    core_found = core_running.result()
    spread.close()
    core = dict(zip(winners, core_found.surplus, strict=True))
    # the coalition behind each core payment that one binds, each distinct one traced once
    left_out = {
        c: tuple(sorted(winners[t] for t in binding.tolist()))
        for c, binding in zip(winners, core_found.binding, strict=True)
        if binding is not None
    }
    paid = {others: sum(core[t] for t in others) for others in dict.fromkeys(left_out.values())}
    coalitions = {others: tracer.coalition(others, paid[others]) for others in paid}
    result: dict[str, ClusterClearing] = {}
    for c, fields in found.items():
        k = fields["won_nodes"]
        result[names[c]] = ClusterClearing(
            **fields,
            core=reserve * k * g + core[c] if k else 0,
            coalition=coalitions[left_out[c]] if c in left_out else None,
        )
    return result, core_found


T = TypeVar("T")
R = TypeVar("R")


class _Spread:
    """Independent pieces of one clearing on up to `workers` threads (1: on the caller's). A
    map keeps its items' order, so what comes back does not depend on the threads."""

    def __init__(self, workers: int) -> None:
        self._pool = ThreadPoolExecutor(workers) if workers > 1 else None
        self.workers = max(1, workers)

    def submit(self, task: Callable[..., R], *args: Any) -> Future[R]:
        if self._pool is not None:
            return self._pool.submit(task, *args)
        done: Future[R] = Future()
        done.set_result(task(*args))
        return done

    def map(self, task: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """`task` of every item, in the items' order."""
        if self._pool is None:
            return [task(item) for item in items]
        return list(self._pool.map(task, items))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()


def _without(
    supply: int,
    sizes: Ints,
    values: Ints,
    starts: Ints,
    removed: npt.NDArray[np.bool_],
    won: npt.NDArray[np.bool_],
    protected: Ints,
    spread: _Spread,
) -> tuple[Ints, Table]:
    """V(S, c̄) for every removed cluster c, and V(S + P_c, c̄) for those holding P_c protected
    nodes (a row per removed cluster, in code order: [S, S + P_c or −1]); and the losers' table
    over S (every unit of the clusters that won nothing), the core's coalitions' other side."""
    owner = np.repeat(np.arange(len(removed)), np.diff(starts))
    # clusters never removed: their units form the base of every "without c" table and, with
    # the protected clusters that won nothing, the losers' side of every core coalition
    longest = supply + int(protected.max(initial=0)) + 1
    base = np.zeros(longest, dtype=np.int64)
    kept = ~removed[owner]
    kernels.add_items(base, sizes[kept], values[kept])
    # the removed clusters, those that could use the most nodes first (see values_without)
    queried = np.flatnonzero(removed)
    demand = np.zeros(len(removed), dtype=np.int64)
    np.add.at(demand, owner, sizes)
    queried = queried[np.argsort(-demand[queried], kind="stable")]
    at = np.stack([np.full(len(queried), supply), supply + protected[queried]], axis=1)
    at[protected[queried] == 0, 1] = -1

    def part_without(part: Ints) -> Ints:
        """The rows of the removed clusters `queried[part]`, over a base holding every other
        removed cluster's items too (on one worker: the part is all of them)."""
        groups = queried[part]
        table = base
        if len(groups) < len(queried):
            ours = np.zeros(len(removed), dtype=np.bool_)
            ours[groups] = True
            table = base.copy()
            theirs = removed[owner] & ~ours[owner]
            kernels.add_items(table, sizes[theirs], values[theirs])
        pick = np.concatenate([np.arange(starts[c], starts[c + 1]) for c in groups] + [[]])
        pick = pick.astype(np.int64)
        return kernels.values_without(
            table,
            np.concatenate([[0], np.cumsum(np.diff(starts)[groups])]),
            sizes[pick],
            values[pick],
            at[part],
            suffix_block(len(groups)),
        )

    # the clusters dealt out in demand order into parts, each over a base holding the others:
    # a part's tables reach only as far as its own clusters' demand, so a few parts cost less
    # than one even on one thread (an extra pass over the other parts' items each)
    count = max(spread.workers, _PARTS) if len(queried) >= 4 * _PARTS else 1
    parts = [np.arange(k, len(queried), count) for k in range(count)]
    found = np.empty_like(at)
    for part, rows in zip(parts, spread.map(part_without, parts), strict=True):
        found[part] = rows
    without = found[np.argsort(queried)]  # back to code order
    losers = base[: supply + 1].copy()
    beside = ~won[owner] & removed[owner]  # protected clusters that won nothing
    kernels.add_items(losers, sizes[beside], values[beside])
    return without, losers


def suffix_block(groups: int) -> int:
    """Suffix tables kept every this many groups: every √n-th (one more pass over the items,
    memory O(√n·length)). Keeping every one is no faster where it fits in memory: at 25,000
    nodes it was up to three times slower (filling n tables costs more than the extra pass)."""
    return max(1, isqrt(groups))


def with_fixed(clearing: Clearing, fixed: Sequence[Protected], gpus_per_node: int) -> Clearing:
    """`clearing` with nodes held at a fixed price besides it: never contestable and never
    displacing anyone, each pays exactly its `locked_price` (a block's nodes stepping down under
    their window, docs/market.md "Base load"). They count as protected nodes of their cluster,
    in its rate and in the statistics, and their lock caps the protected part of its receipt."""
    if not fixed:
        return clearing
    clusters = dict(clearing.clusters)
    for hold in fixed:
        held = clusters.get(hold.cluster, ClusterClearing(0, 0, 0, 0, 0, 0))
        clusters[hold.cluster] = replace(
            held,
            protected_nodes=held.protected_nodes + hold.nodes,
            gpus=held.gpus + hold.nodes * gpus_per_node,
            protected=held.protected + hold.locked_price * hold.nodes * gpus_per_node,
            capped=True,
        )
    clusters = dict(sorted(clusters.items()))
    return replace(clearing, clusters=clusters, stats=_stats(clusters))


def _stats(clusters: dict[str, ClusterClearing]) -> Stats:
    held = [c for c in clusters.values() if c.gpus]
    if not held:
        return Stats(None, None, None, 0, 0)
    gpus = sum(c.gpus for c in held)
    rates = [c.rate for c in held]
    vwap = round_div(sum(c.payment for c in held), gpus)
    return Stats(vwap=vwap, min=min(rates), max=max(rates), gpus=gpus, clusters=len(held))
