"""Base load blocks and out-of-service nodes in the pure tick: cancellation after 24 h of a
balance at or below zero, folding a running market job into its block, an owed replacement
lapsing with its window, and node count conserved through all of it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.clock import NS_PER_HOUR, NS_PER_MS, NS_PER_S
from burstmarket.market.model import (
    CANCELLED,
    CORDONED,
    LIVE,
    Block,
    Cluster,
    Island,
    Job,
    Node,
)
from burstmarket.market.tick import TickInput, TickOutput, run_tick
from tests.conftest import examples
from tests.constants import T0, USD
from tests.market.test_tick import vm

G = 8
INTERVAL = 300 * NS_PER_S


def k8s(cid: str, limit: int | None = 2 * USD, account: str = "acct") -> Cluster:
    return Cluster(cid, account, "i", "k8s", 0, None, [], limit, None, None, None)


def nodes(count: int) -> list[Node]:
    return [
        Node("i", f"i-n{k}", k, None, None, None, None, None, None, None, None, None)
        for k in range(count)
    ]


def job(cluster: str, name: str, count: int, created: int = 0, cls: str | None = None) -> Job:
    return Job(cluster, name, count, cls, None, "pending", T0 + created, None, None, None, False)


def block(cluster: str, count: int, hours: int = 10) -> Block:
    return Block(
        f"{cluster}-bl1",
        cluster,
        "i",
        count,
        3 * USD,
        T0,
        T0 + hours * NS_PER_HOUR,
        LIVE,
        None,
        T0,
        None,
    )


def run(
    clusters: list[Cluster],
    island: list[Node],
    at: int,
    jobs: list[Job] | None = None,
    blocks: list[Block] | None = None,
    balance: int = 10**30,
) -> TickOutput:
    return run_tick(
        TickInput(
            island=Island("i", G, len(island), USD, None),
            tick=1 + (at - T0) // INTERVAL,
            time=at,
            interval_ns=INTERVAL,
            clusters={c.id: c for c in clusters},
            nodes=island,
            jobs=[j for j in jobs or [] if j.state != "finished"],
            balances={c.account: balance for c in clusters},
            spent={},
            rates={},
            blocks=[b for b in blocks or [] if b.state == LIVE],
        )
    )


def test_a_balance_at_or_below_zero_for_24_hours_cancels_the_block_at_that_moment() -> None:
    island = nodes(2)
    k = k8s("k")
    b = block("k", 2, hours=48)
    jobs = [job("k", "steady", 1)]
    first = T0 + 120 * NS_PER_S
    run([k], island, first, jobs, [b], balance=0)
    assert b.negative_since == first
    assert jobs[0].state == "running"  # a live block keeps running on a negative balance
    assert b.billed_until == T0 + 2 * INTERVAL  # steps bill as they start, like a tick
    cancel_at = first + 24 * NS_PER_HOUR  # inside the step that starts at T0 + 24 h
    out = run([k], island, cancel_at + 60 * NS_PER_S, jobs, [b], balance=0)
    assert (b.state, b.ended_at, b.billed_until) == (CANCELLED, cancel_at, cancel_at)
    assert all(n.cluster is None and n.block is None for n in island)
    assert jobs[0].state == "pending"
    rows = [e for e in out.ledger if e.kind == "base_load"]
    # everything from the last billed step up to the cancel moment, nothing after it
    billed = sum(e.units for e in rows)
    assert billed == 3 * USD * 2 * G * ((cancel_at - (T0 + 2 * INTERVAL)) // NS_PER_MS)
    undone = rows[-1]  # the rest of the step billed as it started
    assert undone.units < 0
    assert (undone.period_start, undone.period_end) == (cancel_at, T0 + 24 * NS_PER_HOUR + INTERVAL)


def test_a_running_market_job_is_folded_into_the_block_where_it_stands() -> None:
    island = nodes(3)
    k = k8s("k")
    jobs = [job("k", "train", 1)]
    run([k], island, T0, jobs)
    (market,) = [n for n in island if n.cluster == "k"]
    b = block("k", 1)
    out = run([k], island, T0 + INTERVAL, jobs, [b])
    assert market.block == b.id
    assert market.job == "train"
    assert [n.cluster for n in island].count("k") == 1  # the idle block node went back
    assert out.rates == {}  # market billing stopped
    assert "FoldedIntoBlock" in [e.type for e in out.events]
    assert any(e.kind == "release" for e in out.ledger)  # its commitment is released


def test_an_owed_replacement_lapses_with_the_window() -> None:
    island = nodes(1)
    k = k8s("k")
    jobs = [job("k", "train", 1)]
    run([k], island, T0, jobs)
    lost = island[0]
    window = lost.window_ends_at
    assert window is not None
    lost.service, lost.owed_until = CORDONED, window
    out = run([k], island, T0 + INTERVAL, jobs)
    assert lost.owed_until == window  # nowhere to put a replacement yet
    assert out.clearing.stats.gpus == 0
    run([k], island, window, jobs)
    assert lost.owed_until is None
    assert lost.cluster == "k"  # it stays with the cluster, cordoned, until uncordoned


@settings(max_examples=examples(40), deadline=None)
@given(
    size=st.integers(2, 6),
    block_nodes=st.integers(1, 3),
    sizes=st.lists(st.integers(1, 3), min_size=1, max_size=5),
    cordon=st.lists(st.integers(0, 5), max_size=3),
    ticks=st.integers(1, 6),
)
def test_node_count_is_conserved_and_no_node_is_held_twice(
    size: int, block_nodes: int, sizes: list[int], cordon: list[int], ticks: int
) -> None:
    island = nodes(size)
    a, other = k8s("a"), k8s("other", 3 * USD)
    jobs = [
        job("a" if i % 2 else "other", f"j{i}", count, created=i, cls="high" if i % 3 else None)
        for i, count in enumerate(sizes)
    ]
    blocks = [block("a", min(block_nodes, size))]
    for step in range(ticks):
        at = T0 + step * 3600 * NS_PER_S
        if step == 1:
            for idx in cordon:
                n = island[idx % size]
                if n.service is None:
                    n.service = CORDONED
                    n.owed_until = n.window_ends_at if n.window_open(at) else None
                    n.commit_price = n.commit_ends_at = None
        out = run([a, other], island, at, jobs, blocks)
        held = [(c, n) for c, n, _ in out.allocations]
        assert len({n for _, n in held}) == len(held)  # never double-granted
        in_service = [n for n in island if n.service is None]
        assert len(held) == sum(1 for n in in_service if n.cluster is not None)
        for j in jobs:
            placed = [n for n in in_service if n.cluster == j.cluster and n.job == j.name]
            if j.state == "running":
                assert len(placed) <= j.nodes
            else:
                assert placed == []
        assert sum(1 for _, _, kind in out.allocations if kind == "base_load") <= block_nodes
        assert out.clearing.stats.gpus == G * sum(
            1 for _, _, kind in out.allocations if kind != "base_load"
        )


def test_a_step_down_with_no_price_is_locked_at_the_lowest_rate_the_tick_clears() -> None:
    """Two VM bids at 5 and 4 win the two market nodes over one at 3: each pays 3. The block's
    node steps down at the end of its term, late, with no price declared: locked at 3, not at
    the reserve, and billed from the end of the term at that lock."""
    island = nodes(3)
    k = k8s("k", limit=None)
    bidders = [vm("a", G, 5 * USD), vm("b", G, 4 * USD), vm("c", G, 3 * USD)]
    b = block("k", 1, hours=1)
    jobs = [job("k", "steady", 1)]
    run([k, *bidders], island, T0, jobs, [b])
    assert jobs[0].state == "running"
    late = b.ends_at + 120 * NS_PER_S
    out = run([k, *bidders], island, late, jobs, [b])
    (stepped,) = [n for n in island if n.cluster == "k"]
    assert stepped.block is None
    assert stepped.locked_price == 3 * USD
    assert {c: cc.rate for c, cc in out.clearing.clusters.items() if c != "k"} == {
        "a": 3 * USD,
        "b": 3 * USD,
    }
    (since_end,) = [e for e in out.ledger if e.kind == "charge" and e.node == stepped.id]
    assert (since_end.period_start, since_end.period_end) == (b.ends_at, late)
    assert since_end.rate == 3 * USD


def test_a_gang_grant_commits_the_worst_case_of_all_its_nodes_with_their_gpus() -> None:
    island = nodes(4)
    c = k8s("kg", limit=2 * USD)
    out = run([c], island, T0, jobs=[job("kg", "train", 3)])
    commitment = next(e for e in out.ledger if e.kind == "commitment")
    assert commitment.gpus == 3 * G
    assert commitment.units == 2 * USD * 3 * G * (2 * NS_PER_HOUR // NS_PER_MS)


def test_a_block_folds_its_own_running_job_before_it_takes_another_tenants_node() -> None:
    """docs/market.md "Base load": the island is full, a's job on one node, b's VM on the other
    inside its window. a's one-node block comes from a's own running work: the job folds in
    where it stands, and b's node is neither reclaimed nor granted again."""
    island = nodes(2)
    a, b = k8s("a"), vm("b", G, 3 * USD)
    jobs = [job("a", "jz", 1)]
    run([a, b], island, T0, jobs)
    (theirs,) = [n for n in island if n.cluster == "b"]
    (ours,) = [n for n in island if n.cluster == "a"]
    granted, window = theirs.granted_at, theirs.window_ends_at
    bl = block("a", 1)
    out = run([a, b], island, T0 + INTERVAL, jobs, [bl])
    assert (ours.block, ours.job) == (bl.id, "jz")
    assert "FoldedIntoBlock" in [e.type for e in out.events if e.job == "jz"]
    assert (theirs.cluster, theirs.granted_at, theirs.window_ends_at) == ("b", granted, window)
    assert theirs.id not in {n.id for n in out.nodes}  # untouched by the tick
    assert out.rates == {"b": USD}  # a's market billing stopped, b's goes on


