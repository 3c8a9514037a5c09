"""One island's clearing: winners, payments, ladder and statistics (docs/market.md steps 5–10).

Pure: plain values in, plain values out, no I/O, no clock. Values are µUSD per hour over the
reserve: a unit of k nodes at price p is worth (p − r)·k·g.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from burstmarket.auction.allocation import optima
from burstmarket.auction.core import CorePayments, Winner, core_payments
from burstmarket.auction.knapsack import Item, Table, add_group, empty
from burstmarket.auction.types import Clearing, ClusterClearing, IslandInput, Rung, Stats, Unit
from burstmarket.auction.without import values_without
from burstmarket.money import PRICE_STEP, round_div


def clear(island: IslandInput) -> Clearing:
    supply, g, reserve = island.nodes, island.gpus_per_node, island.reserve_price
    bid_too_low = frozenset(u.cluster for u in island.units if u.price < reserve)
    # age order: older first, equal `since` in the order given
    bidding = sorted(
        (i for i, u in enumerate(island.units) if u.price >= reserve),
        key=lambda i: (island.units[i].since, i),
    )
    units = [island.units[i] for i in bidding]
    items: list[Item] = [(u.nodes, (u.price - reserve) * u.nodes * g) for u in units]

    found = optima(items, supply)
    full = found.full
    best = int(full[supply])
    decisions = found.decide(supply, _ladder_probes(full, supply, g))
    used = sum(u.nodes for u, taken in zip(units, decisions.chosen, strict=True) if taken)
    probe_wins = dict(decisions.probe_wins)
    # break-even exactly at the reserve with fewer than n nodes free (rare: another optimum packs
    # tighter than the preferred one) needs probes known only once `used` is: a second walk
    level = [int(c) for c in np.flatnonzero(full[:used] == best)]
    if level:
        probe_wins.update(found.decide(supply, level).probe_wins)
    ladder = _ladder(full, supply, g, reserve, supply - used, probe_wins)

    won_units = [u for u, taken in zip(units, decisions.chosen, strict=True) if taken]
    clusters, core = _payments(island, units, won_units, best)
    winner_ids = {u.id for u in won_units}
    winners = tuple(u.id for u in island.units if u.id in winner_ids)
    return Clearing(
        winners=winners,
        clusters=clusters,
        ladder=ladder,
        stats=_stats(clusters),
        value=best,
        bid_too_low=bid_too_low,
        core_rounds=core.rounds,
        core_exact=core.exact,
    )


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
    rungs = []
    for n in range(1, supply + 1):
        if n <= free:
            price = reserve
        else:
            steps, rest = divmod(int(full[supply] - full[supply - n]), n * g * PRICE_STEP)
            if rest or not probe_wins[supply - n]:
                steps += 1
            price = reserve + steps * PRICE_STEP
        rungs.append(Rung(nodes=n, gpus=n * g, price=price))
    return tuple(rungs)


def _payments(
    island: IslandInput, units: Sequence[Unit], won: Sequence[Unit], best: int
) -> tuple[dict[str, ClusterClearing], CorePayments]:
    supply, g, reserve = island.nodes, island.gpus_per_node, island.reserve_price
    groups: dict[str, list[Item]] = defaultdict(list)
    for u in units:
        groups[u.cluster].append((u.nodes, (u.price - reserve) * u.nodes * g))
    won_nodes: dict[str, int] = defaultdict(int)
    won_value: dict[str, int] = defaultdict(int)
    for u in won:
        won_nodes[u.cluster] += u.nodes
        won_value[u.cluster] += (u.price - reserve) * u.nodes * g
    protected_nodes: dict[str, int] = defaultdict(int)
    protected_cap: dict[str, int] = defaultdict(int)
    for hold in island.protected:
        protected_nodes[hold.cluster] += hold.nodes
        protected_cap[hold.cluster] += hold.locked_price * hold.nodes * g

    queries = {c: [supply] for c in won_nodes}
    for c, nodes in protected_nodes.items():
        queries[c] = [supply, supply + nodes]
    longest = supply + max(protected_nodes.values(), default=0) + 1
    # clusters never removed: their units form the base of every "without c" table and, with
    # the protected clusters that won nothing, the losers' side of every core coalition
    never_removed = [i for c, its in groups.items() if c not in queries for i in its]
    base = add_group(empty(longest), never_removed)
    without = values_without(groups, queries, base)
    protected_only = [i for c in protected_nodes if c not in won_nodes for i in groups[c]]
    losers = add_group(base[: supply + 1], protected_only)

    winners = sorted(won_nodes)
    vcg_surplus = [without[c][supply] - (best - won_value[c]) for c in winners]
    core_found = core_payments(
        [
            Winner(lo=lo, hi=won_value[c], nodes=won_nodes[c], units=groups[c])
            for c, lo in zip(winners, vcg_surplus, strict=True)
        ],
        losers,
        supply,
        best,
    )
    vcg = dict(zip(winners, vcg_surplus, strict=True))
    core = dict(zip(winners, core_found.surplus, strict=True))

    result: dict[str, ClusterClearing] = {}
    for c in sorted(set(won_nodes) | set(protected_nodes)):
        k, p = won_nodes.get(c, 0), protected_nodes.get(c, 0)
        floor = reserve * k * g
        protected = 0
        if p:
            displaced = without[c][supply + p] - without[c][supply]
            protected = min(protected_cap[c], reserve * p * g + displaced)
        result[c] = ClusterClearing(
            won_nodes=k,
            protected_nodes=p,
            gpus=(k + p) * g,
            vcg=floor + vcg.get(c, 0) if k else 0,
            core=floor + core.get(c, 0) if k else 0,
            protected=protected,
        )
    return result, core_found


def _stats(clusters: dict[str, ClusterClearing]) -> Stats:
    held = [c for c in clusters.values() if c.gpus]
    if not held:
        return Stats(None, None, None, 0, 0)
    gpus = sum(c.gpus for c in held)
    rates = [c.rate for c in held]
    vwap = round_div(sum(c.payment for c in held), gpus)
    return Stats(vwap=vwap, min=min(rates), max=max(rates), gpus=gpus, clusters=len(held))
