"""Kubernetes: a cluster's limit price (`/api/k8s/bid`) and its jobs (`/api/k8s/jobs`).

A job of whole-node pods is one gang that bids for its nodes at its own limit price or the
cluster's; a job of pods smaller than one node is packed onto the cluster's base load block and
never bids (docs/market.md "Small jobs on the block"). Every change is an exclusive section:
the market lock and one store transaction."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from burstmarket.clock import maybe_datetime, to_datetime
from burstmarket.contract import BidChange, BidView, JobChange, JobEventView, JobView, NewJob
from burstmarket.errors import Conflict, Invalid, NotFound
from burstmarket.market.desks.clusters_desk import check_kind
from burstmarket.market.desks.inputs import name, optional_price, price
from burstmarket.market.desks.spend_guard import SpendGuard, recommitted
from burstmarket.market.guard import outgrown
from burstmarket.market.lookups import cluster_nodes, read_cluster, read_cluster_and_island
from burstmarket.market.market import Market
from burstmarket.market.model import LIVE, Block, Cluster, Island, Job, JobEvent, Node
from burstmarket.market.pending_view import pending_detail_view
from burstmarket.market.tables import BLOCKS, JOB_EVENTS, JOBS, LEDGER, NODE_STATE, NODES
from burstmarket.money import maybe_usd, usd
from burstmarket.states import PendingReason
from burstmarket.store.rows import Cursor, fetch, fetch_one, run

MAX_LIVE_JOBS = 1000
"""Jobs a Kubernetes cluster may have pending or running at once (docs/api.md, limits)."""
LIMIT_PRICE = "limit_price_per_gpu_hour"


class Shape(NamedTuple):
    """A new job's size: `nodes` whole nodes, or `pods` pods of `gpus_per_pod` GPUs under a
    node's (then `nodes` is 0)."""

    nodes: int
    pods: int | None
    gpus_per_pod: int | None


