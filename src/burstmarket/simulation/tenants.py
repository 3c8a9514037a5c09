"""How a simulated tenant behaves, one step (one tick of market time) at a time.

A VM tenant reconsiders its size every few minutes: the daily cycle times its typical demand,
with noise; growing asks the market, shrinking releases nodes (sometimes naming which). A
Kubernetes tenant submits jobs as they arrive, finishes them once they have run their length,
and now and then one crashes and is restarted under a new name. A base load tenant buys a
posted block on its own, buys the next when it ends, and runs jobs smaller than a node on it.
Refusals are part of the market: a tenant that hears `bid-too-low` waits for the reserve to
move, `spend-limit` makes it ask for less, a refused purchase is tried again later.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from burstmarket.client import Refused, TenantClient
from burstmarket.simulation.cycle import demand_factor
from burstmarket.simulation.population import (
    JOB_MEDIAN_MINUTES,
    JOB_NODES,
    JOB_SIGMA,
    SMALL_JOBS,
    TenantSpec,
    mean_job_hours,
    mean_job_nodes,
    mean_small_job_gpus,
)

log = logging.getLogger(__name__)

Shape = tuple[int, int | None]
"""A job's (pods, GPUs per pod); None: whole-node pods."""

CRASH_PROBABILITY = 0.1
PENDING_PATIENCE = timedelta(hours=2)
"""A Kubernetes job still pending after this long is withdrawn."""
RECHECK = timedelta(minutes=20)
"""How long a tenant waits before looking again at a job that is not done."""
BUY_AGAIN = timedelta(minutes=30)
"""How long a base load tenant waits after a purchase it could not make."""


class SimulatedTenant:
    def __init__(
        self, spec: TenantSpec, client: TenantClient, rng: random.Random, reconsider: timedelta
    ) -> None:
        self.spec = spec
        self.client = client
        self.rng = rng
        self.reconsider = reconsider
        """Mean market time between two sizing decisions (VM tenants)."""

    async def start(self, now: datetime) -> None:
        """Set up once (limits, bids) and pick up what the cluster already has."""

    async def step(self, now: datetime, dt: timedelta) -> None:
        raise NotImplementedError

    def chance(self, per_hour: float, dt: timedelta) -> bool:
        """True with the probability that an event of rate `per_hour` happens within `dt`."""
        return self.rng.random() < 1 - math.exp(-per_hour * dt.total_seconds() / 3600)


class VmTenant(SimulatedTenant):
    def __init__(
        self, spec: TenantSpec, client: TenantClient, rng: random.Random, reconsider: timedelta
    ) -> None:
        super().__init__(spec, client, rng, reconsider)
        self.declared = 0
        self.gpus_per_node = 8
        self.arrives_at: datetime | None = None
        self.blocked_until: datetime | None = None

    async def start(self, now: datetime) -> None:
        capacity = await self.client.capacity()
        self.gpus_per_node = capacity.gpus_per_node
        self.declared = capacity.max_gpus // self.gpus_per_node
        if self.spec.spend_limit is not None:
            await self.client.set_spend_limit(self.spec.spend_limit)
        # tenants come in over the first minutes, so even a fresh market moves tick by tick
        self.arrives_at = now + timedelta(minutes=self.rng.uniform(0, 0.5))

    async def step(self, now: datetime, dt: timedelta) -> None:
        if self.arrives_at is not None:
            if now < self.arrives_at:
                return
            self.arrives_at = None
        elif not self.chance(timedelta(hours=1) / self.reconsider, dt):
            return
        if self.blocked_until is not None and now < self.blocked_until:
            return
        noise = self.rng.lognormvariate(0, 0.25)
        want = max(0, round(self.spec.typical_nodes * demand_factor(now) * noise))
        try:
            await self._size(want)
        except Refused as refused:
            # the market's answer, not a failure: wait a while before asking again
            log.debug("%s refused: %s", self.spec.name, refused)
            self.blocked_until = now + timedelta(minutes=15 if refused.code == "bid-too-low" else 5)

    async def _size(self, want: int) -> None:
        g = self.gpus_per_node
        if want < self.declared:
            release: list[str] = []
            if self.rng.random() < 0.5:
                # name the nodes to give back, as a tenant draining particular VMs would
                held = [n.id for n in (await self.client.capacity()).nodes]
                release = self.rng.sample(held, min(len(held), self.declared - want))
            await self.client.declare(want * g, self.spec.value, release)
        elif self.spec.ladder_aware and want:
            await self.client.declare_to_win(want, self.spec.value)
        elif want != self.declared:
            await self.client.declare(want * g, self.spec.value)
        self.declared = want


