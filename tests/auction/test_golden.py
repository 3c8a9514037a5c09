"""Small cases worked out by hand from docs/market.md (money in µUSD: 1 USD = 1_000_000)."""

from __future__ import annotations

from burstmarket.auction import IslandInput, Protected, Unit, clear
from tests.constants import USD


def unit(uid: str, cluster: str, nodes: int, usd: float, since: int) -> Unit:
    return Unit(uid, cluster, nodes, round(usd * USD), since)


def test_two_singles_beat_a_gang_vcg_four_core_five() -> None:
    # one GPU per node, no reserve: singles at 6 and 6 beat a 2-node gang worth 10
    island = IslandInput(
        nodes=2,
        gpus_per_node=1,
        reserve_price=0,
        units=(unit("a", "A", 1, 6, 1), unit("b", "B", 1, 6, 2), unit("g", "G", 2, 5, 0)),
    )
    result = clear(island)
    assert result.winners == ("a", "b")
    assert result.value == 12 * USD
    for name in ("A", "B"):
        cluster = result.clusters[name]
        assert cluster.vcg == 4 * USD  # VCG alone: V(S, c̄)=10 less the other's 6
        assert cluster.core == 5 * USD  # the gang blocks 4+4: together they must pay 10
        assert cluster.rate == 5 * USD
    assert "G" not in result.clusters


def test_issue_three_case_with_eight_gpus_and_reserve_one() -> None:
    island = IslandInput(
        nodes=2,
        gpus_per_node=8,
        reserve_price=1 * USD,
        units=(unit("a", "vm-a", 1, 6, 1), unit("b", "vm-b", 1, 6, 2), unit("g", "k8s", 2, 5, 0)),
    )
    result = clear(island)
    assert {c: r.rate for c, r in result.clusters.items()} == {"vm-a": 5 * USD, "vm-b": 5 * USD}
    assert result.stats.vwap == 5 * USD
    assert (result.stats.gpus, result.stats.clusters) == (16, 2)


def test_own_losing_demand_never_sets_own_price() -> None:
    # A bids 8 and 4, B bids 6, two nodes, reserve 1: A and B win one node each
    island = IslandInput(
        nodes=2,
        gpus_per_node=1,
        reserve_price=1 * USD,
        units=(unit("a1", "A", 1, 8, 1), unit("a2", "A", 1, 4, 2), unit("b", "B", 1, 6, 3)),
    )
    result = clear(island)
    assert result.winners == ("a1", "b")
    # without A only B's 6 bids: A displaces nothing and pays the reserve, not its own 4
    assert result.clusters["A"].core == 1 * USD
    # B displaces A's second unit at 4
    assert result.clusters["B"].core == 4 * USD


def test_equal_bids_older_demand_wins() -> None:
    younger_first = (unit("young", "Y", 1, 5, 20), unit("old", "O", 1, 5, 10))
    result = clear(IslandInput(1, 8, 1 * USD, younger_first))
    assert result.winners == ("old",)
    same_age = (unit("first", "F", 1, 5, 10), unit("second", "S", 1, 5, 10))
    assert clear(IslandInput(1, 8, 1 * USD, same_age)).winners == ("first",)


def test_equal_value_allocations_prefer_the_oldest_unit() -> None:
    # a 2-node gang worth 10 ties two singles worth 5 each; the gang is oldest, so it wins
    units = (unit("s1", "S1", 1, 5, 2), unit("s2", "S2", 1, 5, 3), unit("g", "G", 2, 5, 1))
    assert clear(IslandInput(2, 1, 0, units)).winners == ("g",)
    # make one single the oldest and the singles win
    units = (unit("s1", "S1", 1, 5, 0), unit("s2", "S2", 1, 5, 3), unit("g", "G", 2, 5, 1))
    assert clear(IslandInput(2, 1, 0, units)).winners == ("s1", "s2")


def test_bid_below_reserve_is_not_in_the_auction() -> None:
    island = IslandInput(2, 8, 2 * USD, (unit("low", "L", 1, 1.5, 1), unit("ok", "K", 1, 3, 2)))
    result = clear(island)
    assert result.winners == ("ok",)
    assert result.bid_too_low == frozenset({"L"})
    assert result.clusters["K"].rate == 2 * USD  # a node left free: it pays the reserve


def test_unit_at_exactly_the_reserve_takes_a_free_node() -> None:
    island = IslandInput(3, 8, 2 * USD, (unit("r", "R", 1, 2, 1),))
    result = clear(island)
    assert result.winners == ("r",)
    assert result.clusters["R"].rate == 2 * USD
    prices = [r.price for r in result.ladder]
    # two nodes are free: 1 or 2 nodes cost the reserve; all 3 must outbid R's older unit
    assert prices == [2 * USD, 2 * USD, 2 * USD + 100]


def test_ladder_prices_the_break_even_and_loses_exact_ties_to_older_demand() -> None:
    island = IslandInput(
        nodes=2,
        gpus_per_node=1,
        reserve_price=0,
        units=(unit("a", "A", 1, 6, 1), unit("b", "B", 1, 6, 2), unit("g", "G", 2, 5, 0)),
    )
    rungs = clear(island).ladder
    # to take one node a newcomer must beat b's 6: at exactly 6 the older b keeps it
    assert [(r.nodes, r.price) for r in rungs] == [(1, 6 * USD + 100), (2, 6 * USD + 100)]


