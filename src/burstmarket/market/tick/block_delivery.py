"""Base load delivery (docs/market.md "Base load"): what a block is owed goes ahead of every
bid."""

from __future__ import annotations

from collections.abc import Iterator
from heapq import heapify, heappop, heappush

from burstmarket.market.kinds import KINDS
from burstmarket.market.model import Block, Job, Node
from burstmarket.market.tick.placement import fold
from burstmarket.market.tick.tick_state import TickState


def deliver(s: TickState) -> None:
    """A block short of in-service nodes takes free nodes, then its own cluster's running work
    on market nodes (folded in where it stands), then other market nodes (`_Victims`). A block
    over its size (a node back from the operator) hands an idle node to its cluster's market
    holdings."""
    for b in s.live_blocks():
        idle = [n for n in s.block_nodes(b) if s.empty(n)]
        while s.block_size(b) > b.nodes and idle:
            _leave(s, b, idle.pop())
        own = _running_work(s, b)  # a generator: nothing is read until a node is asked of it
        victims: _Victims | None = None
        while s.block_size(b) < b.nodes:
            free = s.free_nodes(1)
            if free:
                n = free[0]  # placement hands it back if a running job folds in instead
            elif (running := next(own, None)) is not None:
                # no free node left: the cluster's own running work is where the block's nodes
                # come from; taking anyone else's would reclaim a node (inside its window,
                # maybe) only for placement to free it again when that work folds in
                fold(s, b, *running)
                continue
            else:
                victims = victims or _Victims(s, b)
                victim = victims.pop()
                if victim is None:
                    break
                _seize(s, victim, victims)
                n = victim
            s.join_block(b, n)
            n.granted_at, n.idle_since = s.now, s.now


def _running_work(s: TickState, b: Block) -> Iterator[tuple[Job, Node]]:
    """The market nodes of the block's cluster's running jobs, oldest job first: the order
    placement folds them in."""
    for job in s.jobs_of(s.clusters[b.cluster], "running"):
        for m in s.running_on(job)[0]:
            yield job, m


def _leave(s: TickState, b: Block, n: Node) -> None:
    """An idle block node beyond the block's size: idle market capacity of the cluster,
    released after the idle grace unless a job takes it."""
    c = s.clusters[b.cluster]
    s.leave_block(n)
    n.idle_since = s.now
    n.locked_price = n.commit_price = c.limit_price
    n.commit_ends_at = s.now  # the next tick commits its next hour, or releases it


def _seize(s: TickState, n: Node, victims: _Victims) -> None:
    """The market takes the node for a block: no minimum hold is billed (the market broke the
    window), the gang on it goes back to pending (its nodes left idle move up the order)."""
    job = s.job_on(n)
    s.release(n, minimum=False)
    if job is not None:
        gang = s.running_on(job)[0]
        s.preempt(job, f"a base load block being delivered took node {n.id}")
        victims.push(gang)


class _Victims:
    """The market nodes block `b` may take once its cluster's running work is folded in (so its
    cluster's market nodes left are idle), in the order it takes them: its own cluster's idle
    nodes first, then idle nodes on the cheapest standing bids, then busy ones, windows
    included; of equal bids the younger grant goes first (older demand wins ties).

    A heap of each node's place in that order: a node whose place changes (its job preempted)
    is pushed again, and an entry that no longer matches its node is skipped."""

    def __init__(self, s: TickState, b: Block) -> None:
        self.s, self.b = s, b
        held = (n for c in s.sorted_clusters() for n in s.held(c.id))
        self.heap = [self._order(n) for n in held if self._takes(n)]
        heapify(self.heap)

    def pop(self) -> Node | None:
        while self.heap:
            order = heappop(self.heap)
            n = self.s.node_at(order[-1])
            if self._takes(n) and self._order(n) == order:
                return n
        return None

    def push(self, nodes: list[Node]) -> None:
        for n in nodes:
            if self._takes(n):
                heappush(self.heap, self._order(n))

    def _takes(self, n: Node) -> bool:
        return n.cluster is not None and n.block is None and n.service is None

    def _order(self, n: Node) -> tuple[bool, bool, int, int, int]:
        c = self.s.clusters[n.cluster or ""]
        kind = KINDS[c.kind]
        busy = not kind.runs_jobs or n.job is not None  # a node that is the demand itself: busy
        price = kind.live_price(self.s, c, n)
        return (c.id != self.b.cluster, busy, price, -(n.granted_at or 0), n.idx)
