"""Housekeeping (docs/market.md "One tick", step 1): billing holds, owed replacements lapsing,
idle nodes released, commitments renewed. Base load terms end first (block_terms.py)."""

from __future__ import annotations

from burstmarket.errors import SpendLimit
from burstmarket.market.guard import worst_case
from burstmarket.market.kinds import KINDS
from burstmarket.market.model import RENEWAL_NS, SPEND_LIMIT
from burstmarket.market.tick.tick_state import TickState


def billing_hold(s: TickState) -> None:
    """A cluster of an account at or below zero loses its market capacity: a live block keeps
    running, so only jobs holding market nodes are preempted."""
    for c in s.sorted_clusters():
        if s.inp.balances.get(c.account, 0) > 0 or not s.wants(c):
            continue
        s.hold_billing(c)
        for job in s.jobs_of(c, "running"):
            if s.running_on(job)[0]:
                s.preempt(job, "billing hold: the account's balance is at or below zero")
        for n in s.held(c.id):
            s.release(n)


def lapse_owed(s: TickState) -> None:
    """A replacement is owed for the rest of the window only (wall-clock)."""
    for n in s.out_of_service:
        if n.owed_until is not None and not n.owed(s.now):
            s.settle_owed(n)


def release_idle(s: TickState) -> None:
    """Idle nodes (of a kind that runs jobs) go past their hold and grace, or at once if their
    lock no longer clears (a node stepping down from a block waits for its lock)."""
    for c in s.job_clusters():
        for n in s.held(c.id):
            if n.job is not None or n.idle_since is None or n.id in s.unpriced:
                continue
            if s.now >= n.idle_release_at(s.reserve_price):
                s.release(n)


def renew_commitments(s: TickState) -> None:
    """A node kept past its commitment commits its next hour, or goes if that does not fit."""
    for c in s.sorted_clusters():
        budget, renewed = s.budget(c), 0
        for n in s.held(c.id):
            if n.commit_ends_at is None or n.commit_ends_at > s.now:
                continue
            price = KINDS[c.kind].live_price(s, c, n)
            worst = worst_case(price, s.gpus_per_node, RENEWAL_NS)
            left = None if budget.left is None else budget.left - renewed
            if left is None or worst <= left:
                n.commit_price, n.commit_ends_at = price, s.now + RENEWAL_NS
                s.books.commit(c, worst)
                s.touch(n)
                renewed += worst  # exactly what it adds to the cluster's outstanding commitments
                continue
            s.refused[c.id] = SPEND_LIMIT
            s.refuse(
                c,
                SpendLimit(
                    f"the next hour of node {n.id} does not fit what is left of the spend "
                    "limit: the node is released",
                    cluster=c.id,
                    node=n.id,
                    worst_case_units=worst,
                    left_units=left,
                ),
            )
            job = s.job_on(n)
            if job is not None:
                # its gang goes back to pending; nodes out of their window go with it, this one
                # included (its commitment ended, so its window has too)
                s.preempt(job, "spend limit: the next hour does not fit")
            if n.cluster is not None:
                s.release(n)
            budget, renewed = s.budget(c), 0  # the gang gave back what it had committed
