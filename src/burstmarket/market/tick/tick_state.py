"""The state one tick works on: the island's nodes indexed by where they are, what changed, and
the basic transitions every phase is made of.

A node is in exactly one of four places: free; held in the market by a cluster; held by a base
load block (never contestable, never in market statistics); or out of service (kept by its
cluster, unbilled, never contestable). The indices below say which, and which job runs on it
(a whole-node job, or jobs smaller than one node packed onto a block node); the transitions
keep them true, so no phase rescans the island to find a node. Changing a node's `cluster`,
`block` or `job`, or a small job's `node`, anywhere else would put them out of step: phases
change those only through the transitions (a node's terms, windows, prices and commitments,
they set themselves).
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, insort
from collections import Counter, defaultdict

from burstmarket.errors import BidTooLow, BillingHold, SpendLimit
from burstmarket.market.guard import Budget, outstanding, window_open
from burstmarket.market.kinds import KINDS
from burstmarket.market.model import (
    BILLING_HOLD,
    LIVE,
    Block,
    Cluster,
    Job,
    JobEvent,
    JobKey,
    Node,
    priority,
)
from burstmarket.market.own_ladder import OwnRung
from burstmarket.market.refusals import log_refusal
from burstmarket.market.tick.books import Books
from burstmarket.market.tick.types import TickInput
from burstmarket.states import HeldBack, JobState


class TickState:
    """One tick's island: its input, the indices over its nodes and jobs, what the phases hand
    each other, and what the tick will write. The kinds of demand see it as their `TickView`
    (market/kinds/base.py)."""

    def __init__(self, inp: TickInput) -> None:
        self.inp = inp
        self.now = inp.time
        """The tick's market time (ns)."""
        self.gpus_per_node = inp.island.gpus_per_node
        self.reserve_price = inp.island.reserve_price
        self.clusters = inp.clusters
        self.jobs: dict[JobKey, Job] = {(j.cluster, j.name): j for j in inp.jobs}
        """Every pending and running job; the phases of whole nodes see only whole-node jobs
        (`jobs_of`, `waiting`), those smaller than one node are the packing's (`small_of`)."""
        self.blocks: dict[str, Block] = {b.cluster: b for b in inp.blocks}
        """Cluster -> its live block at the start of the tick (ended ones stay, not live)."""

        # what the tick writes
        self.changed_nodes: dict[str, Node] = {}
        self.changed_jobs: dict[JobKey, Job] = {}
        self.changed_clusters: dict[str, Cluster] = {}
        self.changed_blocks: dict[str, Block] = {}
        self.events: list[JobEvent] = []
        self.holders_before: dict[str, str | None] = {}
        """Node -> its cluster before the tick first moved it (grant, free, join_block)."""
        self.books = Books(inp, self.changed_clusters)

        # what one phase leaves for the next ones
        self.refused: dict[str, HeldBack] = {}
        """Cluster -> the refusal holding its demand back this tick: billing-hold (set by
        housekeeping; such a cluster bids nothing and is owed nothing) or spend-limit."""
        self.left_out: dict[JobKey, int] = {}
        """Pending job -> the worst case the spend limit had no room for (its kind's
        `new_units`): the job waits for spend-limit."""
        self.logged: set[tuple[str, str]] = set()
        """(cluster, code) refusals this tick has logged a line for."""
        self.credit: dict[JobKey, list[Node]] = {}
        """Pending job -> idle block nodes that count toward it (placement); it bids only for
        the rest, and takes them when its gang is granted."""
        self.unpriced: dict[str, Node] = {}
        """Nodes stepping down from a block with no price to lock (block_terms.end_terms): they
        stay out of the first clearing and are locked at the lowest rate it clears at."""
        self.own_ladders: dict[str, tuple[OwnRung, ...]] = {}
        """Cluster -> its own ladder (market/own_ladder.py), priced after the clearing on the
        auction the next tick would run; the verdicts read it."""
        self.newcomer_ladders: dict[str, tuple[OwnRung, ...]] = {}
        """Kind -> the own ladder of a cluster of that kind with no demand yet."""

        # the transitions' own memory
        self._started: dict[JobKey, str] = {}
        """Jobs started this tick, and why: `Provisioned` once the tick keeps them running."""
        self._idle_before: dict[str, int | None] = {}
        """idle_since of nodes a job took this tick (restored if that job does not start)."""

        # the indices
        self._sorted = [c for _, c in sorted(self.clusters.items())]
        self._running_jobs = [c for c in self._sorted if KINDS[c.kind].runs_jobs]
        self._stamps = itertools.count()
        self._stamp: dict[str, int] = {}
        """Node -> when it entered its place (market holdings or block): their order."""
        self._free: list[int] = []
        """Indices of free nodes, ascending."""
        self._at: dict[int, Node] = {n.idx: n for n in inp.nodes}
        self._held: dict[str, dict[str, Node]] = defaultdict(dict)
        self._in_block: dict[str, dict[str, Node]] = defaultdict(dict)
        self._on_job: dict[JobKey, dict[str, Node]] = defaultdict(dict)
        """In-service nodes (market or block) running each job."""
        self.out_of_service = [n for n in inp.nodes if n.service is not None]
        self._owed = {n.id: n for n in self.out_of_service if n.owed(self.now) and n.cluster}
        """Out-of-service nodes whose cluster is owed a replacement now, in index order."""
        self._owed_jobs = Counter((n.cluster or "", n.job) for n in self._owed.values() if n.job)
        self._owed_clusters = Counter(n.cluster or "" for n in self._owed.values())
        self._jobs_by_age: dict[str, list[Job]] = defaultdict(list)
        small: dict[str, list[Job]] = defaultdict(list)
        for j in sorted(inp.jobs, key=lambda j: j.age):
            (small if j.small else self._jobs_by_age)[j.cluster].append(j)
        self._jobs_by_rank = {
            c: sorted(jobs, key=lambda j: (-priority(j.priority_class), j.age))
            for c, jobs in self._jobs_by_age.items()
        }
        self._small_by_rank = {
            c: sorted(jobs, key=lambda j: (-priority(j.priority_class), j.age))
            for c, jobs in small.items()
        }
        self._small_on: dict[str, dict[JobKey, Job]] = defaultdict(dict)
        """Node id -> the jobs smaller than one node running on it."""
        for j in inp.jobs:
            if j.small and j.node is not None:
                self._small_on[j.node][(j.cluster, j.name)] = j
        self._by_id = {n.id: n for n in inp.nodes}
        for n in inp.nodes:
            self._index(n)

    # --- where nodes are ------------------------------------------------------------------

    def free_count(self) -> int:
        return len(self._free)

    def market_nodes(self) -> int:
        """The island's nodes in service outside base load blocks: free or held in the market."""
        return len(self._free) + sum(len(held) for held in self._held.values())

    def free_nodes(self, count: int) -> list[Node]:
        """The first `count` free nodes in index order (fewer if there are not as many)."""
        return [self._at[i] for i in self._free[:count]]

    def held(self, cluster: str) -> list[Node]:
        """The cluster's market nodes, in the order it came to hold them."""
        return list(self._held[cluster].values())

    def block_nodes(self, b: Block) -> list[Node]:
        """The block's in-service nodes, in the order they joined it."""
        return list(self._in_block[b.id].values())

    def block_size(self, b: Block) -> int:
        return len(self._in_block[b.id])

    def block_of(self, c: Cluster) -> list[Node]:
        b = self.blocks.get(c.id)
        return self.block_nodes(b) if b is not None and b.state == LIVE else []

    def owed(self) -> list[Node]:
        """Out-of-service nodes whose cluster is owed a replacement now, in index order."""
        return list(self._owed.values())

    def owed_count(self, cluster: str) -> int:
        return self._owed_clusters[cluster]

    def owed_to(self, job: Job) -> int:
        return self._owed_jobs[(job.cluster, job.name)]

    def placed(self, job: Job) -> int:
        """In-service nodes the job runs on (market and block)."""
        return len(self._on_job.get((job.cluster, job.name), ()))

    def running_on(self, job: Job) -> tuple[list[Node], list[Node]]:
        """The job's market nodes and its block nodes, each in their place's order."""
        nodes = sorted(self._on_job.get((job.cluster, job.name), {}).values(), key=self._order)
        return [n for n in nodes if n.block is None], [n for n in nodes if n.block is not None]

    def node_at(self, idx: int) -> Node:
        return self._at[idx]

    def node(self, node_id: str) -> Node | None:
        return self._by_id.get(node_id)

    def small_on(self, n: Node) -> list[Job]:
        """The jobs smaller than one node running on `n`."""
        return list(self._small_on.get(n.id, {}).values())

    def empty(self, n: Node) -> bool:
        """No job at all runs on `n`: neither a whole-node job nor a small one."""
        return n.job is None and not self._small_on.get(n.id)

    def free_gpus(self, n: Node) -> int:
        """GPUs of `n` no small job takes (none if a whole-node job runs on it)."""
        if n.job is not None:
            return 0
        return self.gpus_per_node - sum(j.gpus for j in self._small_on.get(n.id, {}).values())

    def _order(self, n: Node) -> int:
        return self._stamp[n.id]

    # --- clusters, jobs, blocks -----------------------------------------------------------

    def sorted_clusters(self) -> list[Cluster]:
        return list(self._sorted)

    def job_clusters(self) -> list[Cluster]:
        """The clusters whose kind of demand runs jobs (`DemandKind.runs_jobs`), by id."""
        return list(self._running_jobs)

    def jobs_of(self, c: Cluster, state: JobState) -> list[Job]:
        """The cluster's jobs in `state`, oldest first (equal times: the one accepted first)."""
        return [j for j in self._jobs_by_age.get(c.id, ()) if j.state == state]

    def waiting(self, c: Cluster) -> list[Job]:
        """Pending jobs in placement order: priority class, then the oldest."""
        return [j for j in self._jobs_by_rank.get(c.id, ()) if j.state == "pending"]

    def small_of(self, c: Cluster, state: str) -> list[Job]:
        """The cluster's jobs smaller than one node in `state`, in placement order: priority
        class, then the oldest request."""
        return [j for j in self._small_by_rank.get(c.id, ()) if j.state == state]

    def wants(self, c: Cluster) -> bool:
        """Whether the cluster holds or asks for anything (else nothing can be refused)."""
        return bool(self._held[c.id] or c.max_gpus or self._jobs_by_age.get(c.id))

    def live_blocks(self) -> list[Block]:
        blocks = [b for b in self.blocks.values() if b.state == LIVE]
        return sorted(blocks, key=lambda b: (b.starts_at, b.id))

    def budget(self, c: Cluster) -> Budget:
        if c.spend_limit is None:
            return Budget(None, 0, 0)
        spent = self.inp.spent.get(c.id, 0) if window_open(c.spend_window_start, self.now) else 0
        return Budget.of(
            c.spend_limit,
            spent,
            outstanding(self._held[c.id].values(), self.gpus_per_node, self.now),
        )

    def job_on(self, n: Node) -> Job | None:
        return self.jobs.get((n.cluster or "", n.job)) if n.job else None

    # --- transitions ----------------------------------------------------------------------

    def grant(self, n: Node, cluster: str, job: str | None) -> None:
        """Free node `n` becomes a market node of `cluster`, running `job` (None: idle). The
        caller sets its terms: grant time, window, hold, lock, commitment, idle time."""
        self._moving(n)
        self._unindex(n)
        n.cluster, n.job = cluster, job
        self._index(n)
        self.touch(n)

    def release(self, n: Node, minimum: bool = True) -> None:
        """Market node `n` goes back to the island: its commitment is released and, unless the
        market broke its window, the minimum hold of its kind is billed (a kind with one)."""
        assert n.cluster is not None
        c = self.clusters[n.cluster]
        self.unpriced.pop(n.id, None)
        self.books.release_commitment(n)
        if minimum and KINDS[c.kind].hold_ns is not None and n.granted_at is not None:
            self.books.minimum_hold(c, n)
        self.free(n)

    def free(self, n: Node) -> None:
        """`n` goes back to the island with no billing (a block node, or one released)."""
        self._moving(n)
        self._unindex(n)
        n.free()
        self._index(n)
        self.touch(n)

    def join_block(self, b: Block, n: Node) -> None:
        """`n` becomes a node of block `b`: a free node with nothing of its past, a market node
        of the block's cluster with the job on it."""
        self._moving(n)
        self._unindex(n)
        if n.cluster is None:
            n.free()
        n.cluster, n.block = b.cluster, b.id
        self._index(n)
        self.touch(n)

    def leave_block(self, n: Node) -> None:
        """Block node `n` becomes a market node of its cluster, keeping the job on it."""
        self._unindex(n)
        n.block = None
        self._index(n)
        self.touch(n)

    def settle_owed(self, lost: Node) -> None:
        """The replacement owed for out-of-service node `lost` came, or the right lapsed."""
        self._not_owed(lost)
        lost.owed_until = lost.job = lost.window_ends_at = lost.hold_until = None
        self.touch(lost)

    def hold_billing(self, c: Cluster) -> None:
        """The account is at or below zero: the cluster bids nothing and is owed nothing."""
        self.refused[c.id] = BILLING_HOLD
        for n in [n for n in self._owed.values() if n.cluster == c.id]:
            self._not_owed(n)

    def assign(self, job: Job, nodes: list[Node]) -> None:
        for n in nodes:
            self._idle_before.setdefault(n.id, n.idle_since)
            self._set_job(n, job.name)
            n.idle_since = None
            self.touch(n)

    def start(self, job: Job, c: Cluster, why: str) -> None:
        """The job runs from now; its `Provisioned` event waits for the end of the tick."""
        job.state, job.provisioned_at, job.gang_price = "running", self.now, job.price(c)
        self._started[(job.cluster, job.name)] = why
        self.changed_jobs[(job.cluster, job.name)] = job

    def preempt(self, job: Job, why: str) -> None:
        """The job goes back to pending; nodes still inside their window stay, idle, and so do
        its nodes on the cluster's block. A job started this same tick was never running: it
        goes back without an event, its nodes idle as they were (no Provisioned and Preempted
        in one tick)."""
        c = self.clusters[job.cluster]
        started = self._started.pop((job.cluster, job.name), None) is not None

        def idle(n: Node) -> None:
            self._set_job(n, None)
            n.idle_since = (self._idle_before.get(n.id) or self.now) if started else self.now
            self.touch(n)

        market, block = self.running_on(job)
        for n in market:
            if n.window_open(self.now) and self.refused.get(c.id) != BILLING_HOLD:
                idle(n)
                if not started:
                    n.locked_price = job.price(c)
            else:
                self.release(n)
        for n in block:
            idle(n)
        job.state, job.provisioned_at, job.gang_price = "pending", None, None
        if started:
            self.changed_jobs[(job.cluster, job.name)] = job
        else:
            self.event(job, "Preempted", why)

    def place_small(self, job: Job, c: Cluster, n: Node) -> None:
        """The job smaller than one node runs on block node `n` from now, beside any others."""
        job.node, job.reason = n.id, None
        self._small_on[n.id][(job.cluster, job.name)] = job
        n.idle_since = None
        self.touch(n)
        self.start(job, c, f"placed on the base load block: {job.gpus} GPUs of node {n.id}")

    def requeue_small(self, job: Job, at: int, why: str) -> None:
        """The job smaller than one node leaves its node and waits again, as a new request made
        at `at` (the packing says what for); a node it leaves empty is idle from then."""
        if job.node is not None:
            on = self._small_on.get(job.node, {})
            on.pop((job.cluster, job.name), None)
            n = self._by_id.get(job.node)
            if n is not None and not on and n.job is None:
                n.idle_since = at
                self.touch(n)
        job.state, job.node, job.provisioned_at, job.created_at = "pending", None, None, at
        self.event(job, "Requeued", why)

    def wait_small(self, job: Job, reason: str, why: str) -> None:
        """The job smaller than one node waits for `reason`: an event when that starts."""
        if job.reason != reason:
            job.reason = reason
            self.event(job, reason, why)

    def provisioned(self) -> None:
        """The jobs started this tick and still running get their `Provisioned` event."""
        for (cluster, name), why in self._started.items():
            self.event(self.jobs[(cluster, name)], "Provisioned", why)
        self._started.clear()

    def event(self, job: Job, kind: str, detail: str) -> None:
        self.events.append(JobEvent(job.cluster, job.name, self.now, kind, detail))
        self.changed_jobs[(job.cluster, job.name)] = job

    def refuse(self, c: Cluster, refusal: BidTooLow | SpendLimit | BillingHold) -> None:
        """One REFUSED line for a refusal the tick makes."""
        log_refusal(refusal)
        self.logged.add((c.id, refusal.code))

    def touch(self, n: Node) -> None:
        self.changed_nodes[n.id] = n

    def touch_block(self, b: Block) -> None:
        self.changed_blocks[b.id] = b

    # --- keeping the indices --------------------------------------------------------------

    def _moving(self, n: Node) -> None:
        """`n` may change holder now: remember who held it before the tick."""
        self.holders_before.setdefault(n.id, n.cluster)

    def _index(self, n: Node) -> None:
        if n.service is not None:
            return
        if n.block is not None:
            self._in_block[n.block][n.id] = n
        elif n.cluster is not None:
            self._held[n.cluster][n.id] = n
        else:
            insort(self._free, n.idx)
            return
        self._stamp[n.id] = next(self._stamps)
        if n.job is not None:
            self._on_job[(n.cluster or "", n.job)][n.id] = n

    def _unindex(self, n: Node) -> None:
        if n.service is not None:
            return
        if n.block is not None:
            del self._in_block[n.block][n.id]
        elif n.cluster is not None:
            del self._held[n.cluster][n.id]
        else:
            del self._free[bisect_left(self._free, n.idx)]
            return
        if n.job is not None:
            del self._on_job[(n.cluster or "", n.job)][n.id]

    def _not_owed(self, n: Node) -> None:
        if self._owed.pop(n.id, None) is not None:
            self._owed_clusters[n.cluster or ""] -= 1
            if n.job is not None:
                self._owed_jobs[(n.cluster or "", n.job)] -= 1

    def _set_job(self, n: Node, job: str | None) -> None:
        assert n.cluster is not None
        assert n.service is None
        if n.job is not None:
            del self._on_job[(n.cluster, n.job)][n.id]
        n.job = job
        if job is not None:
            self._on_job[(n.cluster, job)][n.id] = n