@dataclass(slots=True)
class LiveJob:
    pods: int
    gpus_per_pod: int | None
    """None: `pods` whole-node pods, one gang. Else pods smaller than a node, on the block."""
    work: timedelta
    """Running time the job needs before it is done."""
    submitted_at: datetime
    due_at: datetime
    """When the tenant next looks at it."""
    crash_after: timedelta | None = None
    """Running time after which it crashes (and is restarted), if it is one of those."""
    restarts: int = field(default=0)

    @property
    def shape(self) -> Shape:
        return self.pods, self.gpus_per_pod


class K8sTenant(SimulatedTenant):
    def __init__(
        self, spec: TenantSpec, client: TenantClient, rng: random.Random, reconsider: timedelta
    ) -> None:
        super().__init__(spec, client, rng, reconsider)
        self.jobs: dict[str, LiveJob] = {}
        self.seq = 0
        self.arrives_at: datetime | None = None
        # arrivals per hour at a demand factor of 1, so the jobs keep `typical_nodes` busy
        self.rate = spec.typical_nodes / (mean_job_nodes() * mean_job_hours())

    async def start(self, now: datetime) -> None:
        try:
            await self.client.set_bid(self.spec.value)
        except Refused as refused:
            # a value under the reserve (population.valuation draws a few): the market's answer,
            # so the cluster goes on with no limit price of its own, its jobs waiting for one
            log.debug("%s: limit price refused: %s", self.spec.name, refused)
        # a restart of the simulation picks its jobs back up; names are never reused
        for job in await self.client.jobs():
            self.seq = max(self.seq, _seq(job.name))
            if job.state != "finished":
                shape = (job.pods or job.nodes, job.gpus_per_pod)
                self.jobs[job.name] = self._plan(shape, now, self._work())
        self.arrives_at = now + timedelta(minutes=self.rng.uniform(0, 0.5))

    def _work(self) -> timedelta:
        minutes = self.rng.lognormvariate(math.log(JOB_MEDIAN_MINUTES), JOB_SIGMA)
        return timedelta(minutes=max(2.0, minutes))

    def _shape(self) -> Shape:
        """A new job's (pods, GPUs per pod): whole-node pods (None), one gang."""
        return self.rng.choice(JOB_NODES), None

    def _nodes(self, shape: Shape) -> float:
        """How many nodes' worth of GPUs a job of `shape` keeps busy."""
        return shape[0]

    def _plan(self, shape: Shape, now: datetime, work: timedelta, restarts: int = 0) -> LiveJob:
        crash = None
        if self.rng.random() < CRASH_PROBABILITY:
            crash = work * self.rng.uniform(0.1, 0.9)
        return LiveJob(*shape, work, now, now + (crash or work), crash, restarts)

    async def step(self, now: datetime, dt: timedelta) -> None:
        if self.arrives_at is not None:
            if now < self.arrives_at:
                return
            self.arrives_at = None
            await self._backlog(now)
        for name, job in list(self.jobs.items()):
            if now >= job.due_at:
                await self._check(name, job, now)
        if self.chance(self.rate * demand_factor(now), dt):
            await self._submit(self._shape(), now, self._work())

    async def _backlog(self, now: datetime) -> None:
        """Arrive with the work a tenant in the steady state has on hand (each job part-way
        through), rather than ramping up over an hour."""
        busy = sum(self._nodes(job.shape) for job in self.jobs.values())
        while busy < self.spec.typical_nodes * demand_factor(now):
            shape = self._shape()
            await self._submit(shape, now, self._work() * self.rng.uniform(0.05, 1))
            busy += self._nodes(shape)

    async def _submit(
        self, shape: Shape, now: datetime, work: timedelta, restarts: int = 0
    ) -> None:
        self.seq += 1
        name = f"job-{self.seq:06d}"
        pods, gpus_per_pod = shape
        own_price = None
        if gpus_per_pod is None and self.rng.random() < 0.3:
            # an urgent job pays more than the cluster's limit, a best-effort one less
            own_price = round(self.spec.value * self.rng.uniform(0.8, 1.3), 2)
        try:
            await self.client.submit_job(
                name,
                pods if gpus_per_pod is None else None,
                pods=None if gpus_per_pod is None else pods,
                gpus_per_pod=gpus_per_pod,
                priority_class=self.rng.choice(("batch", "batch", "prod")),
                limit_price_per_gpu_hour=own_price,
            )
        except Refused as refused:
            log.debug("%s: job %s refused: %s", self.spec.name, name, refused)
            return
        self.jobs[name] = self._plan(shape, now, work, restarts)

    async def _check(self, name: str, job: LiveJob, now: datetime) -> None:
        seen = await self.client.job(name)
        if seen.state == "finished":
            del self.jobs[name]
            return
        if seen.state != "running" or seen.provisioned_at is None:
            if now - job.submitted_at > PENDING_PATIENCE:
                await self._finish(name)
            else:
                job.due_at = now + RECHECK
            return
        # running time counts from the last provisioning: a preempted job starts over
        ran = now - seen.provisioned_at
        if job.crash_after is not None and ran >= job.crash_after:
            await self._finish(name)
            log.debug("%s: job %s crashed; restarting it", self.spec.name, name)
            await self._submit(job.shape, now, job.work - job.crash_after, job.restarts + 1)
        elif ran >= job.work:
            await self._finish(name)
        else:
            # look again when it should be done (a preemption in between restarts the count)
            job.due_at = now + ((job.crash_after or job.work) - ran)

    async def _finish(self, name: str) -> None:
        await self.client.finish_job(name)
        self.jobs.pop(name, None)


