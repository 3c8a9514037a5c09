"""Small islands built by hand for the pure tick's rules (tests/market/kinds, tests/market/tick):
clusters of each kind, nodes placed where a case needs them, jobs, blocks, and the tick's input
over them (`TickState(tick_input(...))`, `run_tick(tick_input(...))`). Every figure a test
checks is worked out from these by hand."""

from __future__ import annotations

from collections.abc import Sequence

from burstmarket.clock import NS_PER_HOUR, NS_PER_S
from burstmarket.market.model import LIVE, Block, Cluster, Island, Job, Node, Tranche
from burstmarket.market.tick import TickInput
from burstmarket.states import JobState
from tests.constants import T0, USD

G = 8
INTERVAL = 300 * NS_PER_S
MINUTE = 60 * NS_PER_S
HOUR = NS_PER_HOUR


def vm(cid: str, nodes: int, ceiling: int, since: int = T0, seq: int = 0) -> Cluster:
    """A VM cluster declaring `nodes` nodes at `ceiling`, as one tranche."""
    demand = [Tranche(nodes, since, seq)] if nodes else []
    return Cluster(cid, "acct", "i", "vm", nodes * G, ceiling, demand, None, None, None, None)


def k8s(cid: str, limit: int | None = 2 * USD, packing: bool = False) -> Cluster:
    return Cluster(cid, "acct", "i", "k8s", 0, None, [], limit, None, None, None, packing=packing)


def job(
    cluster: str,
    name: str,
    nodes: int,
    state: JobState = "pending",
    created: int = T0,
    seq: int = 0,
    limit: int | None = None,
) -> Job:
    return Job(cluster, name, nodes, None, limit, state, created, None, None, None, False, seq)


def small_job(cluster: str, name: str, pods: int, gpus_per_pod: int, created: int = T0) -> Job:
    """A job of `pods` pods of `gpus_per_pod` GPUs each, smaller than one node each."""
    j = job(cluster, name, 0, created=created)
    j.pods, j.gpus_per_pod = pods, gpus_per_pod
    return j


def free_nodes(count: int) -> list[Node]:
    return [
        Node("i", f"n{k}", k, None, None, None, None, None, None, None, None, None)
        for k in range(count)
    ]


def hold(
    n: Node,
    cluster: str,
    job: str | None = None,
    granted: int = T0,
    window: int | None = None,
    hold: int | None = None,
    locked: int = 2 * USD,
    idle_since: int | None = None,
) -> Node:
    """`n` becomes a market node of `cluster` (running `job`), granted at `granted`."""
    n.cluster, n.job, n.granted_at = cluster, job, granted
    n.window_ends_at, n.hold_until, n.locked_price, n.idle_since = window, hold, locked, idle_since
    return n


def block(cluster: str, nodes: int, hours: int = 10, starts: int = T0) -> Block:
    """A live block of `nodes` nodes at 3 USD from `starts`, billed up to its start."""
    ends = starts + hours * NS_PER_HOUR
    return Block(
        f"{cluster}-bl1", cluster, "i", nodes, 3 * USD, starts, ends, LIVE, None, starts, None
    )


def tick_input(
    clusters: Sequence[Cluster],
    nodes: list[Node],
    at: int = T0,
    jobs: Sequence[Job] = (),
    blocks: Sequence[Block] = (),
    reserve: int = USD,
) -> TickInput:
    return TickInput(
        island=Island("i", G, len(nodes), reserve, None),
        tick=1 + (at - T0) // INTERVAL,
        time=at,
        interval_ns=INTERVAL,
        clusters={c.id: c for c in clusters},
        nodes=nodes,
        jobs=[j for j in jobs if j.state != "finished"],
        balances={"acct": 10**30},
        spent={},
        rates={},
        blocks=[b for b in blocks if b.state == LIVE],
    )
