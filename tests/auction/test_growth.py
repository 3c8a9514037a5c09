"""A cluster's own ladder (`growth.without`, `growth.prices`) against brute force: re-clear the
island with the cluster's demand replaced by its growth at each grid price, and find the lowest
price at which the preferred optimum (age tie-break) grants it every node it asks for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.auction import IslandInput, Unit, growth
from burstmarket.money import PRICE_STEP
from tests.auction.oracle import MAX_UNITS, Brute
from tests.auction.test_properties import CLUSTERS, islands
from tests.conftest import examples

GROWER = "c0"


def scenario(island: IslandInput, held: int, n: int, price: int, gang: bool) -> list[Unit]:
    """The island's units with the grower's own replaced: VM, its `held` nodes (oldest) and n
    more, single units at `price` (the n youngest of all); Kubernetes, a new gang of n."""
    others = [u for u in island.units if u.cluster != GROWER]
    youngest = max((u.since for u in island.units), default=0) + 1
    if gang:
        return [*others, Unit("grow", GROWER, n, price, youngest)]
    mine = [Unit(f"h{i}", GROWER, 1, price, -1) for i in range(held)]
    mine += [Unit(f"g{i}", GROWER, 1, price, youngest) for i in range(n)]
    return [*others, *mine]


def granted(island: IslandInput, units: list[Unit]) -> int:
    brute = Brute(units, island.reserve_price, island.gpus_per_node)
    return sum(u.nodes for u in brute.preferred(island.nodes) if u.cluster == GROWER)


def strictly_wins(island: IslandInput, units: list[Unit], want: int) -> bool:
    """Every optimum grants the grower `want` nodes (no tie could take one from it)."""
    r, g = island.reserve_price, island.gpus_per_node
    brute = Brute(units, r, g)
    best = brute.best(island.nodes)
    for mask in range(len(brute.value)):
        if brute.nodes[mask] <= island.nodes and brute.value[mask] == best:
            held = [u for k, (_, u) in enumerate(brute.indexed) if mask >> k & 1]
            if sum(u.nodes for u in held if u.cluster == GROWER) != want:
                return False
    return True


@settings(max_examples=examples(200), deadline=None)
@given(islands(), st.integers(0, 2), st.booleans())
def test_a_rung_grants_n_more_and_is_the_lowest_price_no_tie_can_refuse(
    island: IslandInput, held: int, gang: bool
) -> None:
    assert GROWER in CLUSTERS
    held = 0 if gang else min(held, island.nodes)
    own = frozenset(u.id for u in island.units if u.cluster == GROWER)
    r, g, supply = island.reserve_price, island.gpus_per_node, island.nodes
    others = growth.without(island.units, supply, g, r, [own], held + supply)[0]
    rungs = supply - held
    prices = growth.prices(others, supply, held, rungs, g, r, gang).tolist()
    assert len(prices) == rungs
    bidding = sum(1 for u in island.units if u.price >= r and u.cluster != GROWER)
    for n, price in enumerate(prices, start=1):
        assert price >= 0  # every rung up to the supply has a price
        want = n if gang else held + n
        if bidding + (1 if gang else want) > MAX_UNITS + 1:
            break  # past what the oracle enumerates
        at = scenario(island, held, n, price, gang)
        # the promise: at the rung the tick grants the grower its nodes; above the reserve,
        # every optimum does (at the reserve, a unit takes a free node: docs/market.md step 6)
        assert granted(island, at) == want, (n, price)
        if price > r:
            assert strictly_wins(island, at, want), (n, price)
            under = scenario(island, held, n, price - PRICE_STEP, gang)
            # one grid step under, some optimum grants fewer: the preferred one does, or the
            # rung sits one step above an exact tie (docs/market.md "The cluster's own ladder")
            assert not strictly_wins(island, under, want), (n, price)


@settings(max_examples=examples(200), deadline=None)
@given(
    islands(),
    st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=len(CLUSTERS)),
    st.integers(1, 16),
)
def test_every_cluster_priced_in_one_pass_is_priced_as_alone(
    island: IslandInput, asks: list[tuple[int, bool]], rungs: int
) -> None:
    """`prices_of` (a tick's every own ladder at once) gives each cluster the rows `prices`
    gives it alone, whatever the others hold: rows cut to the widest cluster's reach, and a
    cluster with no units of its own priced on everyone's demand (its row longer)."""
    r, g, supply = island.reserve_price, island.gpus_per_node, island.nodes
    clusters = CLUSTERS[: len(asks)]
    removed = [frozenset(u.id for u in island.units if u.cluster == c) for c in clusters]
    deep = max(held for held, _ in asks) + rungs
    rows = growth.without(island.units, supply, g, r, removed, deep)
    rows[-1] = growth.full(island.units, supply, g, r)  # the last has no demand of its own
    held = np.array([h for h, _ in asks], dtype=np.int64)
    gang = np.array([k for _, k in asks], dtype=np.bool_)
    together = growth.prices_of(rows, supply, held, rungs, g, r, gang).tolist()
    alone = [
        growth.prices(o, supply, h, rungs, g, r, k).tolist()
        for o, (h, k) in zip(rows, asks, strict=True)
    ]
    assert together == alone
