"""Verdicts (docs/market.md "Refusals", "Why it waits"): demand under the reserve reads
bid_too_low, and every pending demand its cause with the figures; a refusal starts with one
REFUSED line, not one every tick, and a job that becomes outbid with one `Outbid` event."""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Final, get_args

from burstmarket.auction import Clearing
from burstmarket.clock import rfc3339
from burstmarket.errors import BidTooLow, BillingHold, SpendLimit
from burstmarket.market.guard import worst_case
from burstmarket.market.kinds import KINDS
from burstmarket.market.model import (
    BID_TOO_LOW,
    BILLING_HOLD,
    NO_SUPPLY,
    OUTBID,
    PACKING_DISABLED,
    RESERVED_BUSY,
    RESERVED_TOO_SMALL,
    SPEND_LIMIT,
    WINDOWS,
    Cluster,
    Job,
    PendingDetail,
)
from burstmarket.market.own_ladder import OwnRung
from burstmarket.market.tick.tick_state import TickState
from burstmarket.money import units_to_micros, usd
from burstmarket.states import HeldBack, PendingReason


def jobs_too_low(s: TickState) -> None:
    """A job whose price cannot meet the reserve while it bids (pending, or running on market
    nodes) reads bid_too_low and gets one BidTooLow event and one REFUSED line when that
    starts, whether the reserve or its price moved."""
    for c in s.job_clusters():
        for job in [*s.jobs_of(c, "pending"), *s.jobs_of(c, "running")]:
            price = job.price(c)
            low = _bids(s, job) and (price is None or price < s.reserve_price)
            if low and not job.bid_too_low:
                shown = "no limit price" if price is None else f"{usd(price)} USD/GPU-h"
                detail = f"{shown} is under the reserve {usd(s.reserve_price)}"
                s.event(job, "BidTooLow", detail)
                s.refuse(
                    c,
                    BidTooLow(
                        f"job {job.name}: {detail}: it can never clear",
                        cluster=c.id,
                        job=job.name,
                        price_per_gpu_hour=None if price is None else usd(price),
                        reserve_price=usd(s.reserve_price),
                    ),
                )
            if low != job.bid_too_low:
                job.bid_too_low = low
                s.changed_jobs[(job.cluster, job.name)] = job


def _bids(s: TickState, job: Job) -> bool:
    """Whether the job asks the market for anything: pending, or running on market nodes or
    short of nodes (a job wholly on its cluster's block bids nothing)."""
    if job.state == "pending" or s.running_on(job)[0]:
        return True
    return s.placed(job) + s.owed_to(job) < job.nodes


def clusters_too_low(s: TickState, clearing: Clearing) -> set[str]:
    """Clusters with demand under the reserve this tick. Each logs one REFUSED line when that
    starts, the one its kind gives (`DemandKind.too_low_refusal`: a VM cluster's standing bid
    that the reserve overtakes; a Kubernetes cluster's jobs log their own, `jobs_too_low`)."""
    low = set(clearing.bid_too_low)
    low |= {j.cluster for j in s.jobs.values() if j.bid_too_low and j.state != "finished"}
    for c in s.sorted_clusters():
        now_low = c.id in low
        if now_low and not c.bid_too_low:
            refusal = KINDS[c.kind].too_low_refusal(s, c)
            if refusal is not None:
                s.refuse(c, refusal)
        if now_low != c.bid_too_low:
            c.bid_too_low = now_low
            s.changed_clusters[c.id] = c
    return low


Cause = tuple[PendingReason, PendingDetail]
"""Why demand waits, with its figures."""

ORDER: Final[tuple[PendingReason, ...]] = get_args(PendingReason)
"""The causes in the order the first that holds is named (docs/market.md "Why it waits")."""
SMALL_WAITS: Final[tuple[PendingReason, ...]] = (
    PACKING_DISABLED,
    RESERVED_BUSY,
    RESERVED_TOO_SMALL,
)


def pending_reasons(s: TickState, low: set[str]) -> None:
    """Each cluster's and each pending job's cause, with its figures, from this tick (`low`:
    the clusters under the reserve; windows and outbid read each cluster's own ladder,
    `s.own_ladders`). A refusal that starts logs its one REFUSED line; a job that becomes
    outbid gets one `Outbid` event."""
    supply = _Supply(s)
    for c in s.sorted_clusters():
        refusal = _refusal(s, c)
        rungs = s.own_ladders.get(c.id, ())
        if KINDS[c.kind].runs_jobs:
            causes = [_job_cause(s, c, job, refusal, supply, rungs) for job in _jobs(s, c)]
            cause = refusal or _first(causes)
        else:
            cause = refusal or _declared_cause(s, c, c.id in low, supply, rungs)
        reason, detail = cause if cause is not None else (None, None)
        held_back = s.refused.get(c.id)
        starts = held_back is not None and held_back != c.pending_reason
        if held_back is not None and starts and (c.id, held_back) not in s.logged:
            _log_refusal(s, c, held_back)
        if (reason, detail) != (c.pending_reason, c.pending_detail):
            c.pending_reason, c.pending_detail = reason, detail
            s.changed_clusters[c.id] = c


