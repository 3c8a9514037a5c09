"""What a cluster's token may do: declare VM capacity, bid and run Kubernetes jobs, set a spend
limit, read its bill. Inputs arrive parsed (µUSD ints); every refusal is a MarketError."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from burstmarket.clock import maybe_datetime, to_datetime
from burstmarket.contract import (
    BidView,
    BillingRowView,
    CapacityView,
    ClusterView,
    HeldNodeView,
    JobEventView,
    JobView,
    SpendLimitView,
)
from burstmarket.errors import (
    BidTooLow,
    BillingHold,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    OffGrid,
    SpendLimit,
)
from burstmarket.market.base_load import BaseLoadDesk
from burstmarket.market.guard import (
    Budget,
    outgrown,
    outstanding,
    window_open,
    worst_case,
)
from burstmarket.market.kinds import KINDS
from burstmarket.market.ledger import COMMITMENT, Entry, scale_down
from burstmarket.market.market import Market
from burstmarket.market.model import (
    LIVE,
    Block,
    Cluster,
    Island,
    Job,
    JobEvent,
    Node,
    newest_first,
    resized,
)
from burstmarket.market.report import Granularity, billing_rows
from burstmarket.market.state import (
    cluster_nodes,
    read_cluster,
    read_cluster_and_island,
)
from burstmarket.market.tables import BLOCKS, JOB_EVENTS, JOBS, LEDGER, NODE_STATE, NODES
from burstmarket.money import maybe_usd, units_to_usd, usd
from burstmarket.states import Kind
from burstmarket.store import Batch
from burstmarket.store.rows import Cursor, fetch, fetch_one, run

T = TypeVar("T")

MAX_LIVE_JOBS = 1000
"""Jobs a Kubernetes cluster may have pending or running at once (docs/api.md, limits)."""
JOB_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class AfterTick:
    """A declaration that must run after the island's tick in flight (market/runner.py, step 2)."""

    done: Future[None]


