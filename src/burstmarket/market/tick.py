"""One tick on one island as a pure function: state in, state changes and rows out (MARKET.md).

`run_tick` does housekeeping (billing hold, idle release, commitment renewals, jobs onto idle
nodes), turns the state into the auction's demand units and protected holdings, clears them,
and applies the outcome: reclaims first, then new grants onto free nodes in index order (a held
node whose unit wins stays where it is). It does no I/O; the service reads its input from the
store and writes its output in one transaction, so replaying a tick gives the same rows.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from burstmarket.auction import Clearing, IslandInput, Protected, Unit, clear
from burstmarket.clock import NS_PER_MS
from burstmarket.errors import BillingHold, SpendLimit
from burstmarket.market.guard import Budget, grant_span, outstanding, window_open, worst_case
from burstmarket.market.ledger import CHARGE, COMMITMENT, HOLD, RELEASE, Entry, amount
from burstmarket.market.model import (
    BILLING_HOLD,
    IDLE_GRACE_NS,
    K8S_HOLD_NS,
    K8S_INCREMENT_NS,
    K8S_WINDOW_NS,
    RENEWAL_NS,
    SPEND_LIMIT,
    VM_WINDOW_NS,
    Cluster,
    Island,
    Job,
    JobEvent,
    Node,
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


@dataclass(slots=True)
class TickOutput:
    clearing: Clearing
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


@dataclass(slots=True)
class _Demand:
    """What one auction unit stands for, to apply its outcome."""

    kind: str  # held | idle | running | vm | job
    cluster: Cluster
    nodes: list[Node] = field(default_factory=list)
    job: Job | None = None
    price: int = 0


_Add = Callable[[str, _Demand, int, int], None]


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
        for n in inp.nodes:
            if n.cluster is not None:
                self.holdings[n.cluster].append(n)
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

    # --- the tick -------------------------------------------------------------------------

    def run(self) -> TickOutput:
        self._billing_hold()
        self._release_idle()
        self._renew_commitments()
        self._place_on_idle()
        units, protected, demand = self._demand()
        clearing = clear(
            IslandInput(
                nodes=self._contestable(demand),
                gpus_per_node=self.g,
                reserve_price=self.r,
                units=tuple(units),
                protected=tuple(protected),
            )
        )
        self._apply(clearing, units, demand)
        self._charge(clearing)
        self._job_verdicts()
        self._set_reasons()
        return self._output(clearing)

    # --- housekeeping ---------------------------------------------------------------------

    def _billing_hold(self) -> None:
        for c in self._sorted_clusters():
            if self.inp.balances.get(c.account, 0) > 0 or not self._wants(c):
                continue
            self.refused[c.id] = BILLING_HOLD
            for job in self._jobs_of(c, "running"):
                self._preempt(job, "billing hold: the account's balance is at or below zero")
            for n in list(self.holdings[c.id]):
                self._release(n)

    def _release_idle(self) -> None:
        for c in self._sorted_clusters("k8s"):
            for n in list(self.holdings[c.id]):
                if n.job is not None or n.idle_since is None:
                    continue
                past_hold = self.t >= (n.hold_until or 0)
                past_grace = self.t >= n.idle_since + IDLE_GRACE_NS
                # the grace holds capacity only at a price that clears
                clears = n.locked_price is not None and n.locked_price >= self.r
                if (past_hold and past_grace) or not clears:
                    self._release(n)

    def _renew_commitments(self) -> None:
        """A node kept past its commitment commits its next hour, or goes if that does not fit."""
        for c in self._sorted_clusters():
            for n in list(self.holdings[c.id]):
                if n.commit_ends_at is None or n.commit_ends_at > self.t:
                    continue
                price = self._live_price(c, n)
                worst = worst_case(price, self.g, RENEWAL_NS)
                if not self._budget(c).fits(worst):
                    self.refused[c.id] = SPEND_LIMIT
                    job = self.jobs.get((c.id, n.job)) if n.job else None
                    if job is not None:
                        self._preempt(job, "spend limit: the next hour does not fit")
                    self._release(n)
                    continue
                n.commit_price, n.commit_ends_at = price, self.t + RENEWAL_NS
                self._commit(c, worst)
                self._touch(n)

    def _place_on_idle(self) -> None:
        """Pending jobs that fit on nodes the cluster already holds run there, inheriting the
        windows (no market needed: the cluster holds and pays for those nodes)."""
        for c in self._sorted_clusters("k8s"):
            idle = [n for n in self.holdings[c.id] if n.job is None]
            for job in self._jobs_of(c, "pending"):
                if job.nodes > len(idle):
                    continue
                taken, idle = idle[: job.nodes], idle[job.nodes :]
                for n in taken:
                    n.job, n.idle_since = job.name, None
                    self._touch(n)
                self._start(job, c, "placed on idle nodes the cluster holds")

    # --- the auction ----------------------------------------------------------------------

    def _demand(self) -> tuple[list[Unit], list[Protected], dict[str, _Demand]]:
        units: list[Unit] = []
        demand: dict[str, _Demand] = {}
        locks: dict[tuple[str, int], int] = defaultdict(int)

        def add(uid: str, d: _Demand, nodes: int, since: int) -> None:
            units.append(Unit(uid, d.cluster.id, nodes, d.price, since))
            demand[uid] = d

        for c in self._sorted_clusters():
            if self.refused.get(c.id) == BILLING_HOLD:
                continue
            held = self.holdings[c.id]
            running: dict[str, list[Node]] = defaultdict(list)
            for n in held:
                if n.job is not None:
                    running[n.job].append(n)
                    continue
                price = (c.max_price if c.kind == "vm" else n.locked_price) or 0
                if n.window_open(self.t):
                    locks[(c.id, n.locked_price or 0)] += 1
                    self.protected_ids.add(n.id)
                else:
                    kind = "held" if c.kind == "vm" else "idle"
                    add(f"n:{n.id}", _Demand(kind, c, [n], price=price), 1, n.granted_at or 0)
            for name, nodes in sorted(running.items()):
                job = self.jobs[(c.id, name)]
                price = job.price(c) or 0
                lapsed = [n for n in nodes if not n.window_open(self.t)]
                for n in nodes:
                    if n.window_open(self.t):
                        locks[(c.id, price)] += 1
                        self.protected_ids.add(n.id)
                if lapsed:
                    since = min(n.granted_at or 0 for n in lapsed)
                    d = _Demand("running", c, lapsed, job, price)
                    add(f"r:{c.id}/{name}", d, len(lapsed), since)
            self._new_demand(c, held, add)

        units.sort(key=lambda u: (u.since, u.id))
        protected = [Protected(c, k, price) for (c, price), k in sorted(locks.items())]
        return units, protected, demand

    def _new_demand(self, c: Cluster, held: list[Node], add: _Add) -> None:
        """Demand not yet granted, as far as the spend limit leaves room for its worst case."""
        budget = self._budget(c)
        left = budget.left
        withheld = False
        if c.kind == "vm":
            price = c.max_price or 0
            want = max(0, c.max_gpus // self.g - len(held))
            if left is not None and want:
                fit = max(0, left) // max(1, worst_case(price, self.g, grant_span("vm")))
                withheld, want = fit < want, min(want, fit)
            for i in range(want):
                add(f"v:{c.id}:{i:06d}", _Demand("vm", c, price=price), 1, c.demand_since)
        else:
            for job in self._jobs_of(c, "pending"):
                price = job.price(c) or 0
                worst = worst_case(price, job.nodes * self.g, grant_span("k8s"))
                if left is not None and price >= self.r:
                    if worst > left:
                        withheld = True
                        continue
                    left -= worst
                d = _Demand("job", c, job=job, price=price)
                add(f"p:{c.id}/{job.name}", d, job.nodes, job.created_at)
        if withheld:
            self.refused[c.id] = SPEND_LIMIT

    def _contestable(self, demand: dict[str, _Demand]) -> int:
        free = sum(1 for n in self.inp.nodes if n.cluster is None)
        return free + sum(len(d.nodes) for d in demand.values() if d.kind != "job")

    def _apply(self, clearing: Clearing, units: list[Unit], demand: dict[str, _Demand]) -> None:
        won = set(clearing.winners)
        for u in units:
            d = demand[u.id]
            if u.id in won or d.kind in ("vm", "job"):
                continue
            if d.kind == "running" and d.job is not None:
                self._preempt(d.job, "outbid: the gang's nodes were reclaimed by the market")
            else:
                for n in d.nodes:
                    self._release(n)
        free = [n for n in self.inp.nodes if n.cluster is None]
        for u in units:
            d = demand[u.id]
            if u.id not in won or d.kind not in ("vm", "job"):
                continue
            taken, free = free[: u.nodes], free[u.nodes :]
            self._grant(d, taken)

    def _grant(self, d: _Demand, nodes: list[Node]) -> None:
        c = d.cluster
        window = VM_WINDOW_NS if c.kind == "vm" else K8S_WINDOW_NS
        span = grant_span(c.kind)
        # the worst case is committed before the grant (same transaction, written first)
        self._commit(c, worst_case(d.price, len(nodes) * self.g, span))
        for n in nodes:
            n.cluster, n.granted_at = c.id, self.t
            n.window_ends_at = self.t + window
            n.hold_until = self.t + K8S_HOLD_NS if c.kind == "k8s" else None
            n.locked_price = d.price
            n.commit_price, n.commit_ends_at = d.price, self.t + span
            n.job = d.job.name if d.job is not None else None
            n.idle_since = None
            self.holdings[c.id].append(n)
            self._touch(n)
        if d.job is not None:
            self._start(d.job, c, f"gang of {len(nodes)} nodes granted")

    # --- billing --------------------------------------------------------------------------

    def _charge(self, clearing: Clearing) -> None:
        span = self.inp.interval_ns
        for cid, cc in clearing.clusters.items():
            c = self.clusters[cid]
            self.ledger.append(
                Entry(
                    at=self.t,
                    account=c.account,
                    kind=CHARGE,
                    units=amount(cc.rate, cc.gpus, span),
                    cluster=cid,
                    island=self.inp.island.id,
                    tick=self.inp.tick,
                    period_start=self.t,
                    period_end=self.t + span,
                    gpus=cc.gpus,
                    gpu_ms=cc.gpus * (span // NS_PER_MS),
                    rate=cc.rate,
                )
            )
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

    def _release(self, n: Node) -> None:
        assert n.cluster is not None
        c = self.clusters[n.cluster]
        ends = n.commit_ends_at or 0
        if n.commit_price is not None and ends > self.t:
            gpus, units = self.released[c.id]
            left = amount(n.commit_price, self.g, ends - self.t)
            self.released[c.id] = (gpus + self.g, units + left)
        if c.kind == "k8s" and n.granted_at is not None:
            self._bill_minimum(c, n)
        self.holdings[c.id].remove(n)
        n.free()
        self._touch(n)

    def _bill_minimum(self, c: Cluster, n: Node) -> None:
        """A Kubernetes node bills at least its hold, then in whole 5-minute increments."""
        assert n.granted_at is not None
        held = self.t - n.granted_at
        end = n.granted_at + -(-held // K8S_INCREMENT_NS) * K8S_INCREMENT_NS
        end = max(end, n.hold_until or 0)
        if end <= self.t:
            return
        rate = self.inp.rates.get(c.id, n.locked_price or 0)
        span = end - self.t
        self.ledger.append(
            Entry(
                at=self.t,
                account=c.account,
                kind=HOLD,
                units=amount(rate, self.g, span),
                cluster=c.id,
                island=self.inp.island.id,
                tick=self.inp.tick,
                node=n.id,
                period_start=self.t,
                period_end=end,
                gpus=self.g,
                gpu_ms=self.g * (span // NS_PER_MS),
                rate=rate,
            )
        )

    def _preempt(self, job: Job, why: str) -> None:
        """The job goes back to pending; nodes still inside their window stay, idle."""
        c = self.clusters[job.cluster]
        for n in [n for n in self.holdings[c.id] if n.job == job.name]:
            if n.window_open(self.t) and self.refused.get(c.id) != BILLING_HOLD:
                n.job, n.idle_since, n.locked_price = None, self.t, job.price(c)
                self._touch(n)
            else:
                self._release(n)
        job.state, job.provisioned_at, job.gang_price = "pending", None, None
        self._event(job, "Preempted", why)

    def _start(self, job: Job, c: Cluster, why: str) -> None:
        job.state, job.provisioned_at, job.gang_price = "running", self.t, job.price(c)
        job.bid_too_low = False
        self._event(job, "Provisioned", why)

    def _job_verdicts(self) -> None:
        for c in self._sorted_clusters("k8s"):
            for job in self._jobs_of(c, "pending"):
                price = job.price(c)
                low = price is None or price < self.r
                if low and not job.bid_too_low:
                    shown = "no limit price" if price is None else f"{usd(price)} USD/GPU-h"
                    self._event(job, "BidTooLow", f"{shown} is under the reserve {usd(self.r)}")
                if low != job.bid_too_low:
                    job.bid_too_low = low
                    self.changed_jobs[(job.cluster, job.name)] = job

    def _set_reasons(self) -> None:
        for c in self._sorted_clusters():
            reason = self.refused.get(c.id)
            if reason == c.pending_reason:
                continue
            if reason is not None:
                self._log_refusal(c, reason)
            c.pending_reason = reason
            self.changed_clusters[c.id] = c

    def _log_refusal(self, c: Cluster, reason: str) -> None:
        """One REFUSED line when the tick starts refusing a cluster's demand (not every tick)."""
        if reason == BILLING_HOLD:
            balance = self.inp.balances.get(c.account, 0)
            log_refusal(
                BillingHold(
                    "the account's balance is at or below zero: market capacity reclaimed",
                    cluster=c.id,
                    account=c.account,
                    balance_units=balance,
                )
            )
        else:
            budget = self._budget(c)
            log_refusal(
                SpendLimit(
                    "the worst case of further grants does not fit the spend limit; "
                    "the demand stays pending",
                    cluster=c.id,
                    limit_units=budget.limit,
                    spent_units=budget.spent,
                    committed_units=budget.committed,
                )
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
        jobs = [j for j in self.jobs.values() if j.cluster == c.id and j.state == state]
        return sorted(jobs, key=lambda j: (j.created_at, j.name))

    def _touch(self, n: Node) -> None:
        self.changed_nodes[n.id] = n

    def _event(self, job: Job, kind: str, detail: str) -> None:
        self.events.append(JobEvent(job.cluster, job.name, self.t, kind, detail))
        self.changed_jobs[(job.cluster, job.name)] = job

    def _output(self, clearing: Clearing) -> TickOutput:
        allocations = []
        pending = 0
        for c in self._sorted_clusters():
            held = sorted(self.holdings[c.id], key=lambda n: n.idx)
            for n in held:
                kind = "protected" if n.id in self.protected_ids else "market"
                allocations.append((c.id, n.id, kind))
            if c.kind == "vm":
                pending += max(0, c.max_gpus - len(held) * self.g)
            else:
                pending += sum(j.nodes * self.g for j in self._jobs_of(c, "pending"))
        verdicts = [(c, "bid-too-low") for c in sorted(clearing.bid_too_low)]
        verdicts += sorted(self.refused.items())
        return TickOutput(
            clearing=clearing,
            nodes=sorted(self.changed_nodes.values(), key=lambda n: n.idx),
            jobs=list(self.changed_jobs.values()),
            clusters=list(self.changed_clusters.values()),
            events=self.events,
            ledger=self.ledger,
            rates={c: cc.rate for c, cc in clearing.clusters.items()},
            allocations=allocations,
            pending_gpus=pending,
            verdicts=verdicts,
        )
