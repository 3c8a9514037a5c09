"""When every unit that bids is one node, everyone else's best value on x nodes is the sum of
their x best units (market/single_units.py): the very integers the engine's knapsack gives
(auction/growth.py `without`, `full`), for every cluster's own demand left out, on random
islands with units under the reserve, equal prices, clusters with nothing of their own and
supplies above and below the demand."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.auction import Unit, growth
from burstmarket.market import single_units
from tests.conftest import examples

RESERVE = 1_000_000
PRICES = st.sampled_from([500_000, 1_000_000, 1_500_000, 1_500_000, 2_000_000, 3_250_000])


@st.composite
def islands(draw: st.DrawFn) -> tuple[list[Unit], int, int, list[frozenset[str]], int]:
    """Single-node units of a few clusters, the supply, g, each cluster's own units (some of
    its units, maybe none) and how deep below the supply the values are asked for."""
    units = [
        Unit(f"u{c}-{j}", f"c{c}", 1, draw(PRICES), draw(st.integers(0, 5)))
        for c in range(draw(st.integers(0, 6)))
        for j in range(draw(st.integers(0, 6)))
    ]
    units = draw(st.permutations(units))
    clusters = sorted({u.cluster for u in units})
    removed = [
        frozenset(u.id for u in units if u.cluster == c and draw(st.booleans()))
        for c in clusters
        if draw(st.booleans())
    ]
    return (
        units,
        draw(st.integers(0, 40)),
        draw(st.integers(1, 8)),
        removed,
        draw(st.integers(0, 50)),
    )


def _same(a: growth.Others, b: growth.Others) -> bool:
    return (a.low, a.nodes) == (b.low, b.nodes) and np.array_equal(a.values, b.values)


@settings(max_examples=examples(300), deadline=None)
@given(islands())
def test_the_others_best_is_the_knapsacks_with_each_clusters_own_left_out(
    island: tuple[list[Unit], int, int, list[frozenset[str]], int],
) -> None:
    units, supply, g, removed, depth = island
    sorted_rows = single_units.without(units, supply, g, RESERVE, removed, depth)
    assert sorted_rows is not None
    knapsack_rows = growth.without(units, supply, g, RESERVE, removed, depth)
    assert len(sorted_rows) == len(knapsack_rows) == len(removed)
    assert all(_same(a, b) for a, b in zip(sorted_rows, knapsack_rows, strict=True))
    everyone = single_units.full(units, supply, g, RESERVE)
    assert everyone is not None
    assert _same(everyone, growth.full(units, supply, g, RESERVE))


def test_a_gang_leaves_it_to_the_knapsack() -> None:
    units = [Unit("a", "x", 1, 2_000_000, 0), Unit("b", "y", 2, 2_000_000, 1)]
    assert single_units.without(units, 3, 8, RESERVE, [frozenset({"a"})], 3) is None
    assert single_units.full(units, 3, 8, RESERVE) is None
    # a gang under the reserve bids not at all: the rest are single nodes
    low = [Unit("a", "x", 1, 2_000_000, 0), Unit("b", "y", 2, 500_000, 1)]
    assert single_units.full(low, 3, 8, RESERVE) is not None
