"""Receipts on large islands: the band the traces start from, against tracing the whole supply,
and the largest island there is (25,000 nodes of 8 GPUs, 100,000 units) cleared exactly.

The knapsack optimum at the largest size comes from a plain dynamic program over every unit
(numpy, one vector step per unit), sharing no code with the engine; CP-SAT cannot prove an
optimum of that size in a test's time. The core there is checked by the engine's own
certificate (its exact separation over every capacity found no blocking coalition, and the
point meets every constraint found), as the independent reference of test_core_exact.py works
on 300-node islands only.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from bench.instances import kubernetes_heavy, vm_heavy

from burstmarket.auction import Clearing, IslandInput, clear, receipts
from tests.auction.test_cpsat import vcg_of_the_largest
from tests.auction.test_properties import worth


def figures(island: IslandInput, result: Clearing) -> dict[str, tuple[int, int, int | None]]:
    """Per cluster, what its receipt's demand is worth: displaced, protected, coalition."""
    r, g = island.reserve_price, island.gpus_per_node
    return {
        name: (
            worth(held.displaced, r, g),
            worth(held.protected_displaced, r, g),
            None if held.coalition is None else held.coalition.value,
        )
        for name, held in result.clusters.items()
    }


@pytest.mark.parametrize(
    ("family", "seed"), [(kubernetes_heavy, 6), (vm_heavy, 5)], ids=["kubernetes", "vm"]
)
def test_a_band_of_no_nodes_traces_the_whole_supply_to_the_same_figures(
    family: object, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The band only spares work: with none, every trace the first check misses is made over
    the whole supply, and each receipt's demand is worth the same; the narrow band tried before
    the wide one changes no unit of any receipt. On these islands (gangs
    that move other winners, cores above VCG) the band spares most of those traces."""
    island = family(300, 1_000, 150, seed=seed)  # type: ignore[operator]
    traced = 0
    whole = receipts.Tracer._mask

    def counted(self: receipts.Tracer, *args: object) -> object:
        nonlocal traced
        traced += 1
        return whole(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(receipts.Tracer, "_mask", counted)
    banded = clear(island)
    with_band = traced
    # the narrow band first spares work only: the wide band alone finds every same unit
    monkeypatch.setattr(receipts, "_BANDS", receipts._BANDS[-1:])
    assert clear(island) == banded
    traced = 0
    monkeypatch.setattr(receipts, "_BANDS", (0,))
    unbanded = clear(island)
    assert figures(island, banded) == figures(island, unbanded)
    assert any(held.coalition is not None for held in banded.clusters.values())
    assert with_band < traced


def knapsack_optimum(island: IslandInput) -> int:
    """V(S) by a textbook 0/1 knapsack over every bidding unit."""
    g, r, supply = island.gpus_per_node, island.reserve_price, island.nodes
    table = np.zeros(supply + 1, dtype=np.int64)
    for u in island.units:
        if r <= u.price and u.nodes <= supply:
            shifted = table[: supply + 1 - u.nodes] + (u.price - r) * u.nodes * g
            np.maximum(table[u.nodes :], shifted, out=table[u.nodes :])
    return int(table[supply])


def test_the_largest_island_clears_to_the_optimum_with_an_exact_core_and_receipts() -> None:
    island = kubernetes_heavy(25_000, 100_000, 20_000, protected_clusters=250, seed=25_000)
    result = clear(island)
    assert result.value == knapsack_optimum(island)
    assert result.core_exact
    assert result.core_rounds > 1  # the core is above VCG somewhere: coalitions were traced
    r, g = island.reserve_price, island.gpus_per_node
    units = {u.id: u for u in island.units}
    assert sum(units[w].nodes for w in result.winners) <= island.nodes
    for name, held in result.clusters.items():
        if held.won_nodes:
            assert worth(held.displaced, r, g) == held.vcg - r * held.won_nodes * g, name
        assert (held.coalition is None) == (held.core == held.vcg), name
        if held.coalition is not None:
            assert worth(held.coalition.levels, r, g) == held.coalition.value, name
            assert held.coalition.value > 0, name


def test_threads_and_parts_change_no_figure() -> None:
    """A large island's payments on two threads (the core beside the receipts, the VCG's
    tables in parts on both) are the one-thread clearing's, and its VCG the textbook one:
    V(S, c̄) by a plain knapsack without c, for the largest winners."""
    island = kubernetes_heavy(10_000, 20_000, 4_000, protected_clusters=100, seed=10_000)
    one, two = clear(island, workers=1), clear(island, workers=2)
    assert one == two

    def without(instance: IslandInput, removed: frozenset[str]) -> int:
        kept = tuple(u for u in instance.units if u.cluster not in removed)
        return knapsack_optimum(replace(instance, units=kept))

    for name, expected in vcg_of_the_largest(island, one, without).items():
        assert one.clusters[name].vcg == expected, name
