"""Verdicts (docs/market.md "Refusals"): demand under the reserve reads bid_too_low, demand held
back reads its pending reason, and each starts with one REFUSED line, not one every tick."""

from __future__ import annotations

from burstmarket.auction import Clearing
from burstmarket.errors import BidTooLow, BillingHold, SpendLimit
from burstmarket.market.kinds import KINDS
from burstmarket.market.model import BILLING_HOLD, Cluster, Job
from burstmarket.market.tick.tick_state import TickState
from burstmarket.money import usd
from burstmarket.states import PendingReason


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


def pending_reasons(s: TickState) -> None:
    """Each cluster's pending reason becomes this tick's refusal (or none)."""
    for c in s.sorted_clusters():
        reason = s.refused.get(c.id)
        if reason == c.pending_reason:
            continue
        if reason is not None and (c.id, reason) not in s.logged:
            _log_refusal(s, c, reason)
        c.pending_reason = reason
        s.changed_clusters[c.id] = c


def _log_refusal(s: TickState, c: Cluster, reason: PendingReason) -> None:
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