class JobsDesk:
    def __init__(self, market: Market, guard: SpendGuard) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures
        self._guard = guard

    # --- the cluster's limit price ----------------------------------------------------------

    def bid(self, cluster_id: str) -> BidView:
        with self._db.read() as cur:
            c, island = _own(cur, cluster_id)
            jobs = _jobs(cur, c.id)
        low = c.limit_price is None or c.limit_price < island.reserve_price
        return BidView(
            cluster=c.id,
            limit_price_per_gpu_hour=maybe_usd(c.limit_price),
            bid_too_low=low or any(_too_low(j, c, island) for j in jobs),
            pending_reason=c.pending_reason,
            pending_detail=pending_detail_view(c.pending_reason, c.pending_detail),
        )

    def set_bid(self, cluster_id: str, change: BidChange) -> BidView:
        """The limit price of the cluster's jobs that have none of their own."""
        limit = price(LIMIT_PRICE, change.limit_price_per_gpu_hour)
        with self._lock, self._db.write() as cur:
            c, island = _own(cur, cluster_id)
            self._guard.check_bid(c, island, limit)
            run(cur, "update_limit_price", id=c.id, limit_price=limit)
            c.limit_price = limit
            jobs = [job for job in _jobs(cur, c.id) if job.limit_price is None]
            self._recommit(cur, c, island, jobs, limit)
            for job in jobs:
                self._void_if_lowered(cur, c, job)
        return self.bid(cluster_id)

    # --- jobs -------------------------------------------------------------------------------

    def create(self, cluster_id: str, new: NewJob) -> JobView:
        """A job of `nodes` whole-node pods (one gang), or of `pods` pods of `gpus_per_pod`
        GPUs each: under a node's GPUs it is packed onto the cluster's block and never bids
        (docs/market.md "Small jobs on the block"); of a whole node's, it is `pods` nodes."""
        limit = optional_price(LIMIT_PRICE, new.limit_price_per_gpu_hour)
        with self._lock, self._db.write() as cur:
            c, island = _own(cur, cluster_id)
            name("name", new.name, cluster=c.id)
            shape = _shape(c, island, new)
            _check_room(cur, c, new.name)
            now = self._clock.now_ns()
            if shape.gpus_per_pod is None:  # a small job never asks the market for anything
                self._check_guard(cur, c, island, shape.nodes, limit, now)
            run(
                cur,
                "insert_job",
                cluster=c.id,
                name=new.name,
                nodes=shape.nodes,
                priority_class=new.priority_class,
                limit_price=limit,
                created_at=now,
                seq=self._figures.next_seq(),
                pods=shape.pods,
                gpus_per_pod=shape.gpus_per_pod,
            )
            return self._view(cur, c, island, new.name)

    def _check_guard(
        self, cur: Cursor, c: Cluster, island: Island, nodes: int, limit: int | None, now: int
    ) -> None:
        """A gang is new demand at its price, or the cluster's; one its live block can hold
        needs no balance."""
        block = _live_block(cur, c)
        on_block = block is not None and nodes <= block.nodes
        effective = limit if limit is not None else c.limit_price
        gpus = nodes * island.gpus_per_node
        held = lambda: cluster_nodes(cur, c.id)  # noqa: E731
        self._guard.check_new_demand(cur, c, island, effective, gpus, now, held, on_block=on_block)

    def jobs(self, cluster_id: str) -> list[JobView]:
        with self._db.read() as cur:
            c, island = _own(cur, cluster_id)
            return self._views(cur, c, island, _jobs(cur, c.id))

    def job(self, cluster_id: str, job_name: str) -> JobView:
        with self._db.read() as cur:
            c, island = _own(cur, cluster_id)
            return self._view(cur, c, island, job_name)

    def patch(self, cluster_id: str, job_name: str, change: JobChange) -> JobView:
        """A new limit price or priority class (a field left out is kept; null removes it)."""
        given = change.limit_price_per_gpu_hour
        new_price = given if given is msgspec.UNSET else optional_price(LIMIT_PRICE, given)
        with self._lock, self._db.write() as cur:
            c, island = _own(cur, cluster_id)
            job = _job(cur, c, job_name)
            if job.state == "finished":
                raise Conflict(f"job {job_name!r} has finished", cluster=c.id, job=job_name)
            if new_price is not msgspec.UNSET:
                shown = new_price if new_price is not None else c.limit_price
                self._guard.check_bid(c, island, shown, job=job_name)
                job.limit_price = new_price
            if change.priority_class is not msgspec.UNSET:
                job.priority_class = change.priority_class
            run(
                cur,
                "update_job_terms",
                cluster=c.id,
                name=job_name,
                limit_price=job.limit_price,
                priority_class=job.priority_class,
            )
            if new_price is not msgspec.UNSET:
                live = job.price(c)
                if live is not None:
                    self._recommit(cur, c, island, [job], live)
                self._void_if_lowered(cur, c, job)
            return self._view(cur, c, island, job_name)

    def finish(self, cluster_id: str, job_name: str) -> JobView:
        """DELETE = the job finished: its nodes stay, idle, under the hold and idle grace."""
        with self._lock, self._db.write() as cur:
            c, island = _own(cur, cluster_id)
            job = _job(cur, c, job_name)
            if job.state != "finished":
                now = self._clock.now_ns()
                if job.small:
                    _finish_small(cur, job, now)
                else:
                    _finish_gang(cur, c, island, job, now)
            return self._view(cur, c, island, job_name)

    # --- what a new price does to running jobs ----------------------------------------------

    def _recommit(
        self, cur: Cursor, c: Cluster, island: Island, jobs: list[Job], limit: int
    ) -> None:
        """The live limit caps a running job's nodes: raised to `limit`, it commits what it adds
        to their commitments, refused if that does not fit the spend limit."""
        names = {job.name for job in jobs if job.state == "running"}
        held = cluster_nodes(cur, c.id)
        nodes = [n for n in held if n.job in names and n.block is None]
        now = self._clock.now_ns()
        raised = outgrown(nodes, limit, island.gpus_per_node, now)
        if not any(raised):
            return
        self._guard.check_spend(cur, c, island, sum(raised), now, lambda: held)
        grown, entries = recommitted(c, nodes, raised, limit, now)
        LEDGER.insert(cur, entries)
        NODES.update(cur, grown, NODE_STATE)

    def _void_if_lowered(self, cur: Cursor, c: Cluster, job: Job) -> None:
        """A limit under the price the gang started at voids the job's windows at once."""
        live = job.price(c)
        if job.state != "running" or job.gang_price is None:
            return
        if live is not None and live >= job.gang_price:
            return
        now = self._clock.now_ns()
        nodes = [n for n in cluster_nodes(cur, c.id) if n.job == job.name]
        voided = [n for n in nodes if n.window_open(now)]
        if not voided:
            return
        for n in voided:
            n.window_ends_at = now
        NODES.update(cur, voided, NODE_STATE)
        shown = "no limit price" if live is None else f"{usd(live)} USD/GPU-h"
        detail = f"limit price lowered to {shown}, under {usd(job.gang_price)} held at gang start"
        _event(cur, job, "WindowVoided", detail, now)

    # --- reads ------------------------------------------------------------------------------

    def _view(self, cur: Cursor, c: Cluster, island: Island, job_name: str) -> JobView:
        """The view of one job, read on `cur`: a change answers with its own transaction's
        rows (read in it, before the commit), not with a second read of the cluster."""
        return self._views(cur, c, island, [_job(cur, c, job_name)], only=job_name)[0]

    def _views(
        self, cur: Cursor, c: Cluster, island: Island, jobs: list[Job], only: str | None = None
    ) -> list[JobView]:
        """The views of `jobs`: all the cluster's, or the one named `only` (whose events alone
        are read: a cluster's history of events grows with every job it ever ran)."""
        events = fetch(cur, "job_events", cluster=c.id, job=only)
        held = cluster_nodes(cur, c.id)
        placed = _placed(held, jobs)
        blocks = _on_block(held, placed)
        rate = self._figures.rate(c.island, c.id)
        return _job_views(c, island, jobs, events, placed, blocks, rate)


