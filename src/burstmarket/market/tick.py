"""One tick on one island as a pure function: state in, state changes and rows out
(docs/market.md "One tick").

`run_tick` first bills held time not billed yet (a late tick leaves no gap), then does
housekeeping (base load terms and cancellations, billing hold, owed replacements lapsing, idle
release, commitment renewals), delivers what is owed ahead of bids (base load blocks short of
nodes, replacements for nodes out of service inside their window), places jobs on capacity the
cluster already has (its block, then its idle nodes), turns the rest into the auction's demand
units (each dated by the demand it serves) and protected holdings (owed replacements included),
clears them, and applies the outcome: reclaims first, then owed replacements, then new grants
onto free nodes in index order (a held node whose unit wins stays where it is). Last it bills:
market charges and the blocks' 5-minute steps. It does no I/O; the service reads its input from
the store and writes its output in one transaction, so replaying a tick gives the same rows.

A node is in exactly one of four places: free; held in the market (`holdings`); held by a base
load block (`block_nodes`, never contestable, never in market statistics); or out of service
(`out_of_service`, kept by its cluster, unbilled, never contestable).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from burstmarket.auction import Clearing, IslandInput, Protected, Unit, clear
from burstmarket.errors import BidTooLow, BillingHold, SpendLimit
from burstmarket.market.guard import Budget, grant_span, outstanding, window_open, worst_case
from burstmarket.market.ladder import LadderRung, published_ladder
from burstmarket.market.ledger import (
    BASE_LOAD,
    CHARGE,
    COMMITMENT,
    HOLD,
    RELEASE,
    Billed,
    Entry,
    amount,
    period_entry,
)
from burstmarket.market.model import (
    BASE_LOAD_GRACE_NS,
    BASE_LOAD_STEP_NS,
    BILLING_HOLD,
    CANCELLED,
    ENDED,
    K8S_HOLD_NS,
    K8S_INCREMENT_NS,
    K8S_WINDOW_NS,
    LIVE,
    RENEWAL_NS,
    SPEND_LIMIT,
    VM_WINDOW_NS,
    Age,
    Block,
    Cluster,
    Island,
    Job,
    JobEvent,
    Node,
    priority,
    unit_ages,
)
from burstmarket.market.refusals import log_refusal
from burstmarket.money import usd

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TickInput:
    island: Island
    tick: int
    time: int
    interval_ns: int
    clusters: dict[str, Cluster]
    nodes: list[Node]
    """Every node of the island, in index order."""
    jobs: list[Job]
    """Pending and running jobs of the island's clusters."""
    balances: dict[str, int]
    """Account -> credit left in ledger units (at or below zero: billing hold)."""
    spent: dict[str, int]
    """Cluster (with a spend limit) -> billed units in its open spend window."""
    rates: dict[str, int]
    """Cluster -> its rate at the previous tick (µUSD per GPU-hour)."""
    blocks: list[Block] = field(default_factory=list)
    """The island's live base load blocks."""
    billed: Billed | None = None
    """How far the island's market billing has gone (None: never billed)."""


@dataclass(slots=True)
class TickOutput:
    clearing: Clearing
    ladder: tuple[LadderRung, ...]
    """The published ladder: the engine's rungs, then those windows hold (market/ladder.py)."""
    nodes: list[Node]
    jobs: list[Job]
    clusters: list[Cluster]
    events: list[JobEvent]
    ledger: list[Entry]
    rates: dict[str, int]
    allocations: list[tuple[str, str, str]]
    """(cluster, node, kind) for every held node after the tick."""
    pending_gpus: int
    verdicts: list[tuple[str, str]]
    """(cluster, verdict): bid-too-low, spend-limit or billing-hold."""
    blocks: list[Block] = field(default_factory=list)
    """Blocks whose row changed: billing progress, end of term, cancellation."""


@dataclass(slots=True)
class _Demand:
    """What one auction unit stands for, to apply its outcome."""

    kind: str  # held | idle | running (nodes held) | vm | job | short (nodes wanted)
    cluster: Cluster
    nodes: list[Node] = field(default_factory=list)
    job: Job | None = None
    price: int = 0


_Add = Callable[[str, _Demand, int, Age], None]


def run_tick(inp: TickInput) -> TickOutput:
    return _Tick(inp).run()


