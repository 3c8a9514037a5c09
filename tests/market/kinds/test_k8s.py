"""A Kubernetes cluster's rules (market/kinds/k8s.py), each on a TickState built by hand: the
terms of a gang's grant and the minimum hold billed on release, an idle node's unit, pending jobs
under the spend limit, the cap and live price of a node, pending GPUs; and a node stepping down
from a block, which only a kind whose grants carry a hold can have."""

from __future__ import annotations

from burstmarket.clock import NS_PER_MS
from burstmarket.market.kinds import KINDS
from burstmarket.market.kinds.k8s import KUBERNETES
from burstmarket.market.kinds.vm import VM
from burstmarket.market.tick import run_tick
from burstmarket.market.tick.clearing import steps_down
from burstmarket.market.tick.tick_state import TickState
from tests.market.support import (
    HOUR,
    MINUTE,
    T0,
    USD,
    G,
    free_nodes,
    hold,
    job,
    k8s,
    tick_input,
    vm,
)


def test_the_registry_gives_kubernetes_clusters_the_kubernetes_rules() -> None:
    assert KINDS["k8s"] is KUBERNETES
    assert (KUBERNETES.window_ns, KUBERNETES.hold_ns, KUBERNETES.runs_jobs) == (
        2 * HOUR,
        HOUR,
        True,
    )
    assert KUBERNETES.grant_span_ns == 2 * HOUR  # the longer of the window and the hold


def test_a_gang_is_granted_under_a_2_hour_window_and_a_1_hour_hold() -> None:
    nodes = free_nodes(3)
    train = job("k", "train", 2)
    out = run_tick(tick_input([k8s("k")], nodes, jobs=[train]))
    n0, n1, n2 = nodes
    assert (n0.job, n1.job, n2.cluster) == ("train", "train", None)
    for n in (n0, n1):
        assert (n.granted_at, n.window_ends_at, n.hold_until) == (T0, T0 + 2 * HOUR, T0 + HOUR)
        assert (n.locked_price, n.commit_ends_at, n.idle_since) == (2 * USD, T0 + 2 * HOUR, None)
    (commitment,) = [e for e in out.ledger if e.kind == "commitment"]
    assert commitment.units == 2 * USD * 2 * G * (2 * HOUR // NS_PER_MS)
    assert train.state == "running"


def test_a_node_released_inside_its_hold_bills_the_rest_of_it_a_vm_node_nothing() -> None:
    k, a = k8s("k"), vm("a", 1, 2 * USD)
    n0, n1 = free_nodes(2)
    hold(n0, "k", window=T0 + 2 * HOUR, hold=T0 + HOUR)
    hold(n1, "a", granted=T0 - 2 * MINUTE, window=T0 + 58 * MINUTE)
    s = TickState(tick_input([k, a], [n0, n1], at=T0 + 20 * MINUTE))
    s.release(n0)
    s.release(n1)
    (row,) = s.books.ledger
    assert (row.kind, row.cluster, row.node) == ("hold", "k", "n0")
    assert (row.period_start, row.period_end, row.rate) == (T0 + 20 * MINUTE, T0 + HOUR, 2 * USD)
    assert [n0.cluster, n1.cluster] == [None, None]


def test_an_idle_node_bids_at_its_lock_dated_by_its_grant() -> None:
    k = k8s("k", limit=4 * USD)
    (n0,) = free_nodes(1)
    hold(n0, "k", granted=T0 - 3 * HOUR, locked=3 * USD, idle_since=T0 - MINUTE)
    s = TickState(tick_input([k], [n0]))
    assert KUBERNETES.served_ages(s, k, [n0]) == ({}, [])
    age, unit, demand = KUBERNETES.lone_unit(s, k, n0, {})
    assert age == (T0 - 3 * HOUR, 0)
    assert (unit.id, unit.nodes, unit.price) == ("n:n0", 1, 3 * USD)
    assert (demand.stands_for, demand.nodes) == ("idle", [n0])


def test_a_pending_job_that_does_not_fit_the_limit_never_holds_back_a_younger_one_that_does() -> (
    None
):
    k = k8s("k", limit=2 * USD)
    k.spend_limit = 2 * 8 * 2 * 2 * USD  # two nodes' worst case over the 2 h grant
    big = job("k", "big", 3, created=T0 - 2 * MINUTE, seq=1)
    small = job("k", "small", 2, created=T0 - MINUTE, seq=2)
    cheap = job("k", "cheap", 4, created=T0 - 3 * MINUTE, seq=0, limit=USD // 2)
    s = TickState(tick_input([k], free_nodes(4), jobs=[big, small, cheap]))
    units = KUBERNETES.new_units(s, k, [])
    # under the reserve it never clears and commits nothing: it takes no room
    assert [(u.id, u.nodes, u.price, age) for age, u, _ in units] == [
        ("p:k/cheap", 4, USD // 2, (T0 - 3 * MINUTE, 0)),
        ("p:k/small", 2, 2 * USD, (T0 - MINUTE, 2)),
    ]
    assert [d.job for _, _, d in units] == [cheap, small]
    assert s.refused == {"k": "spend-limit"}


def test_a_pending_job_bids_only_for_the_nodes_its_block_credit_does_not_cover() -> None:
    k = k8s("k")
    train = job("k", "train", 3)
    n0, n1 = free_nodes(2)
    s = TickState(tick_input([k], [n0, n1], jobs=[train]))
    s.credit[("k", "train")] = [n0]
    ((_, unit, _),) = KUBERNETES.new_units(s, k, [])
    assert unit.nodes == 2
    assert KUBERNETES.pending_gpus(s, k) == 2 * G
    assert KUBERNETES.declared_nodes(k, G) is None


def test_the_cap_is_the_running_jobs_live_limit_else_the_lock() -> None:
    k = k8s("k", limit=3 * USD)
    n0, n1 = free_nodes(2)
    train = job("k", "train", 1, state="running")
    hold(n0, "k", job="train", window=T0 + HOUR, locked=2 * USD)
    hold(n1, "k", window=T0 + HOUR, locked=2 * USD, idle_since=T0)
    s = TickState(tick_input([k], [n0, n1], jobs=[train]))
    assert KUBERNETES.window_cap(s, k, n0) == 3 * USD  # raised: the cap follows it
    assert KUBERNETES.live_price(s, k, n0) == 3 * USD
    assert KUBERNETES.window_cap(s, k, n1) == 2 * USD  # idle: its lock
    assert KUBERNETES.live_price(s, k, n1) == 2 * USD
    train.limit_price = USD // 2  # under the reserve (as after a step-down): the lock stays
    assert KUBERNETES.window_cap(s, k, n0) == 2 * USD
    assert KUBERNETES.live_price(s, k, n0) == USD // 2
    assert KUBERNETES.too_low_refusal(s, k) is None  # its jobs log their own


def test_a_node_under_its_window_with_no_hold_steps_down_only_for_a_kind_with_holds() -> None:
    k, a = k8s("k"), vm("a", 1, 2 * USD)
    n0, n1, n2 = free_nodes(3)
    hold(n0, "k", window=T0 + HOUR)  # stepped down from a block: no hold
    hold(n1, "k", window=T0 + HOUR, hold=T0 + 30 * MINUTE)  # a market grant
    hold(n2, "a", window=T0 + HOUR)  # a VM grant carries no hold
    s = TickState(tick_input([k, a], [n0, n1, n2]))
    assert [steps_down(s, s.clusters[n.cluster or ""], n) for n in (n0, n1, n2)] == [
        True,
        False,
        False,
    ]
    assert VM.hold_ns is None
