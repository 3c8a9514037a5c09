"""Applying the auction's outcome (docs/market.md "One tick", step 8): losing held units are
reclaimed (a losing running job goes back to pending), owed replacements take the nodes freed,
winners that hold their node keep it where it is, new winners take free nodes in index order."""

from __future__ import annotations

from burstmarket.auction import Clearing
from burstmarket.market.guard import worst_case
from burstmarket.market.kinds import KINDS, Demand
from burstmarket.market.model import Node
from burstmarket.market.tick import replacements
from burstmarket.market.tick.clearing import Bids
from burstmarket.market.tick.tick_state import TickState


def apply(s: TickState, bids: Bids, clearing: Clearing) -> None:
    won = set(clearing.winners)
    for u in bids.units:
        d = bids.demand[u.id]
        if u.id in won or not d.nodes:
            continue
        if d.stands_for == "running" and d.job is not None:
            s.preempt(d.job, "outbid: the gang's nodes were reclaimed by the market")
        else:
            for n in d.nodes:
                s.release(n)
    replacements.deliver(s)
    new = [u for u in bids.units if u.id in won and not bids.demand[u.id].nodes]
    free = s.free_nodes(sum(u.nodes for u in new))
    for u in new:
        taken, free = free[: u.nodes], free[u.nodes :]
        _grant(s, bids.demand[u.id], taken)


def _grant(s: TickState, d: Demand, nodes: list[Node]) -> None:
    """Fresh nodes for a winning unit, under a fresh window and hold of its kind, locked at its
    price."""
    c = d.cluster
    kind = KINDS[c.kind]
    span = kind.grant_span_ns
    # the worst case is committed before the grant (same transaction, written first)
    s.books.commit(c, worst_case(d.price, len(nodes) * s.gpus_per_node, span), len(nodes))
    job = d.job
    if d.stands_for == "short" and job is not None and job.state != "running":
        job = None  # the job lost its other nodes this tick: the nodes land idle
    for n in nodes:
        s.grant(n, c.id, None if job is None else job.name)
        n.granted_at = s.now
        n.window_ends_at = s.now + kind.window_ns
        n.hold_until = None if kind.hold_ns is None else s.now + kind.hold_ns
        n.locked_price = d.price
        n.commit_price, n.commit_ends_at = d.price, s.now + span
        n.idle_since = None if job is not None or not kind.runs_jobs else s.now
    if job is None:
        return
    if d.stands_for == "job":
        s.assign(job, s.credit.pop((c.id, job.name), []))
        s.start(job, c, f"gang of {len(nodes)} nodes granted")
    else:
        shown = ", ".join(n.id for n in nodes)
        s.event(job, "NodeReplaced", f"{shown} granted for nodes out of service")