class Tenant:
    def __init__(self, market: Market) -> None:
        """The parts of `market` a tenant's requests use (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures
        self._hot = market.hot
        self.base_load = BaseLoadDesk(market)
        """Buying and reading base load blocks (market/base_load.py)."""

    # --- helpers --------------------------------------------------------------------------

    def _read(self, fn: Callable[[Cursor], T]) -> T:
        with self._db.read() as cur:
            return fn(cur)

    def _own(self, cur: Cursor, cluster_id: str, kind: Kind) -> tuple[Cluster, Island]:
        c, island = read_cluster_and_island(cur, cluster_id)
        self._kind(c, kind)
        return c, island

    def _kind(self, c: Cluster, kind: Kind) -> None:
        if c.kind != kind:
            raise Forbidden(
                f"this endpoint is for {kind} clusters; cluster {c.id} is {c.kind}",
                cluster=c.id,
                kind=c.kind,
            )

    def _budget(self, cur: Cursor, c: Cluster, g: int, now: int, nodes: list[Node]) -> Budget:
        if c.spend_limit is None or not window_open(c.spend_window_start, now):
            spent = 0
        else:
            row = fetch_one(cur, "cluster_spent", cluster=c.id, since=c.spend_window_start)
            spent = int(row["units"]) if row else 0
        # the last tick billed its interval in advance: that part is spent, not committed
        billed = self._figures.billed(c.island)
        since = now if billed is None else max(now, billed.end)
        committed = outstanding(nodes, g, since)
        return Budget.of(c.spend_limit, spent, committed)

    def _check_new_demand(
        self,
        cur: Cursor,
        c: Cluster,
        island: Island,
        price: int | None,
        gpus: int,
        now: int,
        nodes: Callable[[], list[Node]],
        raised: int = 0,
        on_block: bool = False,
    ) -> None:
        """The write-time checks on demand that asks the market for more (docs/market.md
        "Spend guard"): `gpus` more at `price`, and `raised` more committed for the nodes the
        cluster holds (`nodes`, read only when it has a spend limit). Demand its live block
        can hold (`on_block`) needs no balance: block work is paid for with the block."""
        balance = self._figures.balance(c.account)
        if balance <= 0 and not on_block:
            raise BillingHold(
                "the account's balance is at or below zero: new demand is refused until "
                "it is restored",
                cluster=c.id,
                account=c.account,
                balance_usd=float(units_to_usd(balance)),
            )
        self._check_bid(c, island, price)
        if price is not None:
            worst = worst_case(price, gpus, KINDS[c.kind].grant_span_ns)
            self._check_spend(cur, c, island, worst + raised, now, nodes)

    def _check_spend(
        self,
        cur: Cursor,
        c: Cluster,
        island: Island,
        worst: int,
        now: int,
        nodes: Callable[[], list[Node]],
    ) -> None:
        """`worst` more committed must fit what is left of the cluster's spend limit."""
        if c.spend_limit is None or not worst:
            return
        budget = self._budget(cur, c, island.gpus_per_node, now, nodes())
        if not budget.fits(worst):
            raise SpendLimit(
                "the worst case of this demand does not fit what is left of the spend limit",
                cluster=c.id,
                worst_case_usd=float(units_to_usd(worst)),
                left_usd=float(units_to_usd(budget.left or 0)),
                usd_per_day=usd(c.spend_limit),
            )

    def _check_bid(self, c: Cluster, island: Island, price: int | None, **figures: Any) -> None:
        if price is not None and price < island.reserve_price:
            raise BidTooLow(
                f"{usd(price)} USD per GPU-hour is under the reserve price "
                f"{usd(island.reserve_price)}: it can never clear",
                cluster=c.id,
                **figures,
                price_per_gpu_hour=usd(price),
                reserve_price=usd(island.reserve_price),
            )

    # --- VM capacity ----------------------------------------------------------------------

    def cluster(self, cluster_id: str) -> ClusterView:
        def read(cur: Cursor) -> ClusterView:
            c, island = read_cluster_and_island(cur, cluster_id)
            return ClusterView(
                id=c.id,
                account=c.account,
                island=island.id,
                kind=c.kind,
                gpus_per_node=island.gpus_per_node,
            )

        return self._read(read)

    def vm_capacity(self, cluster_id: str) -> CapacityView:
        return self._read(lambda cur: self._vm_view(cur, cluster_id))

    def _vm_view(self, cur: Cursor, cluster_id: str) -> CapacityView:
        c, island = self._own(cur, cluster_id, "vm")
        return self._vm_answer(c, island, cluster_nodes(cur, c.id))

    def _vm_answer(self, c: Cluster, island: Island, nodes: list[Node]) -> CapacityView:
        held = len(nodes) * island.gpus_per_node
        rate = self._figures.rate(island.id, c.id) if nodes else None
        return CapacityView(
            cluster=c.id,
            island=island.id,
            gpus_per_node=island.gpus_per_node,
            max_gpus=c.max_gpus,
            max_price_per_gpu_hour=maybe_usd(c.max_price),
            held_gpus=held,
            pending_gpus=max(0, c.max_gpus - held),
            nodes=[
                HeldNodeView(
                    id=n.id,
                    granted_at=maybe_datetime(n.granted_at),
                    window_ends_at=maybe_datetime(n.window_ends_at),
                    locked_price=maybe_usd(n.locked_price),
                )
                for n in nodes
            ],
            rate=maybe_usd(rate),
            bid_too_low=c.max_price is not None
            and c.max_gpus > held
            and c.max_price < island.reserve_price,
            spend_limit=maybe_usd(c.spend_limit),
            pending_reason=c.pending_reason,
        )

    async def declare_vm(
        self, cluster_id: str, max_gpus: int, max_price: int | None, release: list[str]
    ) -> CapacityView:
        """Declare, and answer once the declaration is committed (durable): it runs in the
        store's next group commit. One that releases held nodes while the island's tick is in
        flight waits for that tick, then runs (and is checked) again."""
        while True:
            answer = await asyncio.wrap_future(
                self._db.submit(
                    lambda batch: self._declare_vm(batch, cluster_id, max_gpus, max_price, release)
                )
            )
            if not isinstance(answer, AfterTick):
                return answer
            await asyncio.wrap_future(answer.done)

    def _declare_vm(
        self,
        batch: Batch,
        cluster_id: str,
        max_gpus: int,
        max_price: int | None,
        release: list[str],
    ) -> CapacityView | AfterTick:
        """A group-commit job on the hot copy (market/hot.py): every check first, from memory;
        then the changes, staged for the batch's writes. Answers with the capacity view."""
        hot = self._hot
        hot.begin(batch)
        cur = batch.cur
        c, nodes = hot.cluster(cur, cluster_id)
        self._kind(c, "vm")
        island = hot.island(cur, c.island)
        g = island.gpus_per_node
        if max_gpus < 0:
            raise Invalid("max_gpus", "must not be negative", cluster=c.id, max_gpus=max_gpus)
        if max_gpus % g:
            raise OffGrid(
                f"max_gpus {max_gpus} is not a multiple of gpus_per_node {g} (never rounded)",
                cluster=c.id,
                max_gpus=max_gpus,
                gpus_per_node=g,
            )
        if max_gpus > island.nodes * g:
            raise Invalid(
                "max_gpus",
                f"the island has {island.nodes * g} GPUs",
                cluster=c.id,
                max_gpus=max_gpus,
            )
        if max_price is None and max_gpus:
            raise Invalid(
                "max_price_per_gpu_hour", "is required unless max_gpus is 0", cluster=c.id
            )
        held = {n.id: n for n in nodes}
        unknown = [r for r in release if r not in held]
        if unknown:
            raise Invalid(
                "release", f"not held by this cluster: {', '.join(unknown)}", cluster=c.id
            )
        want = max_gpus // g
        declared = c.max_gpus // g
        now = self._clock.now_ns()
        growing = want > max(len(nodes), declared)
        excess = len(nodes) - want
        gone: list[Node] = []
        if excess > 0:  # scale-down: the nominated nodes first, then the newest grants
            nominated = [held[r] for r in dict.fromkeys(release)]
            rest = newest_first([n for n in nodes if n.id not in set(release)])
            gone = (nominated + rest)[:excess]
        # a higher ceiling lifts the cap of the nodes kept: their commitments grow with it
        leaving = {n.id for n in gone}
        kept = [n for n in nodes if n.id not in leaving]
        raised = outgrown(kept, max_price or 0, g, now)

        def holdings() -> list[Node]:
            hot.flush(cur)  # the spent figure reads the ledger: earlier jobs' rows first
            return nodes

        if growing:
            gpus = (want - len(nodes)) * g
            self._check_new_demand(cur, c, island, max_price, gpus, now, holdings, sum(raised))
        else:
            if want > len(nodes):
                self._check_bid(c, island, max_price)
            self._check_spend(cur, c, island, sum(raised), now, holdings)
        tick = self._lock.tick_in_flight(island.id)
        if tick is not None and (excess > 0 or any(raised)):
            return AfterTick(tick)  # it changes nodes the tick in flight may write
        if want != declared:
            # growth dates only the added units; a lower declaration drops the youngest
            seq = self._figures.next_seq() if want > declared else 0
            c.demand = resized(c.demand, want, now, seq)
        c.max_gpus, c.max_price = max_gpus, max_price
        hot.stage_demand(c)
        if any(raised):
            assert max_price is not None
            hot.stage_nodes(*self._recommit(c, kept, raised, max_price, now))
        if gone:
            hot.stage_release(c, gone, self._release(c, island, gone, now))
        return self._vm_answer(c, island, nodes)

    def _recommit(
        self, c: Cluster, nodes: list[Node], raised: list[int], price: int, now: int
    ) -> tuple[list[Node], list[Entry]]:
        """Commit what a raised cap adds to held nodes; the nodes changed and the ledger row."""
        grown = [n for n, extra in zip(nodes, raised, strict=True) if extra]
        for n in grown:
            n.commit_price = price
        entry = Entry(
            at=now,
            account=c.account,
            kind=COMMITMENT,
            units=sum(raised),
            cluster=c.id,
            island=c.island,
            gpus=0,
        )
        return grown, [entry]

    def _release(self, c: Cluster, island: Island, nodes: list[Node], now: int) -> list[Entry]:
        """Scale-down: the nodes go at once, billing stops at once; the ledger rows."""
        rate = self._figures.rate(island.id, c.id)
        billed = self._figures.billed(island.id)
        return scale_down(c, island.gpus_per_node, nodes, now, rate, billed)

    # --- Kubernetes -----------------------------------------------------------------------

    def k8s_bid(self, cluster_id: str) -> BidView:
        return self._read(lambda cur: self._bid_view(cur, cluster_id))

    def _bid_view(self, cur: Cursor, cluster_id: str) -> BidView:
        c, island = self._own(cur, cluster_id, "k8s")
        jobs = [JOBS.from_row(r) for r in fetch(cur, "cluster_jobs", cluster=c.id)]
        low = c.limit_price is None or c.limit_price < island.reserve_price
        return BidView(
            cluster=c.id,
            limit_price_per_gpu_hour=maybe_usd(c.limit_price),
            bid_too_low=low or any(_too_low(j, c, island) for j in jobs),
            pending_reason=c.pending_reason,
        )

    def set_k8s_bid(self, cluster_id: str, price: int) -> BidView:
        with self._lock, self._db.write() as cur:
            c, island = self._own(cur, cluster_id, "k8s")
            self._check_bid(c, island, price)
            run(cur, "update_limit_price", id=c.id, limit_price=price)
            c.limit_price = price
            jobs = [job for job in self._jobs(cur, c.id) if job.limit_price is None]
            self._recommit_jobs(cur, c, island, jobs, price)
            for job in jobs:
                self._void_if_lowered(cur, c, job)
        return self.k8s_bid(cluster_id)

    def _recommit_jobs(
        self, cur: Cursor, c: Cluster, island: Island, jobs: list[Job], price: int
    ) -> None:
        """The live limit caps a running job's nodes: raised to `price`, it commits what it adds
        to their commitments, refused if that does not fit the spend limit."""
        names = {job.name for job in jobs if job.state == "running"}
        held = cluster_nodes(cur, c.id)
        nodes = [n for n in held if n.job in names and n.block is None]
        now = self._clock.now_ns()
        raised = outgrown(nodes, price, island.gpus_per_node, now)
        if not any(raised):
            return
        self._check_spend(cur, c, island, sum(raised), now, lambda: held)
        grown, entries = self._recommit(c, nodes, raised, price, now)
        LEDGER.insert(cur, entries)
        NODES.update(cur, grown, NODE_STATE)

    def _jobs(self, cur: Cursor, cluster_id: str) -> list[Job]:
        return [JOBS.from_row(r) for r in fetch(cur, "cluster_jobs", cluster=cluster_id)]

    def _void_if_lowered(self, cur: Cursor, c: Cluster, job: Job) -> None:
        """A limit under the price the gang started at voids the job's windows at once."""
        price = job.price(c)
        if job.state != "running" or job.gang_price is None:
            return
        if price is not None and price >= job.gang_price:
            return
        now = self._clock.now_ns()
        nodes = [n for n in cluster_nodes(cur, c.id) if n.job == job.name]
        voided = [n for n in nodes if n.window_open(now)]
        if not voided:
            return
        for n in voided:
            n.window_ends_at = now
        NODES.update(cur, voided, NODE_STATE)
        shown = "no limit price" if price is None else f"{usd(price)} USD/GPU-h"
        self._event(
            cur,
            job,
            "WindowVoided",
            f"limit price lowered to {shown}, under {usd(job.gang_price)} held at gang start",
            now,
        )

    def _event(self, cur: Cursor, job: Job, kind: str, detail: str, at: int) -> None:
        JOB_EVENTS.insert(cur, [JobEvent(job.cluster, job.name, at, kind, detail)])

    def create_job(
        self,
        cluster_id: str,
        name: str,
        nodes: int | None,
        priority_class: str | None,
        price: int | None,
        pods: int | None = None,
        gpus_per_pod: int | None = None,
    ) -> JobView:
        """A job of `nodes` whole-node pods (one gang), or of `pods` pods of `gpus_per_pod`
        GPUs each: under a node's GPUs it is packed onto the cluster's block and never bids
        (docs/market.md "Small jobs on the block"); of a whole node's, it is `pods` nodes."""
        with self._lock, self._db.write() as cur:
            c, island = self._own(cur, cluster_id, "k8s")
            if not JOB_NAME.match(name):
                raise Invalid("name", "must be 1-63 lowercase letters, digits or '-'", cluster=c.id)
            nodes, pods, gpus_per_pod = _job_shape(c, island, nodes, pods, gpus_per_pod)
            if fetch_one(cur, "job", cluster=c.id, name=name) is not None:
                raise Conflict(f"job {name!r} already exists", cluster=c.id, job=name)
            live = fetch_one(cur, "cluster_live_jobs", cluster=c.id)
            if live is not None and live["jobs"] >= MAX_LIVE_JOBS:
                raise Invalid(
                    "jobs",
                    f"the cluster has {MAX_LIVE_JOBS} jobs not finished; finish one first",
                    cluster=c.id,
                    limit=MAX_LIVE_JOBS,
                )
            effective = price if price is not None else c.limit_price
            now = self._clock.now_ns()
            if gpus_per_pod is None:  # a small job never asks the market for anything
                block = self._live_block(cur, c)
                on_block = block is not None and nodes <= block.nodes
                held = lambda: cluster_nodes(cur, c.id)  # noqa: E731
                gpus = nodes * island.gpus_per_node
                self._check_new_demand(
                    cur, c, island, effective, gpus, now, held, on_block=on_block
                )
            run(
                cur,
                "insert_job",
                cluster=c.id,
                name=name,
                nodes=nodes,
                priority_class=priority_class,
                limit_price=price,
                created_at=now,
                seq=self._figures.next_seq(),
                pods=pods,
                gpus_per_pod=gpus_per_pod,
            )
        return self.job(cluster_id, name)

    def _live_block(self, cur: Cursor, c: Cluster) -> Block | None:
        rows = fetch(cur, "cluster_blocks", cluster=c.id)
        return next((b for b in map(BLOCKS.from_row, rows) if b.state == LIVE), None)

    def jobs(self, cluster_id: str) -> list[JobView]:
        def read(cur: Cursor) -> list[JobView]:
            c, island = self._own(cur, cluster_id, "k8s")
            return self._job_views(cur, c, island, self._jobs(cur, c.id))

        return self._read(read)

    def job(self, cluster_id: str, name: str) -> JobView:
        def read(cur: Cursor) -> JobView:
            c, island = self._own(cur, cluster_id, "k8s")
            return self._job_views(cur, c, island, [self._job(cur, c, name)], only=name)[0]

        return self._read(read)

    def _job(self, cur: Cursor, c: Cluster, name: str) -> Job:
        row = fetch_one(cur, "job", cluster=c.id, name=name)
        if row is None:
            raise NotFound(f"no job {name!r} in this cluster", cluster=c.id, job=name)
        return JOBS.from_row(row)

    def _job_views(
        self, cur: Cursor, c: Cluster, island: Island, jobs: list[Job], only: str | None = None
    ) -> list[JobView]:
        """The views of `jobs`: all the cluster's, or the one named `only` (whose events alone
        are read: a cluster's history of events grows with every job it ever ran)."""
        events: dict[str, list[JobEventView]] = {}
        for e in fetch(cur, "job_events", cluster=c.id, job=only):
            events.setdefault(e["job"], []).append(
                JobEventView(type=e["type"], at=to_datetime(e["ts"]), detail=e["detail"])
            )
        placed: dict[str, list[str]] = {}
        for n in cluster_nodes(cur, c.id):
            if n.job is not None:
                placed.setdefault(n.job, []).append(n.id)
        for j in jobs:
            if j.node is not None:
                placed[j.name] = [j.node]
        rate = self._figures.rate(c.island, c.id)
        return [
            JobView(
                name=j.name,
                nodes=j.nodes,
                state=j.state,
                priority_class=j.priority_class,
                provisioned_at=maybe_datetime(j.provisioned_at),
                limit_price_per_gpu_hour=maybe_usd(j.price(c)),
                rate=maybe_usd(rate) if j.state == "running" else None,
                node_ids=placed.get(j.name, []),
                bid_too_low=_too_low(j, c, island),
                events=events.get(j.name, []),
                pods=j.pods,
                gpus_per_pod=j.gpus_per_pod,
                reason=j.reason if j.state == "pending" else None,
            )
            for j in jobs
        ]

    def patch_job(
        self,
        cluster_id: str,
        name: str,
        price: int | None,
        set_price: bool,
        priority_class: str | None,
        set_class: bool,
    ) -> JobView:
        with self._lock, self._db.write() as cur:
            c, island = self._own(cur, cluster_id, "k8s")
            job = self._job(cur, c, name)
            if job.state == "finished":
                raise Conflict(f"job {name!r} has finished", cluster=c.id, job=name)
            if set_price:
                self._check_bid(c, island, price if price is not None else c.limit_price, job=name)
                job.limit_price = price
            if set_class:
                job.priority_class = priority_class
            run(
                cur,
                "update_job_terms",
                cluster=c.id,
                name=name,
                limit_price=job.limit_price,
                priority_class=job.priority_class,
            )
            if set_price:
                live = job.price(c)
                if live is not None:
                    self._recommit_jobs(cur, c, island, [job], live)
                self._void_if_lowered(cur, c, job)
        return self.job(cluster_id, name)

    def finish_job(self, cluster_id: str, name: str) -> JobView:
        """DELETE = the job finished: its nodes stay, idle, under the hold and idle grace."""
        with self._lock, self._db.write() as cur:
            c, island = self._own(cur, cluster_id, "k8s")
            job = self._job(cur, c, name)
            if job.state != "finished" and job.small:
                now = self._clock.now_ns()
                if job.node is not None:
                    self._leave_node(cur, job, now)
                run(cur, "finish_job", cluster=c.id, name=name, finished_at=now)
                self._event(cur, job, "Finished", "the job finished", now)
            elif job.state != "finished":
                now = self._clock.now_ns()
                reserve = island.reserve_price
                nodes = [NODES.from_row(r) for r in fetch(cur, "job_nodes", cluster=c.id, job=name)]
                for n in nodes:
                    n.job, n.idle_since, n.locked_price = None, now, job.price(c)
                    if n.owed_until is not None:
                        # a node out of service is owed a replacement only as long as it
                        # would have stayed, idle, had it been in service
                        ends = min(n.owed_until, n.idle_release_at(reserve))
                        n.owed_until = ends if ends > now else None
                NODES.update(cur, nodes, NODE_STATE)
                run(cur, "finish_job", cluster=c.id, name=name, finished_at=now)
                self._event(cur, job, "Finished", "the job finished; its nodes are idle", now)
        return self.job(cluster_id, name)

    def _leave_node(self, cur: Cursor, job: Job, now: int) -> None:
        """A finished small job frees its GPUs; the node it leaves empty is idle from now."""
        others = fetch_one(cur, "node_jobs", node=job.node, cluster=job.cluster, name=job.name)
        row = fetch_one(cur, "node", island=read_cluster(cur, job.cluster).island, node=job.node)
        if row is None or (others is not None and others["jobs"]):
            return
        n = NODES.from_row(row)
        if n.job is None and n.block is not None:
            n.idle_since = now
            NODES.update(cur, [n], NODE_STATE)

    # --- spend limit ----------------------------------------------------------------------

    def spend_limit(self, cluster_id: str) -> SpendLimitView:
        def read(cur: Cursor) -> SpendLimitView:
            c, island = read_cluster_and_island(cur, cluster_id)
            now = self._clock.now_ns()
            held = cluster_nodes(cur, c.id)
            budget = self._budget(cur, c, island.gpus_per_node, now, held)
            started = c.spend_window_start if window_open(c.spend_window_start, now) else None
            left = budget.left
            return SpendLimitView(
                usd_per_day=maybe_usd(c.spend_limit),
                window_started_at=maybe_datetime(started),
                spent_usd=float(units_to_usd(budget.spent)),
                committed_usd=float(units_to_usd(budget.committed)),
                left_usd=None if left is None else float(units_to_usd(left)),
            )

        return self._read(read)

    def set_spend_limit(self, cluster_id: str, usd_per_day: int | None) -> SpendLimitView:
        if usd_per_day is not None and usd_per_day <= 0:
            raise Invalid("usd_per_day", "must be greater than 0 (null removes the limit)")
        with self._lock, self._db.write() as cur:
            c = read_cluster(cur, cluster_id)
            run(cur, "update_spend_limit", id=c.id, spend_limit=usd_per_day)
        return self.spend_limit(cluster_id)

    # --- billing --------------------------------------------------------------------------

    def billing(
        self, cluster_id: str, start: int | None, end: int | None, granularity: Granularity
    ) -> list[BillingRowView]:
        def read(cur: Cursor) -> list[BillingRowView]:
            c = read_cluster(cur, cluster_id)
            return billing_rows(cur, c.id, start, end, granularity)

        return self._read(read)


