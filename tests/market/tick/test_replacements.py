"""Owed replacements (market/tick/replacements.py, docs/market.md "Nodes out of service"): a node
that went out of service inside its window is replaced by a free node, in index order, ahead of
every bid; the replacement inherits the grant (window, hold, lock) and the job, if it still runs.
Each case on a hand-made island, through run_tick."""

from __future__ import annotations

from burstmarket.clock import NS_PER_MS
from burstmarket.market.model import CORDONED, Node
from burstmarket.market.tick import run_tick
from tests.market.support import (
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


def out_of_service(n: Node, until: int) -> Node:
    n.service, n.owed_until = CORDONED, until
    return n


def test_a_running_jobs_lost_node_is_replaced_by_a_free_node_inheriting_its_grant() -> None:
    train = job("k", "train", 2, state="running")
    n0, n1, n2 = free_nodes(3)
    ends, held_until = T0 + 110 * MINUTE, T0 + 50 * MINUTE
    for n in (n0, n1):
        hold(n, "k", job="train", granted=T0 - 10 * MINUTE, window=ends, hold=held_until)
    out_of_service(n1, ends)
    out = run_tick(tick_input([k8s("k")], [n0, n1, n2], jobs=[train]))
    assert (n2.cluster, n2.job, n2.granted_at) == ("k", "train", T0 - 10 * MINUTE)
    assert (n2.window_ends_at, n2.hold_until, n2.locked_price) == (ends, held_until, 2 * USD)
    assert (n2.commit_price, n2.commit_ends_at, n2.idle_since) == (2 * USD, ends, None)
    # the lost node stays with its cluster, owed nothing any more
    assert (n1.cluster, n1.owed_until, n1.job, n1.window_ends_at) == ("k", None, None, None)
    replaced = [e for e in out.events if e.type == "NodeReplaced"]
    assert [(e.job, e.detail) for e in replaced] == [("train", "n2 replaces n1 (out of service)")]
    (commitment,) = [e for e in out.ledger if e.kind == "commitment"]
    assert commitment.units == 2 * USD * G * (110 * MINUTE // NS_PER_MS)
    assert train.state == "running"


def test_a_vm_nodes_replacement_serves_the_cluster_and_is_never_idle() -> None:
    n0, n1, n2 = free_nodes(3)
    hold(n0, "a", window=T0 + 50 * MINUTE, locked=3 * USD)
    out_of_service(hold(n1, "a", window=T0 + 50 * MINUTE, locked=3 * USD), T0 + 50 * MINUTE)
    out = run_tick(tick_input([vm("a", 2, 3 * USD)], [n0, n1, n2]))
    assert (n2.cluster, n2.job, n2.idle_since) == ("a", None, None)
    assert (n2.window_ends_at, n2.hold_until, n2.locked_price) == (T0 + 50 * MINUTE, None, 3 * USD)
    assert out.events == []
    assert out.pending_gpus == 0  # the two declared: one held, one replaced


def test_an_idle_nodes_replacement_keeps_its_grace_one_whose_job_ended_starts_one() -> None:
    n0, n1, n2, n3 = free_nodes(4)
    ends = T0 + 50 * MINUTE
    out_of_service(hold(n0, "k", window=ends, hold=ends, idle_since=T0 - 2 * MINUTE), ends)
    out_of_service(hold(n1, "k", job="done", window=ends, hold=ends), ends)  # the job finished
    run_tick(tick_input([k8s("k")], [n0, n1, n2, n3]))
    assert (n2.cluster, n2.job, n2.idle_since) == ("k", None, T0 - 2 * MINUTE)
    assert (n3.cluster, n3.job, n3.idle_since) == ("k", None, T0)
    assert n0.owed_until is None
    assert n1.owed_until is None


def test_with_no_free_node_a_node_the_auction_reclaims_goes_to_the_replacement_first() -> None:
    """No node is free: the replacement owed to b waits for the auction, which reclaims a's
    lapsed node; that node goes to b, ahead of c's higher bid for it."""
    n0, n1, n2 = free_nodes(3)
    hold(n0, "a", window=T0 - MINUTE)  # lapsed: it bids again at a's ceiling
    lost = hold(n1, "b", granted=T0 - 30 * MINUTE, window=T0 + 30 * MINUTE)
    out_of_service(lost, T0 + 30 * MINUTE)
    hold(n2, "b", window=T0 + 30 * MINUTE)
    a, b, c = vm("a", 1, 2 * USD), vm("b", 2, 2 * USD), vm("c", 1, 5 * USD)
    out = run_tick(tick_input([a, b, c], [n0, n1, n2]))
    assert (n0.cluster, n0.window_ends_at, n0.granted_at) == (
        "b",
        T0 + 30 * MINUTE,
        T0 - 30 * MINUTE,
    )
    assert n1.owed_until is None
    assert sorted((cl, n) for cl, n, _ in out.allocations) == [("b", "n0"), ("b", "n2")]
    assert out.pending_gpus == 2 * G  # a's unit and c's