class _Supply:
    """What the island has to give: its market nodes (no-supply), and when windows let them go
    (nodes held past the own ladder's hour), read once a tick and only if asked."""

    def __init__(self, s: TickState) -> None:
        self._s = s
        self.market = s.market_nodes()
        self._ends: list[int] | None = None

    def contestable_at(self, c: Cluster, nodes: int) -> int | None:
        """When `nodes` market nodes the cluster does not hold can be contested: free ones at
        the next tick, the others' at their window's end (None: not even then)."""
        s = self._s
        need = nodes - s.free_count()
        if need <= 0:
            return s.now + s.inp.interval_ns
        if self._ends is None:
            everyone = itertools.chain.from_iterable(s.held(o.id) for o in s.sorted_clusters())
            self._ends = sorted(n.window_ends_at or s.now for n in everyone)
        ends = self._ends
        own = sorted(n.window_ends_at or s.now for n in s.held(c.id))

        def others_by(i: int) -> int:
            """Other clusters' nodes free by the time `ends[i]`."""
            return bisect_right(ends, ends[i]) - bisect_right(own, ends[i])

        i = bisect_left(range(len(ends)), need, key=others_by)
        return ends[i] if i < len(ends) else None


def _jobs(s: TickState, c: Cluster) -> list[Job]:
    """The cluster's jobs: the pending ones in placement order (whole-node, then small), then
    the running ones (which wait for nothing)."""
    pending = [*s.waiting(c), *s.small_of(c, "pending")]
    return [*pending, *s.jobs_of(c, "running"), *s.small_of(c, "running")]


def _first(causes: list[Cause | None]) -> Cause | None:
    """The first cause in the order that holds for any job (the first such job's figures)."""
    found = [cause for cause in causes if cause is not None]
    return min(found, key=lambda cause: ORDER.index(cause[0]), default=None)


def _refusal(s: TickState, c: Cluster) -> Cause | None:
    """The tick holding the cluster's demand back: billing-hold, then spend-limit."""
    held_back = s.refused.get(c.id)
    if held_back == BILLING_HOLD:
        last = c.pending_detail if c.pending_reason == BILLING_HOLD else None
        since = last.since if last is not None else None
        if since is None:  # the hold starts: since the balance went to or below zero
            since = s.inp.hold_since.get(c.account, s.now)
        balance = units_to_micros(s.inp.balances.get(c.account, 0))
        return BILLING_HOLD, PendingDetail(since=since, balance=balance)
    if held_back == SPEND_LIMIT:
        worst = _declared_worst(s, c) if not KINDS[c.kind].runs_jobs else _jobs_worst(s, c)
        return _spend_limit(s, c, worst)
    return None


def _spend_limit(s: TickState, c: Cluster, worst: int | None) -> Cause:
    """spend-limit with what is left of the limit and the worst case that does not fit."""
    left = s.budget(c).left
    return SPEND_LIMIT, PendingDetail(
        spend_left=None if left is None else units_to_micros(left),
        worst_case=None if worst is None else units_to_micros(worst),
    )


def _declared_worst(s: TickState, c: Cluster) -> int | None:
    """The worst case of a VM cluster's pending nodes at its ceiling."""
    gpus = KINDS[c.kind].pending_gpus(s, c)
    return worst_case(c.max_price or 0, gpus, KINDS[c.kind].grant_span_ns) if gpus else None


def _jobs_worst(s: TickState, c: Cluster) -> int | None:
    """The worst case of the cluster's first job the spend limit left out."""
    return next((s.left_out[k] for j in s.waiting(c) if (k := (c.id, j.name)) in s.left_out), None)


def _declared_cause(
    s: TickState, c: Cluster, low: bool, supply: _Supply, rungs: Sequence[OwnRung]
) -> Cause | None:
    """Why a VM cluster's pending nodes wait (none pending: no cause)."""
    nodes = KINDS[c.kind].pending_gpus(s, c) // s.gpus_per_node
    if not nodes:
        return None
    ceiling = c.max_price or 0
    if low:
        return BID_TOO_LOW, PendingDetail(ceiling=ceiling, reserve=s.reserve_price)
    declared = c.max_gpus // s.gpus_per_node
    if declared > supply.market:
        return NO_SUPPLY, PendingDetail(nodes=declared, market_nodes=supply.market)
    return _price_cause(s, supply, c, nodes, ceiling, rungs)


