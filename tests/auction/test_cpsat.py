"""The engine at scale against an independent CP-SAT model, and the invariants that need no oracle.

Islands of 200 to 2,000 nodes and 500 to 5,000 units from the benchmark's seeded generator.
CP-SAT must prove optimality (two workers, a time limit far above what these need); the checks
compare exact integers.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bench.instances import cpsat_value, island

from burstmarket.auction import Clearing, IslandInput, clear
from burstmarket.money import PRICE_STEP

SIZES = [
    pytest.param((200, 500, 100, 1), id="200-nodes"),
    pytest.param((1_000, 2_500, 500, 2), id="1000-nodes"),
    pytest.param((2_000, 5_000, 1_000, 3), id="2000-nodes"),
]
TIME_LIMIT = 20.0


@pytest.fixture(scope="module", params=SIZES)
def cleared(request: pytest.FixtureRequest) -> tuple[IslandInput, Clearing]:
    nodes, units, clusters, seed = request.param
    instance = island(nodes, units, clusters, seed=seed)
    return instance, clear(instance)


def optimum(instance: IslandInput, without: frozenset[str] = frozenset()) -> int:
    solved = cpsat_value(instance, without=without, time_limit=TIME_LIMIT)
    assert solved.optimal, "CP-SAT did not prove optimality within its time limit"
    return solved.value


def test_value_equals_the_cpsat_optimum(cleared: tuple[IslandInput, Clearing]) -> None:
    instance, result = cleared
    g, r = instance.gpus_per_node, instance.reserve_price
    units = {u.id: u for u in instance.units}
    assert result.value == sum((units[w].price - r) * units[w].nodes * g for w in result.winners)
    assert result.value == optimum(instance)


def test_vcg_of_the_largest_winners_matches_cpsat(cleared: tuple[IslandInput, Clearing]) -> None:
    instance, result = cleared
    for name, expected in vcg_of_the_largest(instance, result, optimum).items():
        assert result.clusters[name].vcg == expected, name


def vcg_of_the_largest(
    instance: IslandInput, result: Clearing, value: Callable[[IslandInput, frozenset[str]], int]
) -> dict[str, int]:
    """The VCG payment of the three largest winners from `value`, an outside V(S, c̄):
    pay_vcg(c) = r·K_c·g + V(S, c̄) − O_c, with O_c = V(S) − b_c."""
    g, r = instance.gpus_per_node, instance.reserve_price
    units = {u.id: u for u in instance.units}
    largest = sorted(
        (c for c, held in result.clusters.items() if held.won_nodes),
        key=lambda c: (-result.clusters[c].won_nodes, c),
    )[:3]
    expected = {}
    for name in largest:
        surplus = sum(
            (units[w].price - r) * units[w].nodes * g
            for w in result.winners
            if units[w].cluster == name
        )
        others = result.value - surplus
        without = value(instance, frozenset({name}))
        expected[name] = r * result.clusters[name].won_nodes * g + without - others
    return expected


def test_ladder_rungs_sit_at_the_displaced_value(cleared: tuple[IslandInput, Clearing]) -> None:
    # a newcomer of n nodes at P gets (P − r)·n·g + V(S − n) against V(S): it must not lose
    # outright at its rung, and must not win outright one grid step below it
    instance, result = cleared
    g, r, supply = instance.gpus_per_node, instance.reserve_price, instance.nodes
    assert [(rung.nodes, rung.gpus) for rung in result.ladder] == [
        (n, n * g) for n in range(1, supply + 1)
    ]
    for n in (1, 8, 64):
        price = result.ladder[n - 1].price
        assert price >= r
        assert price % PRICE_STEP == 0
        rest = optimum(IslandInput(supply - n, g, r, instance.units))
        assert (price - r) * n * g + rest >= result.value, n
        if price > r:
            assert (price - PRICE_STEP - r) * n * g + rest <= result.value, n


def test_invariants_at_scale(cleared: tuple[IslandInput, Clearing]) -> None:
    instance, result = cleared
    g, r = instance.gpus_per_node, instance.reserve_price
    units = {u.id: u for u in instance.units}
    assert len(set(result.winners)) == len(result.winners)
    won: dict[str, list[str]] = {}
    for w in result.winners:
        assert units[w].price >= r
        won.setdefault(units[w].cluster, []).append(w)
    # gangs whole: every cluster's won nodes are exactly its winning units' sizes
    assert {c: h.won_nodes for c, h in result.clusters.items() if h.won_nodes} == {
        c: sum(units[w].nodes for w in ws) for c, ws in won.items()
    }
    assert sum(h.won_nodes for h in result.clusters.values()) <= instance.nodes
    locks: dict[str, list[tuple[int, int]]] = {}
    for p in instance.protected:
        locks.setdefault(p.cluster, []).append((p.locked_price, p.nodes))
    assert {c: h.protected_nodes for c, h in result.clusters.items() if h.protected_nodes} == {
        c: sum(nodes for _, nodes in held) for c, held in locks.items()
    }
    for name, held in result.clusters.items():
        ceilings = [(units[w].price, units[w].nodes) for w in won.get(name, [])]
        ceilings += locks.get(name, [])
        bid = sum(units[w].price * units[w].nodes * g for w in won.get(name, []))
        assert r * held.won_nodes * g <= held.vcg <= held.core <= bid, name
        assert held.payment <= sum(price * nodes * g for price, nodes in ceilings), name
        if len({price for price, _ in ceilings}) == 1:
            assert held.rate <= ceilings[0][0], name
        if all(price >= r for price, _ in locks.get(name, [])):
            assert held.rate >= r, name
    assert result.stats.clusters == len(result.clusters)
    assert result.stats.gpus == sum(h.gpus for h in result.clusters.values())