def test_a_block_counts_its_day_from_the_tick_whose_billing_takes_the_balance_to_zero() -> None:
    """The balance covers exactly the block's first step: the tick that bills it leaves the
    balance at zero, so the 24 h run from that tick, and the block is cancelled exactly a day
    later (not a tick later)."""
    island = nodes(1)
    k = k8s("k")
    b = block("k", 1, hours=48)
    step = 3 * USD * G * (INTERVAL // NS_PER_MS)  # one 5-minute step of the block
    run([k], island, T0, [], [b], balance=step)
    assert b.billed_until == T0 + INTERVAL
    assert b.negative_since == T0
    run([k], island, T0 + 24 * NS_PER_HOUR, [], [b], balance=-step)
    assert (b.state, b.ended_at) == (CANCELLED, T0 + 24 * NS_PER_HOUR)


def test_a_node_back_from_the_operator_bills_its_increments_from_its_return() -> None:
    """A node whose hour went to its replacement comes back idle at 41:10 holding from its
    return (market/desks/node_actions.py); released after the idle grace at 46:10 it owes
    nothing more: its 5-minute increments count from 41:10, not from its grant at 00:10."""
    (n,) = island = nodes(1)
    k = k8s("k")
    back = T0 + (41 * 60 + 10) * NS_PER_S
    n.cluster, n.granted_at, n.locked_price = "k", T0 + 10 * NS_PER_S, 2 * USD
    n.hold_until = n.idle_since = back
    out = run([k], island, back + 300 * NS_PER_S, [])
    assert n.cluster is None  # released after the grace
    assert [e for e in out.ledger if e.kind == "hold"] == []
