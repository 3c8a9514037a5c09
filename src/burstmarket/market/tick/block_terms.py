"""Base load terms (docs/market.md "Base load"): the end of a term steps the block's nodes down
into the market; 24 h of a balance at or below zero cancel the block at that moment. Either way
jobs smaller than one node are requeued at once, and the purchase's security deposit goes back
to the balance (a cancellation also closes what is unpaid of its receivable)."""

from __future__ import annotations

from burstmarket.market.guard import worst_case
from burstmarket.market.kinds import KINDS
from burstmarket.market.ledger import BASE_LOAD, CHARGE, DEPOSIT_RETURN, RECEIVABLE
from burstmarket.market.model import (
    BASE_LOAD_GRACE_NS,
    CANCELLED,
    ENDED,
    Block,
    Node,
)
from burstmarket.market.tick.billing import bill_block
from burstmarket.market.tick.tick_state import TickState
from burstmarket.states import BlockState


def end_terms(s: TickState) -> None:
    """End of term steps the nodes down into the market; a balance at or below zero for 24 h
    cancels the block at that moment (credit that came since the last tick stops the count)."""
    for b in s.live_blocks():
        c = s.clusters[b.cluster]
        if s.inp.balances.get(c.account, 0) > 0 and b.negative_since is not None:
            b.negative_since = None
            s.touch_block(b)
        cancel_at = None if b.negative_since is None else b.negative_since + BASE_LOAD_GRACE_NS
        if cancel_at is not None and cancel_at <= s.now and cancel_at < b.ends_at:
            _cancel(s, b, cancel_at)
        elif s.now >= b.ends_at:
            _step_down(s, b)


def count_negative(s: TickState) -> None:
    """After the tick's billing: a live block whose account is now at or below zero counts its
    24 h from this tick. The balance read is the one after the tick's own rows: a tick whose
    billing takes the balance to zero starts the count itself, not the tick after it; one whose
    rows bring it back above zero stops the count."""
    for b in s.live_blocks():
        negative = s.books.balance(s.clusters[b.cluster].account) <= 0
        if negative != (b.negative_since is not None):
            b.negative_since = s.now if negative else None
            s.touch_block(b)


def _cancel(s: TickState, b: Block, at: int) -> None:
    """Billing stops at `at` (the billed rest is undone); the nodes return to the market (the
    billing hold is reclaiming the cluster's market capacity anyway)."""
    bill_block(s, b, at)
    c = s.clusters[b.cluster]
    if b.billed_until > at:
        s.books.bill(
            BASE_LOAD, c, at, b.billed_until, -b.nodes * s.gpus_per_node, b.rate, block=b.id
        )
        b.billed_until = at
    nodes = s.block_nodes(b)
    for name in sorted({n.job for n in nodes if n.job is not None}):
        job = s.jobs.get((b.cluster, name))
        if job is not None:
            s.preempt(job, "base load block cancelled: the balance stayed at or below zero")
    for n in nodes:
        s.free(n)
    _close(s, b, CANCELLED, at)


def _step_down(s: TickState, b: Block) -> None:
    """End of term: the nodes stay with the cluster as market nodes under a fresh window from
    the end, locked at the declared price (the job's, else the cluster's) or, with none or one
    under the reserve, at the lowest rate this tick clears at (`lock_step_downs`); no minimum
    hold; idle ones get the usual idle grace."""
    bill_block(s, b, b.ends_at)
    c = s.clusters[b.cluster]
    end = b.ends_at
    _requeue_small(s, b, end, "the base load block's term ended: requeued as a new request")
    window = KINDS[c.kind].window_ns
    for n in s.block_nodes(b):
        job = s.job_on(n)
        declared = job.price(c) if job is not None else c.limit_price
        s.leave_block(n)
        n.granted_at, n.window_ends_at, n.hold_until = end, end + window, None
        n.idle_since = None if job is not None else end
        n.commit_ends_at = n.window_ends_at
        if declared is not None and declared >= s.reserve_price:
            _lock(s, n, declared)
        else:
            s.unpriced[n.id] = n
    _close(s, b, ENDED, end)


def lock_step_downs(s: TickState, lowest: int | None) -> None:
    """Lock the stepped-down nodes with no price at `lowest`, the lowest rate the tick clears
    at without them (never under the reserve; the reserve when nothing clears)."""
    locked = clearing_lock(s.reserve_price, lowest)
    for n in list(s.unpriced.values()):
        _lock(s, n, locked)
    s.unpriced.clear()


def clearing_lock(reserve: int, lowest: int | None) -> int:
    """The lock of a stepped-down node with no price: the lowest rate the tick clears at
    without it, never under the reserve; the reserve when nothing clears."""
    return reserve if lowest is None else max(reserve, lowest)


def _lock(s: TickState, n: Node, locked: int) -> None:
    """Lock a stepped-down node's window at `locked`: its worst case is committed, and the time
    since the end of term is billed at the lock (the block billed up to it)."""
    c = s.clusters[n.cluster or ""]
    assert n.granted_at is not None
    assert n.window_ends_at is not None
    n.locked_price = n.commit_price = locked
    s.books.commit(c, worst_case(locked, s.gpus_per_node, max(0, n.window_ends_at - s.now)))
    start = max(n.granted_at, s.inp.billed.floor if s.inp.billed else 0)
    if start < s.now:
        s.books.bill(CHARGE, c, start, s.now, s.gpus_per_node, locked, node=n.id)
        s.books.spend_started(c)


def _requeue_small(s: TickState, b: Block, at: int, why: str) -> None:
    """Jobs smaller than one node never step down with their node: requeued as new requests,
    they wait (ReservedBusy) until the cluster holds a live block again."""
    for n in s.block_nodes(b):
        for job in s.small_on(n):
            s.requeue_small(job, at, why)


def _close(s: TickState, b: Block, state: BlockState, at: int) -> None:
    for n in s.out_of_service:
        if n.block == b.id:
            n.block = None  # out of service: in no index
            s.touch(n)
    b.state, b.ended_at = state, at
    s.touch_block(b)
    # the block's purchase stops with it: its deposit goes back to the balance, against what
    # the block billed; a cancelled block owes nothing more by wire (the balance says the rest)
    money = s.inp.purchases.get(b.purchase)
    c = s.clusters[b.cluster]
    if money is not None and money.deposit_held:
        s.books.record(c, DEPOSIT_RETURN, -money.deposit_held, block=b.purchase)
    if money is not None and money.owed and state == CANCELLED:
        s.books.record(c, RECEIVABLE, -money.owed, block=b.purchase)
