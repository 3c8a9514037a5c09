"""The tick's state holder: after any sequence of its transitions, its indices (free nodes, each
cluster's market nodes, each block's nodes, the nodes running each job, the replacements owed,
jobs by cluster) say exactly what a full rescan of the island says."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.clock import NS_PER_HOUR, NS_PER_S
from burstmarket.market.model import (
    BILLING_HOLD,
    CORDONED,
    LIVE,
    Block,
    Cluster,
    Island,
    Job,
    Node,
    priority,
)
from burstmarket.market.tick.tick_state import TickState
from burstmarket.market.tick.types import TickInput
from tests.conftest import examples
from tests.constants import T0, USD

G = 8
CLUSTERS = ("v", "k1", "k2")
KINDS = {"v": "vm", "k1": "k8s", "k2": "k8s"}
BLOCKS = {"k1": "k1-bl", "k2": "k2-bl"}


def place(n: Node) -> tuple[str, str | None]:
    """Where a node is, read off its fields alone."""
    if n.service is not None:
        return ("out", n.cluster)
    if n.block is not None:
        return ("block", n.block)
    if n.cluster is not None:
        return ("market", n.cluster)
    return ("free", None)


@st.composite
def islands(draw: st.DrawFn) -> TickState:
    clusters = {
        c: Cluster(c, "acct", "i", KINDS[c], 0, 2 * USD, [], 2 * USD, None, None, None)
        for c in CLUSTERS
    }
    seq = itertools.count()
    jobs = [
        Job(
            c,
            f"j{next(seq)}",
            draw(st.integers(1, 3)),
            draw(st.sampled_from([None, "high", "low"])),
            None,
            draw(st.sampled_from(["pending", "running"])),
            T0 - draw(st.integers(0, 2)),
            None,
            None,
            None,
            False,
            next(seq),
        )
        for c in ("k1", "k2")
        for _ in range(draw(st.integers(0, 3)))
    ]
    blocks = [
        Block(b, c, "i", 2, USD, T0, T0 + NS_PER_HOUR, LIVE, None, T0, None)
        for c, b in BLOCKS.items()
    ]
    nodes = []
    for k in range(draw(st.integers(1, 12))):
        n = Node("i", f"n{k}", k, None, None, None, None, None, None, None, None, None)
        where = draw(st.sampled_from(["free", "market", "block", "out"]))
        if where != "free":
            n.cluster = draw(st.sampled_from(CLUSTERS if where == "market" else ("k1", "k2")))
            n.granted_at, n.locked_price = T0 - NS_PER_HOUR, 2 * USD
            n.window_ends_at = T0 + draw(st.sampled_from([-1, 1])) * NS_PER_HOUR
            mine = [j.name for j in jobs if j.cluster == n.cluster and j.state == "running"]
            n.job = draw(st.sampled_from([None, *mine]))
        if where == "block":
            n.block = BLOCKS[n.cluster or ""]
        if where == "out":
            n.service = CORDONED
            n.owed_until = draw(st.sampled_from([None, T0 - 1, T0 + NS_PER_HOUR]))
        nodes.append(n)
    return TickState(
        TickInput(
            island=Island("i", G, len(nodes), USD, None),
            tick=1,
            time=T0,
            interval_ns=300 * NS_PER_S,
            clusters=clusters,
            nodes=nodes,
            jobs=jobs,
            balances={"acct": 10**30},
            spent={},
            rates={},
            blocks=blocks,
        )
    )


def transitions(s: TickState, draw: st.DrawFn) -> None:
    """One transition the state's rules allow, drawn at random."""
    nodes = s.inp.nodes
    free = [n for n in nodes if place(n)[0] == "free"]
    market = [n for n in nodes if place(n)[0] == "market"]
    in_block = [n for n in nodes if place(n)[0] == "block"]
    owed = [n for n in nodes if n.owed_until is not None]
    jobs = list(s.jobs.values())
    choices = ["hold_billing"]
    choices += ["grant"] if free else []
    choices += ["release"] if market else []
    choices += ["free", "leave_block"] if in_block else []
    joining = free + [n for n in market if n.cluster in BLOCKS]
    choices += ["join_block"] if joining else []
    choices += ["settle_owed"] if owed else []
    choices += ["assign", "start", "preempt"] if jobs else []
    move = draw(st.sampled_from(choices))
    if move == "grant":
        n = draw(st.sampled_from(free))
        c = draw(st.sampled_from(CLUSTERS))
        mine = [j.name for j in jobs if j.cluster == c]
        s.grant(n, c, draw(st.sampled_from([None, *mine])))
        n.granted_at = s.now
    elif move == "release":
        s.release(draw(st.sampled_from(market)), minimum=draw(st.booleans()))
    elif move == "free":
        s.free(draw(st.sampled_from(in_block)))
    elif move == "leave_block":
        s.leave_block(draw(st.sampled_from(in_block)))
    elif move == "join_block":
        n = draw(st.sampled_from(joining))
        cluster = n.cluster or draw(st.sampled_from(sorted(BLOCKS)))
        s.join_block(s.blocks[cluster], n)
    elif move == "settle_owed":
        s.settle_owed(draw(st.sampled_from(owed)))
    elif move == "hold_billing":
        s.hold_billing(s.clusters[draw(st.sampled_from(CLUSTERS))])
    else:
        job = draw(st.sampled_from(jobs))
        if move == "assign":
            idle = [n for n in market + in_block if n.cluster == job.cluster and n.job is None]
            s.assign(
                job, draw(st.lists(st.sampled_from(idle), unique_by=lambda n: n.id)) if idle else []
            )
        elif move == "start":
            s.start(job, s.clusters[job.cluster], "drawn")
        else:
            s.preempt(job, "drawn")


