"""Receipts (docs/market.md "Receipts"): the parts of what a tick billed, worked out by hand on
the issue's kind of example, and on random islands as properties of the engine and the split."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from hypothesis import given, settings

from burstmarket.auction import IslandInput, clear
from burstmarket.clock import NS_PER_MS, to_datetime
from burstmarket.market.ledger import CHARGE
from burstmarket.market.receipts import PARTS, receipt_view, receipts
from burstmarket.market.tick import run_tick
from burstmarket.money import units_to_usd
from tests.auction.test_properties import islands, worth
from tests.conftest import examples
from tests.constants import T0, USD
from tests.market.support import INTERVAL, free_nodes, job, k8s, tick_input, vm

MS = INTERVAL // NS_PER_MS
T0_TIME = to_datetime(T0)


def test_two_single_nodes_beating_a_gang_pay_the_core_with_the_gang_as_the_coalition() -> None:
    # A and B bid 6 USD for one node each; C's job needs both nodes at 5.5. Over the reserve
    # (1 USD) and 8 GPUs a node: A and B are worth 40 USD/h each, the gang 72. A and B win.
    # VCG: without A the gang takes both nodes (72) instead of B (40): A pays 8 (reserve) + 32.
    # The core: A and B together must beat the gang, 72: 36 each, 4 above VCG.
    a, b, c = vm("a", 1, 6 * USD), vm("b", 1, 6 * USD, seq=1), k8s("c", limit=11 * USD // 2)
    out = run_tick(tick_input([a, b, c], free_nodes(2), jobs=[job("c", "gang", 2)]))
    charges = {e.cluster: e.units for e in out.ledger if e.kind == CHARGE}
    by_cluster = {r.cluster: r for r in out.receipts}
    assert sorted(by_cluster) == ["a", "b"]
    for cid, r in by_cluster.items():
        assert r.amount == charges[cid] == 44 * USD * MS  # 5.5 USD per GPU-hour × 8 GPUs
        assert (r.reserve, r.displaced, r.core, r.protected) == (
            8 * USD * MS,
            32 * USD * MS,
            4 * USD * MS,
            0,
        )
        # without A, the gang comes in on both nodes and B gives its node way
        assert r.displaced_levels == [
            {"price": 11 * USD // 2, "nodes": 2},
            {"price": 6 * USD, "nodes": -1},
        ]
        # the coalition: the gang on both nodes, A and B left out, worth 72 USD/h over the reserve
        assert r.coalition == [{"price": 11 * USD // 2, "nodes": 2}]
        assert r.coalition_value == 72 * USD
        assert not r.capped
    view = receipt_view(by_cluster["a"])
    # 44 USD/h for 300 s is 3.6666… USD: shown to the µUSD, the parts add up to what is shown
    assert view.amount_usd == 3.666667
    parts = view.parts
    assert (parts.reserve, parts.displaced, parts.core) == (0.666667, 2.666667, 0.333333)
    shown = [round(getattr(parts, p) * 1_000_000) for p in PARTS]
    assert sum(shown) == round(view.amount_usd * 1_000_000)
    assert view.core is not None
    assert view.core.value == 72.0
    assert [(x.price, x.nodes) for x in view.core.coalition] == [(5.5, 2)]
    assert [(x.price, x.nodes) for x in view.displaced] == [(5.5, 2), (6.0, -1)]


@settings(max_examples=examples(200), deadline=None)
@given(island=islands())
def test_receipt_parts_add_up_to_the_charge_and_cite_demand_that_bid(island: IslandInput) -> None:
    result = clear(island)
    r, g = island.reserve_price, island.gpus_per_node
    winners = set(result.winners)
    span = 10_000 * NS_PER_MS
    by_cluster = {x.cluster: x for x in receipts("i", 1, T0_TIME, result, r, g, span)}
    assert sorted(by_cluster) == sorted(result.clusters)
    for cid, cc in result.clusters.items():
        receipt = by_cluster[cid]
        # the parts add up, to the ledger unit, to what the tick bills: rate × GPUs × ms
        assert receipt.amount == cc.rate * cc.gpus * 10_000
        assert sum(getattr(receipt, p) for p in PARTS) == receipt.amount
        assert all(getattr(receipt, p) >= 0 for p in PARTS)
        exact = [r * cc.won_nodes * g, cc.vcg - r * cc.won_nodes * g, cc.core - cc.vcg]
        exact = [*exact, cc.protected] if cc.won_nodes else [0, 0, 0, cc.protected]
        off = [getattr(receipt, p) - e * 10_000 for p, e in zip(PARTS, exact, strict=True)]
        assert sum(1 for o in off if o) <= 1  # the rate's rounding goes to one part only
        assert abs(sum(off)) * 2 <= cc.gpus * 10_000
        view = receipt_view(receipt)
        shown = [round(getattr(view.parts, p) * 1_000_000) for p in PARTS]
        assert sum(shown) == round(view.amount_usd * 1_000_000)
        assert Decimal(str(view.amount_usd)) == units_to_usd(receipt.amount)

        # VCG ≤ core; the displaced demand is worth exactly the VCG part, and is demand that bid
        assert cc.vcg <= cc.core
        losing = Counter()
        holding = Counter()
        for u in island.units:
            if u.cluster != cid and u.price >= r:
                (holding if u.id in winners else losing)[u.price] += u.nodes
        if cc.won_nodes:
            assert worth(cc.displaced, r, g) == cc.vcg - r * cc.won_nodes * g
        else:
            assert cc.displaced == ()
        for level in cc.displaced:
            assert level.nodes != 0
            assert level.nodes <= losing[level.price] if level.nodes > 0 else True
            assert -level.nodes <= holding[level.price] if level.nodes < 0 else True
        # nodes: the others' winners, with those giving way out and the entering in, fit S
        others_held = sum(u.nodes for u in island.units if u.id in winners and u.cluster != cid)
        moved = sum(level.nodes for level in cc.displaced)
        assert others_held + moved <= island.nodes
        # the core's coalition: there exactly when the core added something, worth its value
        assert (cc.coalition is None) == (cc.core == cc.vcg)
        if cc.coalition is not None:
            assert worth(cc.coalition.levels, r, g) == cc.coalition.value
            assert cc.coalition.value <= sum(
                c.core - r * c.won_nodes * g for c in result.clusters.values()
            )
            for level in cc.coalition.levels:
                assert level.nodes != 0
                assert (
                    level.nodes <= losing[level.price] + holding[level.price]
                    if level.nodes > 0
                    else True
                )
        # protected nodes: what they displace, and the cap when the lock is lower
        if cc.protected_nodes:
            displaced = worth(cc.protected_displaced, r, g)
            cap = sum(h.locked_price * h.nodes * g for h in island.protected if h.cluster == cid)
            assert cc.protected == min(cap, r * cc.protected_nodes * g + displaced)
            assert cc.capped == (cap < r * cc.protected_nodes * g + displaced)
            for level in cc.protected_displaced:
                assert (
                    level.nodes <= losing[level.price] + holding[level.price]
                    if level.nodes > 0
                    else True
                )
        else:
            assert (cc.protected_displaced, cc.capped) == ((), False)