def _job_shape(
    c: Cluster, island: Island, nodes: int | None, pods: int | None, gpus_per_pod: int | None
) -> tuple[int, int | None, int | None]:
    """(nodes, pods, gpus_per_pod) of a new job: `nodes` whole-node pods, or `pods` pods of
    `gpus_per_pod` GPUs; pods of a whole node's GPUs make a job of whole nodes."""
    g = island.gpus_per_node
    if nodes is not None:
        if pods is not None or gpus_per_pod is not None:
            raise Invalid("nodes", "give nodes, or pods and gpus_per_pod, not both", cluster=c.id)
        if not 1 <= nodes <= island.nodes:
            raise Invalid(
                "nodes", f"must be between 1 and {island.nodes}", cluster=c.id, nodes=nodes
            )
        return nodes, None, None
    if pods is None and gpus_per_pod is None:
        raise Invalid("nodes", "is required (or pods and gpus_per_pod)", cluster=c.id)
    if gpus_per_pod is None or not 1 <= gpus_per_pod <= g:
        raise Invalid(
            "gpus_per_pod",
            f"must be between 1 and the island's gpus_per_node {g}",
            cluster=c.id,
            gpus_per_pod=gpus_per_pod,
        )
    if pods is None or not 1 <= pods <= island.nodes * g // gpus_per_pod:
        raise Invalid(
            "pods",
            f"must be between 1 and {island.nodes * g // gpus_per_pod}",
            cluster=c.id,
            pods=pods,
        )
    if gpus_per_pod == g:
        return pods, None, None
    return 0, pods, gpus_per_pod


def _too_low(job: Job, c: Cluster, island: Island) -> bool:
    """A job's bid-too-low verdict as of now: the last tick's, cleared at once by a price that
    meets the reserve (a raise needs no tick to be seen)."""
    if job.state == "finished" or not job.bid_too_low:
        return False
    price = job.price(c)
    return price is None or price < island.reserve_price