class _Tick:
    def __init__(self, inp: TickInput) -> None:
        self.inp = inp
        self.t = inp.time
        self.g = inp.island.gpus_per_node
        self.r = inp.island.reserve_price
        self.clusters = inp.clusters
        self.holdings: dict[str, list[Node]] = defaultdict(list)
        self.block_nodes: dict[str, list[Node]] = defaultdict(list)
        self.out_of_service: list[Node] = []
        for n in inp.nodes:
            if n.service is not None:
                self.out_of_service.append(n)
            elif n.block is not None:
                self.block_nodes[n.block].append(n)
            elif n.cluster is not None:
                self.holdings[n.cluster].append(n)
        self.blocks: dict[str, Block] = {b.cluster: b for b in inp.blocks}
        self.credit: dict[tuple[str, str], list[Node]] = {}
        """Pending job -> idle block nodes that count toward it; it bids only for the rest."""
        self.changed_blocks: dict[str, Block] = {}
        self.jobs: dict[tuple[str, str], Job] = {(j.cluster, j.name): j for j in inp.jobs}
        self.changed_nodes: dict[str, Node] = {}
        self.changed_jobs: dict[tuple[str, str], Job] = {}
        self.changed_clusters: dict[str, Cluster] = {}
        self.events: list[JobEvent] = []
        self.ledger: list[Entry] = []
        self.committed: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
        self.released: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
        self.protected_ids: set[str] = set()
        self.refused: dict[str, str] = {}
        self.logged: set[tuple[str, str]] = set()
        """(cluster, code) refusals this tick has logged a line for."""
        self.started: dict[tuple[str, str], str] = {}
        """Jobs started this tick, and why: `Provisioned` once the tick keeps them running."""
        self.idle_before: dict[str, int | None] = {}
        """idle_since of nodes a job took this tick (restored if that job does not start)."""
        self.unpriced: dict[str, Node] = {}
        """Nodes stepping down from a block with no price to lock: locked at the lowest rate
        this tick clears at."""

    # --- the tick -------------------------------------------------------------------------

    def run(self) -> TickOutput:
        self._bill_held_time()
        self._end_blocks()
        self._billing_hold()
        self._lapse_owed()
        self._release_idle()
        self._renew_commitments()
        self._deliver_blocks()
        self._deliver_owed()
        self._place_on_blocks()
        self._place_on_idle()
        auction, clearing, units, demand = self._clear()
        if self.unpriced:
            # the step-down lock is the lowest rate this tick clears at (its own nodes aside)
            lowest = clearing.stats.min
            locked = self.r if lowest is None else max(self.r, lowest)
            for n in list(self.unpriced.values()):
                self._lock_step_down(n, locked)
            self.unpriced.clear()
            auction, clearing, units, demand = self._clear()
        self._apply(clearing, units, demand)
        self._provisioned()
        self._charge(clearing)
        for b in self._live_blocks():
            self._bill_block(b, min(self.t + self.inp.interval_ns, b.ends_at))
        self._job_verdicts()
        low = self._bid_verdicts(clearing)
        self._set_reasons()
        held = [n for n in self.inp.nodes if n.id in self.protected_ids]
        ladder = published_ladder(auction, clearing, held, self.clusters, self.jobs)
        return self._output(clearing, low, ladder)

    def _clear(self) -> tuple[IslandInput, Clearing, list[Unit], dict[str, _Demand]]:
        units, protected, demand = self._demand()
        auction = IslandInput(
            nodes=self._contestable(demand),
            gpus_per_node=self.g,
            reserve_price=self.r,
            units=tuple(units),
            protected=tuple(protected),
        )
        return auction, clear(auction), units, demand

    def _bill_held_time(self) -> None:
        """Bill what the clusters held since their billing stopped, up to this tick: from the
        end of the interval the last tick billed in advance (or a node's return from the
        operator), at the rate the cluster was paying, else the node's locked price. So a late
        tick leaves no time unbilled; time before the service started is never billed."""
        billed = self.inp.billed
        floor = 0 if billed is None else billed.floor
        for c in self._sorted_clusters():
            spans: dict[tuple[int, int], int] = defaultdict(int)
            for n in self.holdings[c.id]:
                since = n.billed_until
                if since is not None:
                    n.billed_until = None
                    self._touch(n)
                elif billed is not None:
                    since = billed.end
                rate = self.inp.rates.get(c.id, n.locked_price)
                if since is not None and rate is not None and max(since, floor) < self.t:
                    spans[(max(since, floor), rate)] += 1
            for (since, rate), count in sorted(spans.items()):
                self.ledger.append(self._entry(CHARGE, c, since, self.t, count * self.g, rate))
                self._spend_started(c)

    # --- housekeeping ---------------------------------------------------------------------

    def _billing_hold(self) -> None:
        for c in self._sorted_clusters():
            if self.inp.balances.get(c.account, 0) > 0 or not self._wants(c):
                continue
            self.refused[c.id] = BILLING_HOLD
            # a live block keeps running: only jobs holding market nodes are preempted
            for job in self._jobs_of(c, "running"):
                if any(n.job == job.name for n in self.holdings[c.id]):
                    self._preempt(job, "billing hold: the account's balance is at or below zero")
            for n in list(self.holdings[c.id]):
                self._release(n)

    def _release_idle(self) -> None:
        for c in self._sorted_clusters("k8s"):
            for n in list(self.holdings[c.id]):
                if n.job is not None or n.idle_since is None or n.id in self.unpriced:
                    continue
                if self.t >= n.idle_release_at(self.r):
                    self._release(n)

    def _renew_commitments(self) -> None:
        """A node kept past its commitment commits its next hour, or goes if that does not fit."""
        for c in self._sorted_clusters():
            for n in list(self.holdings[c.id]):
                if n.commit_ends_at is None or n.commit_ends_at > self.t:
                    continue
                price = self._live_price(c, n)
                worst = worst_case(price, self.g, RENEWAL_NS)
                budget = self._budget(c)
                if not budget.fits(worst):
                    self.refused[c.id] = SPEND_LIMIT
                    self._refuse(
                        c,
                        SpendLimit(
                            f"the next hour of node {n.id} does not fit what is left of the "
                            "spend limit: the node is released",
                            cluster=c.id,
                            node=n.id,
                            worst_case_units=worst,
                            left_units=budget.left,
                        ),
                    )
                    job = self.jobs.get((c.id, n.job)) if n.job else None
                    if job is not None:
                        self._preempt(job, "spend limit: the next hour does not fit")
                    self._release(n)
                    continue
                n.commit_price, n.commit_ends_at = price, self.t + RENEWAL_NS
                self._commit(c, worst)
                self._touch(n)

    def _lapse_owed(self) -> None:
        """A replacement is owed for the rest of the window only (wall-clock)."""
        for n in self.out_of_service:
            if n.owed_until is not None and not n.owed(self.t):
                n.owed_until = n.job = n.window_ends_at = n.hold_until = None
                self._touch(n)

    def _place_on_idle(self) -> None:
        """Waiting jobs that fit on idle nodes the cluster already holds (with what its block
        leaves them) run there, inheriting the windows: no market needed, the cluster holds and
        pays for those nodes. Higher priority classes first, then the oldest."""
        for c in self._sorted_clusters("k8s"):
            idle = [n for n in self.holdings[c.id] if n.job is None]
            for job in self._waiting(c):
                credit = self.credit.get((c.id, job.name), [])
                need = job.nodes - len(credit)
                if need > len(idle):
                    continue
                taken, idle = idle[:need], idle[need:]
                self.credit.pop((c.id, job.name), None)
                self._assign(job, [*credit, *taken])
                self._start(job, c, "placed on idle nodes the cluster holds")

    # --- base load blocks -----------------------------------------------------------------

    def _end_blocks(self) -> None:
        """End of term steps the nodes down into the market; a balance at or below zero for
        24 h cancels the block at that moment."""
        for b in self._live_blocks():
            c = self.clusters[b.cluster]
            if self.inp.balances.get(c.account, 0) > 0:
                if b.negative_since is not None:
                    b.negative_since = None
                    self._touch_block(b)
            elif b.negative_since is None:
                b.negative_since = self.t
                self._touch_block(b)
            cancel_at = None if b.negative_since is None else b.negative_since + BASE_LOAD_GRACE_NS
            if cancel_at is not None and cancel_at <= self.t and cancel_at < b.ends_at:
                self._cancel_block(b, cancel_at)
            elif self.t >= b.ends_at:
                self._step_down(b)

    def _bill_block(self, b: Block, until: int) -> None:
        """Bill every 5-minute step of the block that starts before `until`, for every node of
        the block, idle or busy, delivered or being replaced."""
        c = self.clusters[b.cluster]
        gpus = b.nodes * self.g
        while b.billed_until < min(until, b.ends_at):
            start = b.billed_until
            end = min(start + BASE_LOAD_STEP_NS, b.ends_at)
            self.ledger.append(self._entry(BASE_LOAD, c, start, end, gpus, b.rate))
            b.billed_until = end
            self._touch_block(b)

    def _cancel_block(self, b: Block, at: int) -> None:
        """Billing stops at `at` (the billed rest is undone); the nodes return to the market
        (the billing hold is reclaiming the cluster's market capacity anyway)."""
        self._bill_block(b, at)
        c = self.clusters[b.cluster]
        if b.billed_until > at:
            undone = -b.nodes * self.g
            self.ledger.append(self._entry(BASE_LOAD, c, at, b.billed_until, undone, b.rate))
            b.billed_until = at
        for job in self._block_jobs(b):
            self._preempt(job, "base load block cancelled: the balance stayed at or below zero")
        for n in self.block_nodes.pop(b.id, []):
            n.free()
            self._touch(n)
        self._close_block(b, CANCELLED, at)

    def _step_down(self, b: Block) -> None:
        """End of term: the nodes stay with the cluster as market nodes under a fresh window
        from the end, locked at the declared price (the job's, else the cluster's) or, with
        none or one under the reserve, at the lowest rate this tick clears at (`run`); no
        minimum hold; idle ones get the usual idle grace."""
        self._bill_block(b, b.ends_at)
        c = self.clusters[b.cluster]
        end = b.ends_at
        for n in self.block_nodes.pop(b.id, []):
            job = self.jobs.get((c.id, n.job)) if n.job else None
            declared = job.price(c) if job is not None else c.limit_price
            n.block = None
            n.granted_at, n.window_ends_at, n.hold_until = end, end + K8S_WINDOW_NS, None
            n.idle_since = None if job is not None else end
            n.commit_ends_at = n.window_ends_at
            self.holdings[c.id].append(n)
            self._touch(n)
            if declared is not None and declared >= self.r:
                self._lock_step_down(n, declared)
            else:
                self.unpriced[n.id] = n
        self._close_block(b, ENDED, end)

    def _lock_step_down(self, n: Node, locked: int) -> None:
        """Lock a stepped-down node's window at `locked`: its worst case is committed, and the
        time since the end of term is billed at the lock (the block billed up to it)."""
        c = self.clusters[n.cluster or ""]
        assert n.granted_at is not None
        assert n.window_ends_at is not None
        n.locked_price = n.commit_price = locked
        self._commit(c, worst_case(locked, self.g, max(0, n.window_ends_at - self.t)))
        start = max(n.granted_at, self.inp.billed.floor if self.inp.billed else 0)
        if start < self.t:
            self.ledger.append(self._entry(CHARGE, c, start, self.t, self.g, locked, node=n.id))
            self._spend_started(c)

    def _close_block(self, b: Block, state: str, at: int) -> None:
        for n in self.out_of_service:
            if n.block == b.id:
                n.block = None
                self._touch(n)
        b.state, b.ended_at = state, at
        self._touch_block(b)

    def _deliver_blocks(self) -> None:
        """A block short of in-service nodes takes free nodes, then market nodes: idle ones on
        the cheapest standing bids first, then busy ones, windows included (a block being
        delivered outranks the window). A block over its size (a node back from the operator)
        hands an idle node to its cluster's market holdings."""
        for b in self._live_blocks():
            held = self.block_nodes[b.id]
            idle = [n for n in held if n.job is None]
            while len(held) > b.nodes and idle:
                self._leave_block(b, idle.pop())
            while len(held) < b.nodes:
                free = self._free()
                n = free[0] if free else self._victim(b)
                if n is None:
                    break
                if n.cluster is not None:
                    self._seize(n)
                self._join_block(b, n)

    def _victim(self, b: Block) -> Node | None:
        """The block's own idle market nodes first; never its own busy ones (those jobs are
        folded into the block instead)."""
        held = [
            n
            for c in self._sorted_clusters()
            for n in self.holdings[c.id]
            if c.id != b.cluster or n.job is None
        ]
        if not held:
            return None

        def order(n: Node) -> tuple[bool, bool, int, int, int]:
            c = self.clusters[n.cluster or ""]
            busy = c.kind == "vm" or n.job is not None
            # of equal bids the younger grant goes first (older demand wins ties)
            return (c.id != b.cluster, busy, self._live_price(c, n), -(n.granted_at or 0), n.idx)

        return min(held, key=order)

    def _seize(self, n: Node) -> None:
        """The market takes the node for a block: no minimum hold is billed (the market broke
        the window), the gang on it goes back to pending."""
        c = self.clusters[n.cluster or ""]
        job = self.jobs.get((c.id, n.job)) if n.job else None
        self._release(n, minimum=False)
        if job is not None:
            self._preempt(job, f"a base load block being delivered took node {n.id}")

    def _join_block(self, b: Block, n: Node) -> None:
        n.free()
        n.cluster, n.block, n.granted_at, n.idle_since = b.cluster, b.id, self.t, self.t
        self.block_nodes[b.id].append(n)
        self._touch(n)

    def _leave_block(self, b: Block, n: Node) -> None:
        """An idle block node beyond the block's size: idle market capacity of the cluster,
        released after the idle grace unless a job takes it."""
        c = self.clusters[b.cluster]
        self.block_nodes[b.id].remove(n)
        n.block, n.idle_since = None, self.t
        n.locked_price = n.commit_price = c.limit_price
        n.commit_ends_at = self.t  # the next tick commits its next hour, or releases it
        self.holdings[c.id].append(n)
        self._touch(n)

    def _place_on_blocks(self) -> None:
        """Jobs of a block's cluster go on the block first: running jobs short of nodes, then
        running jobs folded into the block where they stand (market billing stops), then
        waiting jobs by priority class, oldest first. A job that does not fit never holds back
        smaller ones; what is left counts toward the first of them, which bids for the rest."""
        for b in self._live_blocks():
            c = self.clusters[b.cluster]
            free = [n for n in self.block_nodes[b.id] if n.job is None]
            for job in self._jobs_of(c, "running"):
                missing = max(0, job.nodes - self._placed(job) - self._owed_to(job))
                taken, free = free[:missing], free[missing:]
                self._assign(job, taken)
                for m in [n for n in self.holdings[c.id] if n.job == job.name]:
                    if not free:
                        break
                    self._fold(b, job, m, free.pop(0))
            waiting = self._waiting(c)
            for job in waiting:
                if job.nodes <= len(free):
                    taken, free = free[: job.nodes], free[job.nodes :]
                    self._assign(job, taken)
                    self._start(job, c, "placed on the cluster's base load block")
            rest = [j for j in waiting if j.state == "pending"]
            if rest and free:
                self.credit[(c.id, rest[0].name)] = free

    def _fold(self, b: Block, job: Job, m: Node, x: Node) -> None:
        """Market node `m` of a running job becomes a block node where it stands (no restart);
        the idle block node `x` it stands in for goes back to the island."""
        self._release_commitment(m)
        self.holdings[m.cluster or ""].remove(m)
        m.block = b.id
        m.window_ends_at = m.hold_until = m.locked_price = None
        m.commit_price = m.commit_ends_at = None
        self.block_nodes[b.id].remove(x)
        self.block_nodes[b.id].append(m)
        x.free()
        self._touch(m)
        self._touch(x)
        self._event(job, "FoldedIntoBlock", f"{m.id} joined the base load block; {x.id} left it")

    # --- owed replacements ----------------------------------------------------------------

    def _owed(self) -> list[Node]:
        """Out-of-service nodes whose cluster is owed a replacement now."""
        return [
            n
            for n in self.out_of_service
            if n.owed(self.t)
            and n.cluster is not None
            and self.refused.get(n.cluster) != BILLING_HOLD
        ]

    def _deliver_owed(self) -> None:
        """Replacements take free nodes ahead of every bid."""
        free = self._free()
        for lost in self._owed():
            if not free:
                return
            self._replace(lost, free.pop(0))

    def _replace(self, lost: Node, n: Node) -> None:
        """`n` inherits `lost`'s grant: the rest of its window and its hold at the locked
        price; it joins the job `lost` was running, if that job still runs."""
        c = self.clusters[lost.cluster or ""]
        job = self.jobs.get((c.id, lost.job)) if lost.job else None
        running = job if job is not None and job.state == "running" else None
        ends = lost.owed_until or self.t
        price = lost.locked_price or 0
        n.cluster, n.granted_at, n.window_ends_at = c.id, lost.granted_at, ends
        n.hold_until, n.locked_price = lost.hold_until, price
        n.job = None if running is None else running.name
        if running is not None or c.kind == "vm":
            n.idle_since = None
        else:  # an idle node's replacement keeps its grace; one whose job ended starts one
            n.idle_since = lost.idle_since if lost.job is None and lost.idle_since else self.t
        n.commit_price, n.commit_ends_at = price, max(ends, n.hold_until or 0)
        self._commit(c, worst_case(price, self.g, n.commit_ends_at - self.t))
        self.holdings[c.id].append(n)
        self._touch(n)
        lost.owed_until = lost.job = lost.window_ends_at = lost.hold_until = None
        self._touch(lost)
        if running is not None:
            self._event(running, "NodeReplaced", f"{n.id} replaces {lost.id} (out of service)")

    # --- the auction ----------------------------------------------------------------------

    def _demand(self) -> tuple[list[Unit], list[Protected], dict[str, _Demand]]:
        """The auction's units, oldest first, and protected holdings. A unit is dated by the
        demand it serves (a held node by its cluster's declared unit or its job, never by its
        grant), so two equal bids never swap a node; equal ages never fall back to an id."""
        units: list[tuple[Age, Unit]] = []
        demand: dict[str, _Demand] = {}
        locks: dict[tuple[str, int], int] = defaultdict(int)

        def add(uid: str, d: _Demand, nodes: int, age: Age) -> None:
            units.append((age, Unit(uid, d.cluster.id, nodes, d.price, age[0])))
            demand[uid] = d

        for c in self._sorted_clusters():
            if self.refused.get(c.id) == BILLING_HOLD:
                continue
            held = [n for n in self.holdings[c.id] if n.id not in self.unpriced]
            ages, waiting = self._vm_ages(c) if c.kind == "vm" else ({}, [])
            running: dict[str, list[Node]] = defaultdict(list)
            for n in held:
                if n.job is not None:
                    running[n.job].append(n)
                elif n.window_open(self.t):
                    locks[(c.id, self._cap(c, n))] += 1
                    self.protected_ids.add(n.id)
                elif c.kind == "vm":
                    add(f"n:{n.id}", _Demand("held", c, [n], price=c.max_price or 0), 1, ages[n.id])
                else:
                    # an idle node serves no demand any more: its grant dates it
                    d = _Demand("idle", c, [n], price=n.locked_price or 0)
                    add(f"n:{n.id}", d, 1, (n.granted_at or 0, 0))
            for name, nodes in sorted(running.items()):
                job = self.jobs[(c.id, name)]
                lapsed = [n for n in nodes if not n.window_open(self.t)]
                for n in nodes:
                    if n.window_open(self.t):
                        locks[(c.id, self._cap(c, n))] += 1
                        self.protected_ids.add(n.id)
                if lapsed:
                    d = _Demand("running", c, lapsed, job, job.price(c) or 0)
                    add(f"r:{c.id}/{name}", d, len(lapsed), job.age)
            for job in self._jobs_of(c, "running"):
                # short of nodes out of service with no window left: the rest bids again
                missing = job.nodes - self._placed(job) - self._owed_to(job)
                if missing > 0:
                    d = _Demand("short", c, job=job, price=job.price(c) or 0)
                    add(f"s:{c.id}/{job.name}", d, missing, job.age)
            self._new_demand(c, waiting, add)
        # replacements still owed take reclaimed nodes after the auction, ahead of every bid:
        # they are held (and pay) from this tick, like those that found a free node
        supply = len(self._free()) + sum(len(d.nodes) for d in demand.values())
        for lost in self._owed()[:supply]:
            locks[(lost.cluster or "", self._cap(self.clusters[lost.cluster or ""], lost))] += 1
        units.sort(key=lambda aged: (aged[0], aged[1].id))
        protected = [Protected(c, k, price) for (c, price), k in sorted(locks.items())]
        return [u for _, u in units], protected, demand

    def _vm_ages(self, c: Cluster) -> tuple[dict[str, Age], list[Age]]:
        """A VM cluster's declared units, oldest first: its held nodes serve the oldest (the
        oldest grant the oldest unit), replacements it is owed the next; the rest wait."""
        ages = unit_ages(c.demand)
        held = sorted(
            (n for n in self.holdings[c.id] if n.id not in self.unpriced),
            key=lambda n: (n.granted_at or 0, n.idx),
        )
        served = {
            n.id: ages[i] if i < len(ages) else (n.granted_at or 0, 0) for i, n in enumerate(held)
        }
        owed = sum(1 for n in self._owed() if n.cluster == c.id)
        return served, ages[len(held) + owed :]

    def _cap(self, c: Cluster, n: Node) -> int:
        """The most a node under an open window can be assessed per GPU-hour. VM: the bid that
        won the grant, lifted at once by a higher live ceiling. Kubernetes: the live limit
        price of the job on it (one under the reserve, as after a step-down, keeps the lock);
        an idle node its lock."""
        locked = n.locked_price or 0
        if c.kind == "vm":
            return max(locked, c.max_price or 0)
        job = self.jobs.get((c.id, n.job)) if n.job else None
        if job is None or job.state != "running":
            return locked
        price = job.price(c) or 0
        return price if price >= self.r else (locked or price)

    def _new_demand(self, c: Cluster, waiting: list[Age], add: _Add) -> None:
        """Demand not yet granted, as far as the spend limit leaves room for its worst case."""
        budget = self._budget(c)
        left = budget.left
        withheld = False
        if c.kind == "vm":
            price = c.max_price or 0
            want = len(waiting)
            if left is not None and want:
                fit = max(0, left) // max(1, worst_case(price, self.g, grant_span("vm")))
                withheld, want = fit < want, min(want, fit)
            for i, age in enumerate(waiting[:want]):
                add(f"v:{c.id}:{i:06d}", _Demand("vm", c, price=price), 1, age)
        else:
            for job in self._jobs_of(c, "pending"):
                price = job.price(c) or 0
                nodes = job.nodes - len(self.credit.get((c.id, job.name), []))
                worst = worst_case(price, nodes * self.g, grant_span("k8s"))
                if left is not None and price >= self.r:
                    if worst > left:
                        withheld = True
                        continue
                    left -= worst
                d = _Demand("job", c, job=job, price=price)
                add(f"p:{c.id}/{job.name}", d, nodes, job.age)
        if withheld:
            self.refused[c.id] = SPEND_LIMIT

    def _contestable(self, demand: dict[str, _Demand]) -> int:
        """Free nodes and held nodes whose window has lapsed, less the replacements still owed
        (they take reclaimed nodes ahead of every bid)."""
        held = sum(len(d.nodes) for d in demand.values())
        return max(0, len(self._free()) + held - len(self._owed()))

    def _apply(self, clearing: Clearing, units: list[Unit], demand: dict[str, _Demand]) -> None:
        won = set(clearing.winners)
        for u in units:
            d = demand[u.id]
            if u.id in won or not d.nodes:
                continue
            if d.kind == "running" and d.job is not None:
                self._preempt(d.job, "outbid: the gang's nodes were reclaimed by the market")
            else:
                for n in d.nodes:
                    self._release(n)
        self._deliver_owed()
        free = self._free()
        for u in units:
            d = demand[u.id]
            if u.id not in won or d.nodes:
                continue
            taken, free = free[: u.nodes], free[u.nodes :]
            self._grant(d, taken)

    def _grant(self, d: _Demand, nodes: list[Node]) -> None:
        c = d.cluster
        window = VM_WINDOW_NS if c.kind == "vm" else K8S_WINDOW_NS
        span = grant_span(c.kind)
        # the worst case is committed before the grant (same transaction, written first)
        self._commit(c, worst_case(d.price, len(nodes) * self.g, span))
        job = d.job
        if d.kind == "short" and job is not None and job.state != "running":
            job = None  # the job lost its other nodes this tick: the nodes land idle
        for n in nodes:
            n.cluster, n.granted_at = c.id, self.t
            n.window_ends_at = self.t + window
            n.hold_until = self.t + K8S_HOLD_NS if c.kind == "k8s" else None
            n.locked_price = d.price
            n.commit_price, n.commit_ends_at = d.price, self.t + span
            n.job = job.name if job is not None else None
            n.idle_since = None if job is not None or c.kind == "vm" else self.t
            self.holdings[c.id].append(n)
            self._touch(n)
        if job is None:
            return
        if d.kind == "job":
            self._assign(job, self.credit.pop((c.id, job.name), []))
            self._start(job, c, f"gang of {len(nodes)} nodes granted")
        else:
            shown = ", ".join(n.id for n in nodes)
            self._event(job, "NodeReplaced", f"{shown} granted for nodes out of service")

    # --- billing --------------------------------------------------------------------------

    def _charge(self, clearing: Clearing) -> None:
        """Bill the tick's interval [t, t + interval) in advance at each cluster's rate."""
        end = self.t + self.inp.interval_ns
        for cid, cc in clearing.clusters.items():
            c = self.clusters[cid]
            self.ledger.append(self._entry(CHARGE, c, self.t, end, cc.gpus, cc.rate))
            self._spend_started(c)
        for cid, (gpus, units) in sorted(self.committed.items()):
            self._record(self.clusters[cid], COMMITMENT, units, gpus)
            self._spend_started(self.clusters[cid])
        for cid, (gpus, units) in sorted(self.released.items()):
            self._record(self.clusters[cid], RELEASE, -units, gpus)

    def _spend_started(self, c: Cluster) -> None:
        """The rolling 24 h spend window starts at the first spend, not at midnight."""
        if not window_open(c.spend_window_start, self.t):
            c.spend_window_start = self.t
            self.changed_clusters[c.id] = c

    def _record(self, c: Cluster, kind: str, units: int, gpus: int) -> None:
        self.ledger.append(
            Entry(
                at=self.t,
                account=c.account,
                kind=kind,
                units=units,
                cluster=c.id,
                island=self.inp.island.id,
                tick=self.inp.tick,
                gpus=gpus,
            )
        )

    def _commit(self, c: Cluster, units: int) -> None:
        gpus, total = self.committed[c.id]
        self.committed[c.id] = (gpus + self.g, total + units)

    # --- state changes --------------------------------------------------------------------

    def _release(self, n: Node, minimum: bool = True) -> None:
        assert n.cluster is not None
        c = self.clusters[n.cluster]
        self.unpriced.pop(n.id, None)
        self._release_commitment(n)
        if minimum and c.kind == "k8s" and n.granted_at is not None:
            self._bill_minimum(c, n)
        self.holdings[c.id].remove(n)
        n.free()
        self._touch(n)

    def _release_commitment(self, n: Node) -> None:
        ends = n.commit_ends_at or 0
        if n.commit_price is not None and ends > self.t:
            gpus, units = self.released[n.cluster or ""]
            left = amount(n.commit_price, self.g, ends - self.t)
            self.released[n.cluster or ""] = (gpus + self.g, units + left)

    def _bill_minimum(self, c: Cluster, n: Node) -> None:
        """A Kubernetes node bills at least its hold, then in whole 5-minute increments."""
        assert n.granted_at is not None
        held = self.t - n.granted_at
        end = n.granted_at + -(-held // K8S_INCREMENT_NS) * K8S_INCREMENT_NS
        end = max(end, n.hold_until or 0)
        if end <= self.t:
            return
        rate = self.inp.rates.get(c.id, n.locked_price or 0)
        self.ledger.append(self._entry(HOLD, c, self.t, end, self.g, rate, node=n.id))

    def _preempt(self, job: Job, why: str) -> None:
        """The job goes back to pending; nodes still inside their window stay, idle, and so do
        its nodes on the cluster's block. A job started this same tick was never running: it
        goes back without an event, its nodes idle as they were (no Provisioned and Preempted
        in one tick)."""
        c = self.clusters[job.cluster]
        started = self.started.pop((job.cluster, job.name), None) is not None

        def idle(n: Node) -> None:
            n.job = None
            n.idle_since = (self.idle_before.get(n.id) or self.t) if started else self.t
            self._touch(n)

        for n in [n for n in self.holdings[c.id] if n.job == job.name]:
            if n.window_open(self.t) and self.refused.get(c.id) != BILLING_HOLD:
                idle(n)
                if not started:
                    n.locked_price = job.price(c)
            else:
                self._release(n)
        for n in self._block_of(c):
            if n.job == job.name:
                idle(n)
        job.state, job.provisioned_at, job.gang_price = "pending", None, None
        if started:
            self.changed_jobs[(job.cluster, job.name)] = job
        else:
            self._event(job, "Preempted", why)

    def _start(self, job: Job, c: Cluster, why: str) -> None:
        """The job runs from now; its `Provisioned` event waits for the end of the tick."""
        job.state, job.provisioned_at, job.gang_price = "running", self.t, job.price(c)
        self.started[(job.cluster, job.name)] = why
        self.changed_jobs[(job.cluster, job.name)] = job

    def _provisioned(self) -> None:
        for (cluster, name), why in self.started.items():
            self._event(self.jobs[(cluster, name)], "Provisioned", why)
        self.started.clear()

    def _job_verdicts(self) -> None:
        """A job whose price cannot meet the reserve while it bids (pending, or running on
        market nodes) reads bid_too_low and gets one BidTooLow event and one REFUSED line when
        that starts, whether the reserve or its price moved."""
        for c in self._sorted_clusters("k8s"):
            for job in [*self._jobs_of(c, "pending"), *self._jobs_of(c, "running")]:
                price = job.price(c)
                low = self._bids(job) and (price is None or price < self.r)
                if low and not job.bid_too_low:
                    shown = "no limit price" if price is None else f"{usd(price)} USD/GPU-h"
                    detail = f"{shown} is under the reserve {usd(self.r)}"
                    self._event(job, "BidTooLow", detail)
                    self._refuse(
                        c,
                        BidTooLow(
                            f"job {job.name}: {detail}: it can never clear",
                            cluster=c.id,
                            job=job.name,
                            price_per_gpu_hour=None if price is None else usd(price),
                            reserve_price=usd(self.r),
                        ),
                    )
                if low != job.bid_too_low:
                    job.bid_too_low = low
                    self.changed_jobs[(job.cluster, job.name)] = job

    def _bids(self, job: Job) -> bool:
        """Whether the job asks the market for anything: pending, or running on market nodes
        or short of nodes (a job wholly on its cluster's block bids nothing)."""
        if job.state == "pending":
            return True
        c = self.clusters[job.cluster]
        if any(n.job == job.name for n in self.holdings[c.id]):
            return True
        return self._placed(job) + self._owed_to(job) < job.nodes

    def _bid_verdicts(self, clearing: Clearing) -> set[str]:
        """Clusters with demand under the reserve this tick. A VM cluster's standing bid that
        the reserve overtakes logs one REFUSED line when that starts (a Kubernetes cluster's
        jobs log their own, `_job_verdicts`)."""
        low = set(clearing.bid_too_low)
        low |= {j.cluster for j in self.jobs.values() if j.bid_too_low and j.state != "finished"}
        for c in self._sorted_clusters():
            now_low = c.id in low
            if now_low and not c.bid_too_low and c.kind == "vm":
                price = c.max_price or 0
                self._refuse(
                    c,
                    BidTooLow(
                        f"{usd(price)} USD per GPU-hour is under the reserve price "
                        f"{usd(self.r)}: the demand waits and lapsed nodes are reclaimed",
                        cluster=c.id,
                        price_per_gpu_hour=usd(price),
                        reserve_price=usd(self.r),
                    ),
                )
            if now_low != c.bid_too_low:
                c.bid_too_low = now_low
                self.changed_clusters[c.id] = c
        return low

    def _refuse(self, c: Cluster, refusal: BidTooLow | SpendLimit | BillingHold) -> None:
        """One REFUSED line for a refusal the tick makes."""
        log_refusal(refusal)
        self.logged.add((c.id, refusal.code))

    def _set_reasons(self) -> None:
        for c in self._sorted_clusters():
            reason = self.refused.get(c.id)
            if reason == c.pending_reason:
                continue
            if reason is not None and (c.id, reason) not in self.logged:
                self._log_refusal(c, reason)
            c.pending_reason = reason
            self.changed_clusters[c.id] = c

    def _log_refusal(self, c: Cluster, reason: str) -> None:
        """One REFUSED line when the tick starts refusing a cluster's demand (not every tick)."""
        if reason == BILLING_HOLD:
            balance = self.inp.balances.get(c.account, 0)
            self._refuse(
                c,
                BillingHold(
                    "the account's balance is at or below zero: market capacity reclaimed",
                    cluster=c.id,
                    account=c.account,
                    balance_units=balance,
                ),
            )
        else:
            budget = self._budget(c)
            self._refuse(
                c,
                SpendLimit(
                    "the worst case of further grants does not fit the spend limit; "
                    "the demand stays pending",
                    cluster=c.id,
                    limit_units=budget.limit,
                    spent_units=budget.spent,
                    committed_units=budget.committed,
                ),
            )

    # --- helpers --------------------------------------------------------------------------

    def _budget(self, c: Cluster) -> Budget:
        if c.spend_limit is None:
            return Budget(None, 0, 0)
        spent = self.inp.spent.get(c.id, 0) if window_open(c.spend_window_start, self.t) else 0
        return Budget.of(c.spend_limit, spent, outstanding(self.holdings[c.id], self.g, self.t))

    def _wants(self, c: Cluster) -> bool:
        """Whether the cluster holds or asks for anything (else nothing can be refused)."""
        if self.holdings[c.id] or c.max_gpus:
            return True
        return any(j.cluster == c.id for j in self.jobs.values())

    def _live_price(self, c: Cluster, n: Node) -> int:
        if c.kind == "vm":
            return c.max_price or n.locked_price or 0
        job = self.jobs.get((c.id, n.job)) if n.job else None
        return (job.price(c) if job else None) or n.locked_price or 0

    def _sorted_clusters(self, kind: str | None = None) -> list[Cluster]:
        return [c for _, c in sorted(self.clusters.items()) if kind is None or c.kind == kind]

    def _jobs_of(self, c: Cluster, state: str) -> list[Job]:
        """The cluster's jobs in `state`, oldest first (equal times: the one accepted first)."""
        jobs = [j for j in self.jobs.values() if j.cluster == c.id and j.state == state]
        return sorted(jobs, key=lambda j: j.age)

    def _waiting(self, c: Cluster) -> list[Job]:
        """Pending jobs in placement order: priority class, then the oldest."""
        jobs = self._jobs_of(c, "pending")
        return sorted(jobs, key=lambda j: (-priority(j.priority_class), j.age))

    def _assign(self, job: Job, nodes: list[Node]) -> None:
        for n in nodes:
            self.idle_before.setdefault(n.id, n.idle_since)
            n.job, n.idle_since = job.name, None
            self._touch(n)

    def _placed(self, job: Job) -> int:
        """In-service nodes the job runs on (market and block)."""
        c = self.clusters[job.cluster]
        return sum(1 for n in [*self.holdings[c.id], *self._block_of(c)] if n.job == job.name)

    def _owed_to(self, job: Job) -> int:
        return sum(1 for n in self._owed() if n.cluster == job.cluster and n.job == job.name)

    def _free(self) -> list[Node]:
        return [n for n in self.inp.nodes if n.is_free()]

    def _live_blocks(self) -> list[Block]:
        blocks = [b for b in self.blocks.values() if b.state == LIVE]
        return sorted(blocks, key=lambda b: (b.starts_at, b.id))

    def _block_of(self, c: Cluster) -> list[Node]:
        b = self.blocks.get(c.id)
        return self.block_nodes[b.id] if b is not None and b.state == LIVE else []

    def _block_jobs(self, b: Block) -> list[Job]:
        names = sorted({n.job for n in self.block_nodes[b.id] if n.job is not None})
        return [self.jobs[(b.cluster, name)] for name in names if (b.cluster, name) in self.jobs]

    def _touch(self, n: Node) -> None:
        self.changed_nodes[n.id] = n

    def _touch_block(self, b: Block) -> None:
        self.changed_blocks[b.id] = b

    def _entry(
        self,
        kind: str,
        c: Cluster,
        start: int,
        end: int,
        gpus: int,
        rate: int,
        node: str | None = None,
    ) -> Entry:
        island, tick = self.inp.island.id, self.inp.tick
        return period_entry(
            kind, self.t, c.account, c.id, island, start, end, gpus, rate, tick=tick, node=node
        )

    def _event(self, job: Job, kind: str, detail: str) -> None:
        self.events.append(JobEvent(job.cluster, job.name, self.t, kind, detail))
        self.changed_jobs[(job.cluster, job.name)] = job

    def _output(
        self, clearing: Clearing, low: set[str], ladder: tuple[LadderRung, ...]
    ) -> TickOutput:
        allocations = []
        pending = 0
        for c in self._sorted_clusters():
            held = sorted(self.holdings[c.id], key=lambda n: n.idx)
            for n in held:
                kind = "protected" if n.id in self.protected_ids else "market"
                allocations.append((c.id, n.id, kind))
            for n in sorted(self._block_of(c), key=lambda n: n.idx):
                allocations.append((c.id, n.id, "base_load"))
            if c.kind == "vm":
                pending += max(0, c.max_gpus - len(held) * self.g)
            else:
                for j in self._jobs_of(c, "pending"):
                    credit = len(self.credit.get((c.id, j.name), []))
                    pending += (j.nodes - credit) * self.g
        verdicts = [(c, "bid-too-low") for c in sorted(low)]
        verdicts += sorted(self.refused.items())
        return TickOutput(
            clearing=clearing,
            ladder=ladder,
            nodes=sorted(self.changed_nodes.values(), key=lambda n: n.idx),
            jobs=list(self.changed_jobs.values()),
            clusters=list(self.changed_clusters.values()),
            events=self.events,
            ledger=self.ledger,
            rates={c: cc.rate for c, cc in clearing.clusters.items()},
            allocations=allocations,
            pending_gpus=pending,
            verdicts=verdicts,
            blocks=list(self.changed_blocks.values()),
        )
