"""Base load delivery (market/tick/block_delivery.py, docs/market.md "Base load"): a block short
of nodes takes free nodes in index order, then market nodes in the order the rules give (its own
cluster's idle nodes, others' idle nodes on the cheapest standing bids, then busy ones, windows
included), billing no minimum hold for them; a block over its size hands an idle node to its
cluster's market holdings. Each case on a hand-made island, through run_tick."""

from __future__ import annotations

from burstmarket.market.tick import run_tick
from tests.market.support import (
    MINUTE,
    T0,
    USD,
    block,
    free_nodes,
    hold,
    job,
    k8s,
    tick_input,
    vm,
)


def test_a_new_block_takes_free_nodes_in_index_order() -> None:
    nodes = free_nodes(3)
    b = block("k", 2)
    out = run_tick(tick_input([k8s("k")], nodes, blocks=[b]))
    n0, n1, n2 = nodes
    for n in (n0, n1):
        assert (n.cluster, n.block, n.granted_at, n.idle_since) == ("k", "k-bl1", T0, T0)
    assert n2.cluster is None
    assert sorted(out.allocations) == [("k", "n0", "base_load"), ("k", "n1", "base_load")]


def test_a_short_block_takes_its_own_idle_node_then_the_cheapest_idle_then_the_cheapest_busy() -> (
    None
):
    """No node is free. The block of k needs 3: k's own idle node, then b's idle node (1.50),
    then, of the busy ones, b's running job at 2.00 before a's VM node at 5.00 (a VM node is the
    demand itself: always busy). The job goes back to pending; no minimum hold is billed."""
    n0, n1, n2, n3 = free_nodes(4)
    window, hold_until = T0 + 30 * MINUTE, T0 + 30 * MINUTE
    hold(n0, "a", window=window, locked=5 * USD)
    hold(n1, "b", window=window, hold=hold_until, locked=USD * 3 // 2, idle_since=T0 - MINUTE)
    hold(n2, "b", job="jb", window=window, hold=hold_until)
    hold(n3, "k", window=window, hold=hold_until, idle_since=T0 - MINUTE)
    jb = job("b", "jb", 1, state="running")
    clusters = [vm("a", 1, 5 * USD), k8s("b"), k8s("k")]
    out = run_tick(tick_input(clusters, [n0, n1, n2, n3], jobs=[jb], blocks=[block("k", 3)]))
    assert [(n.id, n.cluster, n.block) for n in (n0, n1, n2, n3)] == [
        ("n0", "a", None),
        ("n1", "k", "k-bl1"),
        ("n2", "k", "k-bl1"),
        ("n3", "k", "k-bl1"),
    ]
    assert (n1.granted_at, n1.window_ends_at, n1.hold_until) == (T0, None, None)
    assert jb.state == "pending"
    preempted, outbid = out.events
    assert (preempted.job, preempted.type, preempted.detail) == (
        "jb",
        "Preempted",
        "a base load block being delivered took node n2",
    )
    assert (outbid.job, outbid.type) == ("jb", "Outbid")  # pending again, under a's 5.00
    assert [e for e in out.ledger if e.kind == "hold"] == []


def test_of_equal_bids_the_younger_grant_goes_to_the_block_first() -> None:
    n0, n1 = free_nodes(2)
    hold(n0, "a", granted=T0 - 20 * MINUTE, window=T0 + 40 * MINUTE, locked=3 * USD)
    hold(n1, "c", granted=T0 - 10 * MINUTE, window=T0 + 50 * MINUTE, locked=3 * USD)
    clusters = [vm("a", 1, 3 * USD), vm("c", 1, 3 * USD), k8s("k")]
    run_tick(tick_input(clusters, [n0, n1], blocks=[block("k", 1)]))
    assert (n0.cluster, n1.cluster, n1.block) == ("a", "k", "k-bl1")


def test_a_block_over_its_size_hands_an_idle_node_to_its_clusters_market_holdings() -> None:
    """A node back from the operator leaves the block one over its size: its last idle node
    becomes market capacity of the cluster, locked at the cluster's limit price, committing
    from the next tick; it keeps it, bidding at that lock."""
    b = block("k", 1)
    n0, n1 = free_nodes(2)
    for n in (n0, n1):
        n.cluster, n.block, n.granted_at, n.idle_since = "k", b.id, T0, T0 - 10 * MINUTE
    at = T0 + MINUTE
    out = run_tick(tick_input([k8s("k", limit=2 * USD)], [n0, n1], at=at, blocks=[b]))
    assert (n0.block, n1.block) == ("k-bl1", None)
    assert (n1.cluster, n1.idle_since, n1.locked_price) == ("k", at, 2 * USD)
    assert (n1.commit_price, n1.commit_ends_at) == (2 * USD, at)
    assert sorted(out.allocations) == [("k", "n0", "base_load"), ("k", "n1", "market")]
