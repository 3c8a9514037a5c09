"""Jobs smaller than one node on the cluster's base load block (docs/market.md "Small jobs on
the block"): packed onto block nodes by GPU count, where the operator enabled packing for the
cluster. They never bid and are never burst demand: a job that does not fit waits, with its
reason on the job (and an event when the reason starts).

Runs after the whole-node jobs were placed (placement.py), so whole-node jobs take empty block
nodes first; what the first waiting whole-node job counts on (`credit`) is kept for it, except
a node that sat empty for the idle grace, which a small job that waited as long may take.
"""

from __future__ import annotations

from burstmarket.market.model import (
    IDLE_GRACE_NS,
    LIVE,
    PACKING_DISABLED,
    RESERVED_BUSY,
    RESERVED_TOO_SMALL,
    Block,
    Cluster,
    Job,
    Node,
)
from burstmarket.market.tick.tick_state import TickState


def place_small_jobs(s: TickState) -> None:
    for c in s.job_clusters():
        b = s.blocks.get(c.id)
        live = b if b is not None and b.state == LIVE else None
        for job in s.small_of(c, "running"):
            n = s.node(job.node or "")
            if n is None or n.service is not None or live is None or n.block != live.id:
                # a node out of service: its pods are evicted (never moved by the market)
                s.requeue_small(job, s.now, f"node {job.node} left the base load block")
        for job in s.small_of(c, "pending"):
            _place(s, c, live, job)


def _place(s: TickState, c: Cluster, live: Block | None, job: Job) -> None:
    if job.gpus > s.gpus_per_node:
        s.wait_small(
            job,
            RESERVED_TOO_SMALL,
            f"{job.pods} pods of {job.gpus_per_pod} GPUs are {job.gpus} GPUs, more than one "
            f"node's {s.gpus_per_node}: resubmit it with whole-node pods or with fewer pods",
        )
    elif not c.packing:
        s.wait_small(
            job, PACKING_DISABLED, "packing onto the base load block is not enabled for the cluster"
        )
    elif live is None:
        s.wait_small(job, RESERVED_BUSY, "no live base load block: it waits until one starts")
    else:
        n = _node_for(s, c, live, job)
        if n is None:
            s.wait_small(
                job, RESERVED_BUSY, f"the block has no {job.gpus} GPUs free for it: it waits"
            )
        else:
            s.place_small(job, c, n)


def _node_for(s: TickState, c: Cluster, b: Block, job: Job) -> Node | None:
    """Beside other small jobs first (the first node with room, in block order); else an empty
    node no whole-node job is waiting for; else, once the job has waited the idle grace, a node
    a whole-node job is waiting for that sat empty as long (it then waits for one more)."""
    nodes = s.block_nodes(b)
    shared = [n for n in nodes if s.small_on(n) and s.free_gpus(n) >= job.gpus]
    if shared:
        return shared[0]
    credits = [(key, held) for key, held in s.credit.items() if key[0] == c.id]
    awaited = {n.id for _, held in credits for n in held}
    empty = [n for n in nodes if s.empty(n)]
    opened = next((n for n in empty if n.id not in awaited), None)
    if opened is not None or s.now - job.created_at < IDLE_GRACE_NS:
        return opened
    for key, held in credits:
        for n in held:
            if s.empty(n) and n.idle_since is not None and s.now - n.idle_since >= IDLE_GRACE_NS:
                held.remove(n)
                if not held:
                    del s.credit[key]
                return n
    return None