def test_ladder_newcomer_wins_a_tie_when_its_allocation_holds_an_older_unit() -> None:
    # S=2: gang G (2 nodes, worth 8, oldest... no: since 5) vs single X (worth 5, oldest, since 1)
    # preferred optimum at S is G alone (8 > 5). A newcomer of 1 node breaks even at 3:
    # X + newcomer = 5 + 3 = 8 ties G, and that allocation holds X, older than G: it wins at 3.
    island = IslandInput(
        nodes=2,
        gpus_per_node=1,
        reserve_price=0,
        units=(unit("x", "X", 1, 5, 1), unit("g", "G", 2, 4, 5)),
    )
    result = clear(island)
    assert result.winners == ("g",)
    assert result.ladder[0].price == 3 * USD


def test_protected_nodes_pay_what_they_displace_capped_by_the_lock() -> None:
    units = (unit("x", "X", 1, 6, 1), unit("y", "Y", 1, 4, 2))
    island = IslandInput(1, 1, 1 * USD, units, (Protected("P", 1, 10 * USD),))
    result = clear(island)
    # with P's node in the market Y would win it: P pays the reserve plus Y's surplus of 3
    assert result.clusters["P"].protected == 4 * USD
    assert result.clusters["P"].rate == 4 * USD
    assert result.clusters["X"].core == 4 * USD
    locked_low = IslandInput(1, 1, 1 * USD, units, (Protected("P", 1, 3 * USD),))
    assert clear(locked_low).clusters["P"].protected == 3 * USD


def test_statistics_weight_rates_by_gpus() -> None:
    # three nodes, three winners and nobody displaced: everyone pays the reserve
    island = IslandInput(
        nodes=3,
        gpus_per_node=1,
        reserve_price=1 * USD,
        units=(unit("a1", "A", 1, 9, 1), unit("a2", "A", 1, 9, 2), unit("b", "B", 1, 9, 3)),
    )
    stats = clear(island).stats
    assert (stats.vwap, stats.min, stats.max) == (1 * USD, 1 * USD, 1 * USD)
    crowded = IslandInput(
        nodes=3,
        gpus_per_node=1,
        reserve_price=1 * USD,
        units=(
            unit("a1", "A", 1, 9, 1),
            unit("a2", "A", 1, 9, 2),
            unit("b", "B", 1, 9, 3),
            unit("c", "C", 1, 4, 4),
        ),
    )
    result = clear(crowded)
    # C (surplus 3) is displaced: A's two nodes pay 2 + 3 = 5 (rate 2.5), B's one pays 1 + 3
    assert {c: r.rate for c, r in result.clusters.items()} == {"A": 2_500_000, "B": 4 * USD}
    # vwap weights by GPUs: (2·2.5 + 1·4) / 3 = 3
    assert (result.stats.vwap, result.stats.min, result.stats.max) == (3 * USD, 2_500_000, 4 * USD)
    assert (result.stats.gpus, result.stats.clusters) == (3, 2)


def test_empty_island_and_no_demand() -> None:
    result = clear(IslandInput(0, 8, 1 * USD))
    assert result.winners == ()
    assert result.ladder == ()
    assert result.stats.vwap is None
    assert [r.price for r in clear(IslandInput(2, 8, 1 * USD)).ladder] == [1 * USD, 1 * USD]


def test_same_input_same_output() -> None:
    units = tuple(unit(f"u{i}", f"c{i % 3}", 1 + i % 2, 2 + i % 5, i % 4) for i in range(8))
    island = IslandInput(6, 8, 1 * USD, units, (Protected("c1", 2, 5 * USD),))
    assert clear(island) == clear(island)


def test_core_payment_that_is_a_whole_micro_dollar_is_not_rounded_past_it() -> None:
    # regression: solver noise used to read 8.000001 for an exact 8.0
    island = IslandInput(
        nodes=5,
        gpus_per_node=8,
        reserve_price=1 * USD,
        units=(
            Unit("s1", "c1", 2, 1_000_200, 0),
            Unit("s3", "c3", 1, 1_000_100, 0),
            Unit("s4", "c4", 1, 1_000_100, 0),
            Unit("g0", "c0", 4, 1_000_100, 0),
        ),
    )
    result = clear(island)
    assert result.winners == ("s1", "s3", "s4")
    assert {c: r.vcg for c, r in result.clusters.items()} == {
        "c1": 16_002_400,
        "c3": 8 * USD,
        "c4": 8 * USD,
    }
    # the gang's 4 nodes at 1.0001 (value 32.0032 over 4 nodes) are only blocked by c1 paying
    # 0.0008 more: the unique core point
    assert {c: r.core for c, r in result.clusters.items()} == {
        "c1": 16_003_200,
        "c3": 8 * USD,
        "c4": 8 * USD,
    }


def test_degenerate_core_program_clears() -> None:
    # regression: HiGHS' QP gave up ("Solve error") on this island's nearest-point program
    price = 3_600
    island = IslandInput(
        nodes=6,
        gpus_per_node=1,
        reserve_price=100,
        units=(
            Unit("s2", "c2", 2, price, 0),
            Unit("s4", "c4", 1, price, 0),
            Unit("s3", "c3", 1, price, 0),
            Unit("s0", "c0", 1, price, 0),
            Unit("s1", "c1", 1, price, 0),
            Unit("g0", "c4", 3, 3_500, 0),
            Unit("g1", "c0", 2, 3_300, 0),
        ),
    )
    result = clear(island)
    assert result.clusters
    for cluster in result.clusters.values():
        assert cluster.vcg <= cluster.core <= cluster.won_nodes * price
