"""Owed replacements (docs/market.md "Nodes out of service"): a cluster whose node went out of
service inside its window takes a free node ahead of every bid, inheriting the grant."""

from __future__ import annotations

from burstmarket.market.guard import worst_case
from burstmarket.market.kinds import KINDS
from burstmarket.market.model import Node
from burstmarket.market.tick.tick_state import TickState


def deliver(s: TickState) -> None:
    """Replacements still owed take free nodes, both in index order."""
    owed = s.owed()
    for lost, n in zip(owed, s.free_nodes(len(owed)), strict=False):
        _replace(s, lost, n)


def _replace(s: TickState, lost: Node, n: Node) -> None:
    """`n` inherits `lost`'s grant: the rest of its window and its hold at the locked price; it
    joins the job `lost` was running, if that job still runs."""
    c = s.clusters[lost.cluster or ""]
    job = s.job_on(lost)
    running = job if job is not None and job.state == "running" else None
    ends = lost.owed_until or s.now
    price = lost.locked_price or 0
    s.grant(n, c.id, None if running is None else running.name)
    n.granted_at, n.window_ends_at = lost.granted_at, ends
    n.hold_until, n.locked_price = lost.hold_until, price
    if running is not None or not KINDS[c.kind].runs_jobs:
        n.idle_since = None  # a node of a kind that runs no jobs is never idle
    else:  # an idle node's replacement keeps its grace; one whose job ended starts one
        n.idle_since = lost.idle_since if lost.job is None and lost.idle_since else s.now
    n.commit_price, n.commit_ends_at = price, max(ends, n.hold_until or 0)
    s.books.commit(c, worst_case(price, s.gpus_per_node, n.commit_ends_at - s.now))
    s.settle_owed(lost)
    if running is not None:
        s.event(running, "NodeReplaced", f"{n.id} replaces {lost.id} (out of service)")
