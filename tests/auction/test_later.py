"""The ladder past the contestable supply (`later_rungs`) against the exact ladder of the moment
each release comes: the island with the released nodes contestable and their holders bidding."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.auction import IslandInput, LaterRung, Release, Unit, clear, later_rungs
from burstmarket.money import PRICE_STEP
from tests.auction.test_properties import CLUSTERS, islands
from tests.conftest import examples
from tests.constants import USD


@st.composite
def releases(draw: st.DrawFn, island: IslandInput) -> list[Release]:
    prices = st.sampled_from(
        [
            island.reserve_price + k * PRICE_STEP
            for k in (-1, 0, 1, 5, 20, 40)
            if island.reserve_price + k * PRICE_STEP > 0
        ]
    )
    found = []
    for i in range(draw(st.integers(1, 3))):
        units = tuple(
            Unit(
                f"r{i}.{j}",
                draw(st.sampled_from(CLUSTERS)),
                draw(st.sampled_from([1, 1, 2])),
                draw(prices),
                draw(st.sampled_from([0, 1, 2])),
            )
            for j in range(draw(st.integers(0, 2)))
        )
        # the released nodes are the holders' own, plus (sometimes) nodes nobody bids for again
        nodes = sum(u.nodes for u in units) + draw(st.integers(0 if units else 1, 2))
        found.append(Release(at=draw(st.integers(1, 4)), nodes=nodes, units=units))
    return found


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_a_later_rung_is_the_exact_ladder_once_its_release_comes_or_one_step_above(
    data: st.DataObject,
) -> None:
    island = data.draw(islands())
    released = data.draw(releases(island))
    rungs = later_rungs(island, released)
    total = island.nodes + sum(r.nodes for r in released)
    assert [r.nodes for r in rungs] == list(range(island.nodes + 1, total + 1))
    for rung in rungs:
        # the island as it stands once every release up to this rung's has come
        come = [r for r in released if r.at <= rung.at]
        then = IslandInput(
            nodes=island.nodes + sum(r.nodes for r in come),
            gpus_per_node=island.gpus_per_node,
            reserve_price=island.reserve_price,
            units=island.units + tuple(u for r in come for u in r.units),
        )
        assert then.nodes >= rung.nodes  # contestable by then ...
        before = then.nodes - sum(r.nodes for r in come if r.at == rung.at)
        assert before < rung.nodes  # ... and not before
        exact = clear(then).ladder[rung.nodes - 1]
        assert rung.gpus == exact.gpus
        assert exact.price <= rung.price <= exact.price + PRICE_STEP


def test_windows_ending_over_a_blank_island_price_against_the_holders_and_the_queue() -> None:
    # Nothing contestable now; a newcomer queues 2 nodes at 3.0 (reserve 1.0, 8 GPUs a node).
    # At t=5 the holder's two nodes come back and bid again at its 2.0; at t=9 two more nodes
    # come back that nobody bids for again.
    queued = tuple(Unit(f"q{i}", "queue", 1, 3 * USD, 1) for i in range(2))
    island = IslandInput(nodes=0, gpus_per_node=8, reserve_price=1 * USD, units=queued)
    holder = tuple(Unit(f"h{i}", "holder", 1, 2 * USD, 0) for i in range(2))
    rungs = later_rungs(island, [Release(9, 2), Release(5, 2, holder)])
    assert rungs == (
        # 2 nodes, both won by the 3.0s: a newcomer must outbid a 3.0 (a tie goes to the older)
        LaterRung(1, 8, 3 * USD + PRICE_STEP, 5),
        LaterRung(2, 16, 3 * USD + PRICE_STEP, 5),
        # 4 nodes, every bid fits: 3 nodes displace 2.0 + 2×3.0 over the reserve, 32 USD/h on
        # 24 GPUs (1.3333… over the reserve); 4 nodes displace 48 USD/h on 32 GPUs, exactly 1.5
        # over it, a tie the older bids win: one step more
        LaterRung(3, 24, 2_333_400, 9),
        LaterRung(4, 32, 2_500_100, 9),
    )