def _job_cause(
    s: TickState,
    c: Cluster,
    job: Job,
    refusal: Cause | None,
    supply: _Supply,
    rungs: Sequence[OwnRung],
) -> Cause | None:
    """Why a pending job waits (set on the job; none once it runs). A job smaller than one
    node never bids: it waits only for its block (`Job.reason`)."""
    cause = None
    if job.state == "pending" and job.small:
        cause = _small_cause(job)
    elif job.state == "pending":
        cause = _gang_cause(s, c, job, refusal, supply, rungs)
    reason, detail = cause if cause is not None else (None, None)
    if reason == OUTBID and job.pending_reason != OUTBID and detail is not None:
        s.event(job, "Outbid", _outbid_words(detail))
    if (reason, detail) != (job.pending_reason, job.pending_detail):
        job.pending_reason, job.pending_detail = reason, detail
        s.changed_jobs[(job.cluster, job.name)] = job
    return cause


def _small_cause(job: Job) -> Cause | None:
    reason = next((r for r in SMALL_WAITS if r == job.reason), None)
    return None if reason is None else (reason, PendingDetail(gpus=job.gpus))


def _gang_cause(
    s: TickState,
    c: Cluster,
    job: Job,
    refusal: Cause | None,
    supply: _Supply,
    rungs: Sequence[OwnRung],
) -> Cause | None:
    if refusal is not None and refusal[0] == BILLING_HOLD:
        return refusal
    key = (c.id, job.name)
    if key in s.left_out:
        return _spend_limit(s, c, s.left_out[key])
    price = job.price(c)
    if job.bid_too_low or price is None or price < s.reserve_price:
        return BID_TOO_LOW, PendingDetail(ceiling=price, reserve=s.reserve_price)
    nodes = job.nodes - len(s.credit.get(key, []))
    if nodes > supply.market:
        return NO_SUPPLY, PendingDetail(nodes=nodes, market_nodes=supply.market)
    return _price_cause(s, supply, c, nodes, price, rungs) if nodes > 0 else None


def _price_cause(
    s: TickState, supply: _Supply, c: Cluster, nodes: int, ceiling: int, rungs: Sequence[OwnRung]
) -> Cause:
    """windows or outbid, from rung `nodes` of the cluster's own ladder: windows when a time
    they lapse brings the price to win within the ceiling (the first such time), else outbid
    (the price to win, at the next tick or from when windows let the nodes go). No rung:
    windows hold the nodes past the ladder's hour, so no price is known yet."""
    if len(rungs) < nodes:
        at = supply.contestable_at(c, nodes)
        return WINDOWS, PendingDetail(ceiling=ceiling, nodes=nodes, contestable_at=at)
    rung = rungs[nodes - 1]
    at = rung.contestable_at
    if at is None and rung.price <= ceiling:
        # winnable at the next tick: windows lapse before it
        at = s.now + s.inp.interval_ns
    times = [] if at is None else [(at, rung.price), *rung.later]
    within = next(((t, p) for t, p in times if p <= ceiling), None)
    if within is not None:
        return WINDOWS, PendingDetail(
            ceiling=ceiling, nodes=nodes, contestable_at=within[0], price=within[1]
        )
    return OUTBID, PendingDetail(
        ceiling=ceiling, nodes=nodes, contestable_at=rung.contestable_at, price=rung.price
    )


def _outbid_words(d: PendingDetail) -> str:
    """The `Outbid` event's detail."""
    price, ceiling = usd(d.price or 0), usd(d.ceiling or 0)
    nodes = f"{d.nodes} node" + ("" if d.nodes == 1 else "s")
    words = f"{price} USD/GPU-h wins its {nodes}, over its limit {ceiling}"
    return words if d.contestable_at is None else f"{words} (from {rfc3339(d.contestable_at)})"


def _log_refusal(s: TickState, c: Cluster, reason: HeldBack) -> None:
    """One REFUSED line when the tick starts refusing a cluster's demand (not every tick)."""
    if reason == BILLING_HOLD:
        balance = s.inp.balances.get(c.account, 0)
        s.refuse(
            c,
            BillingHold(
                "the account's balance is at or below zero: market capacity reclaimed",
                cluster=c.id,
                account=c.account,
                balance_units=balance,
            ),
        )
    else:
        budget = s.budget(c)
        s.refuse(
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