def _own(cur: Cursor, cluster_id: str) -> tuple[Cluster, Island]:
    c, island = read_cluster_and_island(cur, cluster_id)
    check_kind(c, "k8s")
    return c, island


def _jobs(cur: Cursor, cluster_id: str) -> list[Job]:
    return [JOBS.from_row(r) for r in fetch(cur, "cluster_jobs", cluster=cluster_id)]


def _job(cur: Cursor, c: Cluster, job_name: str) -> Job:
    row = fetch_one(cur, "job", cluster=c.id, name=job_name)
    if row is None:
        raise NotFound(f"no job {job_name!r} in this cluster", cluster=c.id, job=job_name)
    return JOBS.from_row(row)


def _live_block(cur: Cursor, c: Cluster) -> Block | None:
    rows = fetch(cur, "cluster_blocks", cluster=c.id)
    return next((b for b in map(BLOCKS.from_row, rows) if b.state == LIVE), None)


def _event(cur: Cursor, job: Job, kind: str, detail: str, at: int) -> None:
    JOB_EVENTS.insert(cur, [JobEvent(job.cluster, job.name, at, kind, detail)])


def _shape(c: Cluster, island: Island, new: NewJob) -> Shape:
    """A new job's size: `nodes` whole-node pods, or `pods` pods of `gpus_per_pod` GPUs; pods
    of a whole node's GPUs make a job of whole nodes."""
    g = island.gpus_per_node
    nodes, pods, gpus_per_pod = new.nodes, new.pods, new.gpus_per_pod
    if nodes is not None:
        if pods is not None or gpus_per_pod is not None:
            raise Invalid("nodes", "give nodes, or pods and gpus_per_pod, not both", cluster=c.id)
        if not 1 <= nodes <= island.nodes:
            raise Invalid(
                "nodes", f"must be between 1 and {island.nodes}", cluster=c.id, nodes=nodes
            )
        return Shape(nodes, None, None)
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
        return Shape(pods, None, None)
    return Shape(0, pods, gpus_per_pod)


def _check_room(cur: Cursor, c: Cluster, job_name: str) -> None:
    """A new name, and room under the cluster's jobs not finished."""
    if fetch_one(cur, "job", cluster=c.id, name=job_name) is not None:
        raise Conflict(f"job {job_name!r} already exists", cluster=c.id, job=job_name)
    live = fetch_one(cur, "cluster_live_jobs", cluster=c.id)
    if live is not None and live["jobs"] >= MAX_LIVE_JOBS:
        raise Invalid(
            "jobs",
            f"the cluster has {MAX_LIVE_JOBS} jobs not finished; finish one first",
            cluster=c.id,
            limit=MAX_LIVE_JOBS,
        )


