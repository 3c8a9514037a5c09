"""VM capacity's rules (market/kinds/vm.py), each on a TickState built by hand: the terms of a
grant, the declared units held nodes serve and those left waiting, the units it bids as, the
spend limit on new units, its cap, live price, pending GPUs and bid-too-low refusal."""

from __future__ import annotations

from burstmarket.clock import NS_PER_MS
from burstmarket.market.kinds import KINDS
from burstmarket.market.kinds.vm import VM
from burstmarket.market.model import CORDONED, Tranche
from burstmarket.market.tick import run_tick
from burstmarket.market.tick.tick_state import TickState
from tests.market.support import (
    HOUR,
    MINUTE,
    T0,
    USD,
    G,
    free_nodes,
    hold,
    tick_input,
    vm,
)

UNIT_HOUR = 3 * USD * G * (HOUR // NS_PER_MS)
"""The worst case of one VM node at 3 USD per GPU-hour over its 1 h grant, in ledger units."""


def test_the_registry_gives_vm_clusters_the_vm_rules() -> None:
    assert KINDS["vm"] is VM
    assert (VM.window_ns, VM.hold_ns, VM.grant_span_ns, VM.runs_jobs) == (HOUR, None, HOUR, False)


def test_a_grant_takes_free_nodes_in_order_under_a_1_hour_window_with_no_hold() -> None:
    nodes = free_nodes(3)
    out = run_tick(tick_input([vm("a", 2, 3 * USD)], nodes))
    n0, n1, n2 = nodes
    assert (n0.cluster, n1.cluster, n2.cluster) == ("a", "a", None)
    for n in (n0, n1):
        assert (n.granted_at, n.window_ends_at, n.hold_until) == (T0, T0 + HOUR, None)
        assert (n.locked_price, n.commit_price, n.commit_ends_at) == (3 * USD, 3 * USD, T0 + HOUR)
        assert n.idle_since is None  # a VM node is the demand itself: never idle
    (commitment,) = [e for e in out.ledger if e.kind == "commitment"]
    assert (commitment.gpus, commitment.units) == (2 * G, 2 * UNIT_HOUR)
    assert out.pending_gpus == 0


def test_held_nodes_serve_the_oldest_units_the_oldest_grant_first_and_owed_ones_the_next() -> None:
    a = vm("a", 0, 3 * USD)
    a.max_gpus = 3 * G
    a.demand = [Tranche(1, T0 - 3 * HOUR, 1), Tranche(1, T0 - 2 * HOUR, 2), Tranche(1, T0, 3)]
    n0, n1, n2, n3 = free_nodes(4)
    hold(n0, "a", granted=T0 - 30 * MINUTE)
    hold(n1, "a", granted=T0 - 50 * MINUTE)
    s = TickState(tick_input([a], [n0, n1, n2, n3]))
    served, waiting = VM.served_ages(s, a, s.held("a"))
    assert served == {"n1": (T0 - 3 * HOUR, 1), "n0": (T0 - 2 * HOUR, 2)}
    assert waiting == [(T0, 3)]
    # a replacement owed to the cluster serves the next unit: none is left waiting
    hold(n2, "a", granted=T0 - 10 * MINUTE, window=T0 + 50 * MINUTE)
    n2.service, n2.owed_until = CORDONED, T0 + 50 * MINUTE
    s = TickState(tick_input([a], [n0, n1, n2, n3]))
    assert VM.served_ages(s, a, s.held("a")) == (served, [])


def test_a_node_held_beyond_the_declared_units_serves_its_own_grant() -> None:
    a = vm("a", 1, 3 * USD, since=T0 - HOUR, seq=4)
    n0, n1 = free_nodes(2)
    hold(n0, "a", granted=T0 - 40 * MINUTE)
    hold(n1, "a", granted=T0 - 20 * MINUTE)
    s = TickState(tick_input([a], [n0, n1]))
    served, waiting = VM.served_ages(s, a, s.held("a"))
    assert served == {"n0": (T0 - HOUR, 4), "n1": (T0 - 20 * MINUTE, 0)}
    assert waiting == []


def test_a_lapsed_node_bids_at_the_live_ceiling_with_the_age_of_the_unit_it_serves() -> None:
    a = vm("a", 1, 5 * USD, since=T0 - HOUR, seq=4)
    (n0,) = free_nodes(1)
    hold(n0, "a", granted=T0 - 40 * MINUTE, locked=3 * USD)
    s = TickState(tick_input([a], [n0]))
    age, unit, demand = VM.lone_unit(s, a, n0, {"n0": (T0 - HOUR, 4)})
    assert age == (T0 - HOUR, 4)
    assert (unit.id, unit.cluster, unit.nodes, unit.price, unit.since) == (
        "n:n0",
        "a",
        1,
        5 * USD,
        T0 - HOUR,
    )
    assert (demand.stands_for, demand.nodes, demand.price) == ("held", [n0], 5 * USD)


def test_new_units_bid_as_far_as_the_spend_limit_leaves_room_for_their_worst_case() -> None:
    a = vm("a", 3, 3 * USD)
    waiting = [(T0, 0)] * 3
    s = TickState(tick_input([a], free_nodes(3)))
    units = VM.new_units(s, a, waiting)
    assert [u.id for _, u, _ in units] == ["v:a:000000", "v:a:000001", "v:a:000002"]
    assert s.refused == {}
    # a limit of exactly two worst cases: two units bid, the demand is held back
    a.spend_limit = 2 * 8 * 3 * USD
    s = TickState(tick_input([a], free_nodes(3)))
    units = VM.new_units(s, a, waiting)
    assert [(u.id, u.nodes, u.price) for _, u, _ in units] == [
        ("v:a:000000", 1, 3 * USD),
        ("v:a:000001", 1, 3 * USD),
    ]
    assert [d.stands_for for _, _, d in units] == ["declared", "declared"]
    assert s.refused == {"a": "spend-limit"}
    # half an hour still committed by a held node takes half a unit's room: one bids
    n0, n1 = free_nodes(2)
    hold(n0, "a", window=T0 + 30 * MINUTE, locked=3 * USD)
    n0.commit_price, n0.commit_ends_at = 3 * USD, T0 + 30 * MINUTE
    s = TickState(tick_input([a], [n0, n1]))
    assert [u.id for _, u, _ in VM.new_units(s, a, waiting[:2])] == ["v:a:000000"]


def test_the_cap_is_the_winning_bid_lifted_at_once_by_a_higher_ceiling() -> None:
    a = vm("a", 1, 2 * USD)
    (n0,) = free_nodes(1)
    hold(n0, "a", window=T0 + 30 * MINUTE, locked=3 * USD)
    s = TickState(tick_input([a], [n0]))
    assert VM.window_cap(s, a, n0) == 3 * USD  # a lowered ceiling keeps the locked bid
    a.max_price = 5 * USD
    assert VM.window_cap(s, a, n0) == 5 * USD


def test_the_live_price_is_the_ceiling_else_the_lock() -> None:
    a = vm("a", 1, 5 * USD)
    (n0,) = free_nodes(1)
    hold(n0, "a", locked=3 * USD)
    s = TickState(tick_input([a], [n0]))
    assert VM.live_price(s, a, n0) == 5 * USD
    a.max_price = None
    assert VM.live_price(s, a, n0) == 3 * USD


def test_pending_is_what_is_declared_and_not_held() -> None:
    a = vm("a", 3, 3 * USD)
    n0, n1 = free_nodes(2)
    hold(n0, "a")
    s = TickState(tick_input([a], [n0, n1]))
    assert VM.pending_gpus(s, a) == 2 * G
    assert VM.declared_nodes(a, G) == 3
    hold(n1, "a")
    a.max_gpus = G  # declared under what it holds: nothing pending, never less
    s = TickState(tick_input([a], [n0, n1]))
    assert VM.pending_gpus(s, a) == 0


def test_a_ceiling_the_reserve_overtakes_is_refused_for_the_cluster() -> None:
    a = vm("a", 1, 2 * USD)
    s = TickState(tick_input([a], free_nodes(1), reserve=3 * USD))
    refusal = VM.too_low_refusal(s, a)
    assert refusal is not None
    assert refusal.code == "bid-too-low"
    assert refusal.figures == {"cluster": "a", "price_per_gpu_hour": 2.0, "reserve_price": 3.0}