class BaseLoadTenant(K8sTenant):
    """A Kubernetes tenant that buys a base load block on its own (its spec's cell of the
    island's posted offers), buys the next one when it ends, and runs jobs smaller than a node
    on it, packed by GPU count (they never bid)."""

    def __init__(
        self, spec: TenantSpec, client: TenantClient, rng: random.Random, reconsider: timedelta
    ) -> None:
        super().__init__(spec, client, rng, reconsider)
        self.gpus_per_node = 8
        self.buy_at: datetime | None = None
        """When to look for a block again: the live one's end, or a retry after a refusal."""

    async def start(self, now: datetime) -> None:
        await super().start(now)
        self.gpus_per_node = (await self.client.base_load_offers()).gpus_per_node
        self.rate = (
            self.spec.typical_nodes
            * self.gpus_per_node
            / (mean_small_job_gpus() * mean_job_hours())
        )
        live = (await self.client.base_load()).live
        self.buy_at = None if live is None else live.ends_at

    async def step(self, now: datetime, dt: timedelta) -> None:
        if self.arrives_at is None or now >= self.arrives_at:
            await self._keep_block(now)
        await super().step(now, dt)

    async def _keep_block(self, now: datetime) -> None:
        """Buy the spec's cell when no block is live (at the start, and when one ends)."""
        if self.buy_at is not None and now < self.buy_at:
            return
        assert self.spec.base_load is not None
        size, term = self.spec.base_load
        try:
            block = await self.client.buy_base_load(size, term)
        except Refused as refused:
            # sold out, or the last block not ended yet at this tick: look again later
            log.info("simulation: %s could not buy base load: %s", self.spec.name, refused)
            self.buy_at = now + BUY_AGAIN
            return
        log.info(
            "simulation: %s bought base load %s: %d GPUs for %d h at %s USD per GPU-hour",
            self.spec.name,
            block.id,
            block.gpus,
            term,
            block.rate_per_gpu_hour,
        )
        self.buy_at = block.ends_at

    def _shape(self) -> Shape:
        return self.rng.choice(SMALL_JOBS)

    def _nodes(self, shape: Shape) -> float:
        pods, gpus_per_pod = shape
        return pods * (gpus_per_pod or self.gpus_per_node) / self.gpus_per_node


def _seq(name: str) -> int:
    head, _, tail = name.rpartition("-")
    return int(tail) if head == "job" and tail.isdigit() else 0


def make_tenant(
    spec: TenantSpec, client: TenantClient, rng: random.Random, reconsider: timedelta
) -> SimulatedTenant:
    kind: type[SimulatedTenant] = VmTenant
    if spec.kind == "k8s":
        kind = K8sTenant if spec.base_load is None else BaseLoadTenant
    return kind(spec, client, rng, reconsider)