def _finish_small(cur: Cursor, job: Job, now: int) -> None:
    """A finished small job frees its GPUs; the node it leaves empty is idle from now."""
    if job.node is not None:
        others = fetch_one(cur, "node_jobs", node=job.node, cluster=job.cluster, name=job.name)
        island = read_cluster(cur, job.cluster).island
        row = fetch_one(cur, "node", island=island, node=job.node)
        if row is not None and not (others is not None and others["jobs"]):
            n = NODES.from_row(row)
            if n.job is None and n.block is not None:
                n.idle_since = now
                NODES.update(cur, [n], NODE_STATE)
    run(cur, "finish_job", cluster=job.cluster, name=job.name, finished_at=now)
    _event(cur, job, "Finished", "the job finished", now)


def _finish_gang(cur: Cursor, c: Cluster, island: Island, job: Job, now: int) -> None:
    """A finished gang's nodes stay with the cluster, idle at the job's price."""
    nodes = [NODES.from_row(r) for r in fetch(cur, "job_nodes", cluster=c.id, job=job.name)]
    _go_idle(nodes, job.price(c), island.reserve_price, now)
    NODES.update(cur, nodes, NODE_STATE)
    run(cur, "finish_job", cluster=c.id, name=job.name, finished_at=now)
    _event(cur, job, "Finished", "the job finished; its nodes are idle", now)


def _go_idle(nodes: list[Node], locked: int | None, reserve: int, now: int) -> None:
    for n in nodes:
        n.job, n.idle_since, n.locked_price = None, now, locked
        if n.owed_until is not None:
            # a node out of service is owed a replacement only as long as it would have
            # stayed, idle, had it been in service
            ends = min(n.owed_until, n.idle_release_at(reserve))
            n.owed_until = ends if ends > now else None


def _placed(held: list[Node], jobs: list[Job]) -> dict[str, list[str]]:
    """Job -> the nodes it runs on: a gang's nodes, a small job's one node."""
    placed: dict[str, list[str]] = {}
    for n in held:
        if n.job is not None:
            placed.setdefault(n.job, []).append(n.id)
    for j in jobs:
        if j.node is not None:
            placed[j.name] = [j.node]
    return placed


def _on_block(held: list[Node], placed: dict[str, list[str]]) -> dict[str, str]:
    """Job -> the base load block it runs on, for a job whose every node is on that block
    (such a job bids nothing on the market, so it has no market rate)."""
    block_of = {n.id: n.block for n in held}
    on: dict[str, str] = {}
    for job, ids in placed.items():
        blocks = {block_of.get(i) for i in ids}
        if len(blocks) == 1 and (block := blocks.pop()) is not None:
            on[job] = block
    return on


def _job_views(
    c: Cluster,
    island: Island,
    jobs: list[Job],
    event_rows: list[dict[str, Any]],
    placed: dict[str, list[str]],
    blocks: dict[str, str],
    rate: int | None,
) -> list[JobView]:
    events: dict[str, list[JobEventView]] = {}
    for e in event_rows:
        events.setdefault(e["job"], []).append(
            JobEventView(type=e["type"], at=to_datetime(e["ts"]), detail=e["detail"])
        )
    return [
        JobView(
            name=j.name,
            nodes=j.nodes,
            state=j.state,
            priority_class=j.priority_class,
            provisioned_at=maybe_datetime(j.provisioned_at),
            limit_price_per_gpu_hour=maybe_usd(j.price(c)),
            rate=maybe_usd(rate) if j.state == "running" and j.name not in blocks else None,
            node_ids=placed.get(j.name, []),
            block=blocks.get(j.name) if j.state == "running" else None,
            bid_too_low=_too_low(j, c, island),
            events=events.get(j.name, []),
            pods=j.pods,
            gpus_per_pod=j.gpus_per_pod,
            reason=j.reason if j.state == "pending" else None,
            pending_reason=_waits_for(j),
            pending_detail=pending_detail_view(_waits_for(j), j.pending_detail),
        )
        for j in jobs
    ]


def _waits_for(j: Job) -> PendingReason | None:
    """The job's pending cause, while it is pending."""
    return j.pending_reason if j.state == "pending" else None


def _too_low(job: Job, c: Cluster, island: Island) -> bool:
    """A job's bid-too-low verdict as of now: the last tick's, cleared at once by a price that
    meets the reserve (a raise needs no tick to be seen)."""
    if job.state == "finished" or not job.bid_too_low:
        return False
    live = job.price(c)
    return live is None or live < island.reserve_price