def assert_indices_match_a_rescan(s: TickState, entered: dict[str, int]) -> None:
    nodes = s.inp.nodes
    assert s.free_nodes(len(nodes)) == [n for n in nodes if place(n)[0] == "free"]
    assert s.free_count() == sum(1 for n in nodes if place(n)[0] == "free")
    for c in s.clusters.values():
        mine = [n for n in nodes if place(n) == ("market", c.id)]
        assert s.held(c.id) == sorted(mine, key=lambda n: entered[n.id])  # the order they came
        owed = [
            n
            for n in nodes
            if place(n) == ("out", c.id) and n.owed(s.now) and s.refused.get(c.id) != BILLING_HOLD
        ]
        assert s.owed_count(c.id) == len(owed)
        jobs = sorted((j for j in s.inp.jobs if j.cluster == c.id), key=lambda j: j.age)
        for state in ("pending", "running"):
            assert s.jobs_of(c, state) == [j for j in jobs if j.state == state]
        ranked = sorted(jobs, key=lambda j: (-priority(j.priority_class), j.age))
        assert s.waiting(c) == [j for j in ranked if j.state == "pending"]
    for b in s.blocks.values():
        mine = [n for n in nodes if place(n) == ("block", b.id)]
        assert s.block_nodes(b) == sorted(mine, key=lambda n: entered[n.id])
        assert s.block_size(b) == len(mine)
    for job in s.jobs.values():
        on = [
            n for n in nodes if n.service is None and (n.cluster, n.job) == (job.cluster, job.name)
        ]
        assert s.placed(job) == len(on)
        market, block = s.running_on(job)
        assert market == [n for n in s.held(job.cluster) if n.job == job.name]
        assert block == [n for n in s.block_nodes(s.blocks[job.cluster]) if n.job == job.name]
        owed = [n for n in s.owed() if (n.cluster, n.job) == (job.cluster, job.name)]
        assert s.owed_to(job) == len(owed)
    expected = [
        n
        for n in nodes
        if place(n)[0] == "out"
        and n.owed(s.now)
        and n.cluster is not None
        and s.refused.get(n.cluster) != BILLING_HOLD
    ]
    assert s.owed() == expected


@settings(max_examples=examples(200), deadline=None)
@given(s=islands(), data=st.data())
def test_after_any_transitions_the_indices_equal_a_full_rescan(
    s: TickState, data: st.DataObject
) -> None:
    stamp = itertools.count()
    entered = {n.id: next(stamp) for n in s.inp.nodes}
    assert_indices_match_a_rescan(s, entered)
    for _ in range(data.draw(st.integers(1, 25))):
        before = {n.id: place(n) for n in s.inp.nodes}
        transitions(s, data.draw)
        for n in s.inp.nodes:  # a node that changed place came last to its new place
            if place(n) != before[n.id]:
                entered[n.id] = next(stamp)
        assert_indices_match_a_rescan(s, entered)
