"""Capacity the cluster already has (docs/market.md "One tick", step 3): the jobs of a cluster
(of a kind that runs jobs: Kubernetes) go on its base load block, then its waiting jobs on the
idle nodes it holds; no market needed, the cluster holds and pays for those nodes."""

from __future__ import annotations

from burstmarket.market.model import Block, Job, Node
from burstmarket.market.tick.tick_state import TickState


def on_blocks(s: TickState) -> None:
    """Jobs of a block's cluster go on the block first: running jobs short of nodes, then
    running jobs folded into the block where they stand (market billing stops), then waiting
    jobs by priority class, oldest first. A job that does not fit never holds back smaller
    ones; what is left counts toward the first of them (`credit`), which bids for the rest.
    Only empty block nodes take them: a node running jobs smaller than one node keeps them."""
    for b in s.live_blocks():
        c = s.clusters[b.cluster]
        free = [n for n in s.block_nodes(b) if s.empty(n)]
        for job in s.jobs_of(c, "running"):
            missing = max(0, job.nodes - s.placed(job) - s.owed_to(job))
            taken, free = free[:missing], free[missing:]
            s.assign(job, taken)
            for m in s.running_on(job)[0]:
                if not free:
                    break
                fold(s, b, job, m, instead_of=free.pop(0))
        waiting = s.waiting(c)
        for job in waiting:
            if job.nodes <= len(free):
                taken, free = free[: job.nodes], free[job.nodes :]
                s.assign(job, taken)
                s.start(job, c, "placed on the cluster's base load block")
        rest = [j for j in waiting if j.state == "pending"]
        if rest and free:
            s.credit[(c.id, rest[0].name)] = free


def fold(s: TickState, b: Block, job: Job, m: Node, instead_of: Node | None = None) -> None:
    """Market node `m` of a running job becomes a block node where it stands (no restart): its
    market billing and commitment stop. The empty block node it stands in for, if any, goes
    back to the island; with none, `m` fills a place the block was short of (delivery)."""
    s.books.release_commitment(m)
    s.join_block(b, m)
    m.window_ends_at = m.hold_until = m.locked_price = None
    m.commit_price = m.commit_ends_at = None
    detail = f"{m.id} joined the base load block"
    if instead_of is not None:
        s.free(instead_of)
        detail += f"; {instead_of.id} left it"
    s.event(job, "FoldedIntoBlock", detail)


def on_idle(s: TickState) -> None:
    """Waiting jobs that fit on idle nodes the cluster holds (with the block nodes credited to
    them) run there, inheriting the windows. Higher priority classes first, then the oldest."""
    for c in s.job_clusters():
        idle = [n for n in s.held(c.id) if n.job is None]
        for job in s.waiting(c):
            credit = s.credit.get((c.id, job.name), [])
            need = job.nodes - len(credit)
            if need > len(idle):
                continue
            taken, idle = idle[:need], idle[need:]
            s.credit.pop((c.id, job.name), None)
            s.assign(job, [*credit, *taken])
            s.start(job, c, "placed on idle nodes the cluster holds")
