"""Jobs smaller than one node on the cluster's base load block (market/tick/packing.py,
docs/market.md "Small jobs on the block"): packed by GPU count, beside other small jobs first,
never bidding; a job that cannot be placed waits with its reason (one event when that starts);
one whose node left the block is requeued. Each case on a hand-made island, through run_tick."""

from __future__ import annotations

from burstmarket.market.model import CORDONED, Block, Node
from burstmarket.market.tick import run_tick
from tests.market.support import (
    MINUTE,
    T0,
    G,
    block,
    free_nodes,
    job,
    k8s,
    small_job,
    tick_input,
)


def in_block(nodes: list[Node], b: Block, idle_since: int = T0) -> list[Node]:
    for n in nodes:
        n.cluster, n.block, n.granted_at, n.idle_since = b.cluster, b.id, b.starts_at, idle_since
    return nodes


def test_small_jobs_go_beside_other_small_jobs_first_then_on_an_empty_node() -> None:
    b = block("k", 2)
    n0, n1 = in_block(free_nodes(2), b)
    s1 = small_job("k", "s1", 2, 2, created=T0 - 3 * MINUTE)  # 4 GPUs
    s2 = small_job("k", "s2", 2, 2, created=T0 - 2 * MINUTE)  # 4 GPUs: beside s1
    s3 = small_job("k", "s3", 1, 2, created=T0 - MINUTE)  # 2 GPUs: n0 is full
    out = run_tick(tick_input([k8s("k", packing=True)], [n0, n1], jobs=[s1, s2, s3], blocks=[b]))
    assert [(j.state, j.node) for j in (s1, s2, s3)] == [
        ("running", "n0"),
        ("running", "n0"),
        ("running", "n1"),
    ]
    assert [(e.job, e.type, e.detail) for e in out.events] == [
        ("s1", "Provisioned", "placed on the base load block: 4 GPUs of node n0"),
        ("s2", "Provisioned", "placed on the base load block: 4 GPUs of node n0"),
        ("s3", "Provisioned", "placed on the base load block: 2 GPUs of node n1"),
    ]
    assert (n0.idle_since, n1.idle_since) == (None, None)
    assert out.pending_gpus == 0  # small jobs are never burst demand
    assert out.clearing.stats.gpus == 0


def test_a_job_that_cannot_be_placed_waits_with_its_reason_said_once() -> None:
    too_big = small_job("big", "j", 3, 4)  # 12 GPUs, more than a node's 8
    off = small_job("off", "j", 1, 2)
    no_block = small_job("none", "j", 1, 2)
    blocks = [block("big", 1), block("off", 1)]
    n0, n1 = free_nodes(2)
    nodes = [*in_block([n0], blocks[0]), *in_block([n1], blocks[1])]
    clusters = [k8s("big", packing=True), k8s("off"), k8s("none", packing=True)]
    jobs = [too_big, off, no_block]
    out = run_tick(tick_input(clusters, nodes, jobs=jobs, blocks=blocks))
    assert [(e.cluster, e.type) for e in out.events] == [  # the clusters in id order
        ("big", "ReservedTooSmall"),
        ("none", "ReservedBusy"),
        ("off", "PackingDisabled"),
    ]
    assert out.events[0].detail == (
        f"3 pods of 4 GPUs are 12 GPUs, more than one node's {G}: "
        "resubmit it with whole-node pods or with fewer pods"
    )
    assert out.events[1].detail == "no live base load block: it waits until one starts"
    assert [(j.state, j.reason) for j in jobs] == [
        ("pending", "ReservedTooSmall"),
        ("pending", "PackingDisabled"),
        ("pending", "ReservedBusy"),
    ]
    again = run_tick(tick_input(clusters, nodes, at=T0 + MINUTE, jobs=jobs, blocks=blocks))
    assert again.events == []


def test_a_job_waits_while_the_block_has_no_room_for_its_gpus() -> None:
    b = block("k", 1)
    (n0,) = in_block(free_nodes(1), b)
    full = small_job("k", "full", 4, 2)  # all 8 GPUs of n0
    full.state, full.node = "running", "n0"
    more = small_job("k", "more", 1, 2)
    out = run_tick(tick_input([k8s("k", packing=True)], [n0], jobs=[full, more], blocks=[b]))
    assert (full.state, full.node) == ("running", "n0")
    assert (more.state, more.reason) == ("pending", "ReservedBusy")
    assert [(e.job, e.detail) for e in out.events] == [
        ("more", "the block has no 2 GPUs free for it: it waits")
    ]


def test_a_job_whose_node_left_the_block_is_requeued_as_a_new_request() -> None:
    b = block("k", 2)
    n0, n1 = in_block(free_nodes(2), b)
    n0.service = CORDONED  # out of service: its pods are evicted, never moved
    s1 = small_job("k", "s1", 1, 4, created=T0 - 30 * MINUTE)
    s1.state, s1.node = "running", "n0"
    at = T0 + MINUTE
    out = run_tick(tick_input([k8s("k", packing=True)], [n0, n1], at=at, jobs=[s1], blocks=[b]))
    assert [(e.type, e.detail) for e in out.events] == [
        ("Requeued", "node n0 left the base load block"),
        ("Provisioned", "placed on the base load block: 4 GPUs of node n1"),
    ]
    assert (s1.state, s1.node, s1.created_at) == ("running", "n1", at)


def test_a_node_kept_for_a_waiting_whole_node_job_goes_to_a_small_job_only_after_the_grace() -> (
    None
):
    """The block's one node counts toward a waiting 2-node job. A small job that waited less
    than the idle grace waits too; one that waited as long takes the node, which sat empty as
    long, and the whole-node job bids for both its nodes again."""
    b = block("k", 1)
    (n0,) = in_block(free_nodes(1), b, idle_since=T0 - 10 * MINUTE)
    whole = job("k", "whole", 2, created=T0 - 10 * MINUTE)
    fresh = small_job("k", "small", 1, 2, created=T0 - MINUTE)
    out = run_tick(tick_input([k8s("k", packing=True)], [n0], jobs=[whole, fresh], blocks=[b]))
    assert (fresh.state, fresh.reason) == ("pending", "ReservedBusy")
    assert out.pending_gpus == 1 * G  # the whole-node job bids for the node it lacks
    waited = small_job("k", "small", 1, 2, created=T0 - 5 * MINUTE)
    (n0,) = in_block(free_nodes(1), b, idle_since=T0 - 10 * MINUTE)
    out = run_tick(tick_input([k8s("k", packing=True)], [n0], jobs=[whole, waited], blocks=[b]))
    assert (waited.state, waited.node) == ("running", "n0")
    assert whole.state == "pending"
    assert out.pending_gpus == 2 * G
