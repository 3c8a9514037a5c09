"""What the tick gives back: the rows that changed, every holding, the pending GPUs, the
verdicts."""

from __future__ import annotations

from burstmarket.auction import Clearing
from burstmarket.market.kinds import KINDS
from burstmarket.market.ladder import LadderRung
from burstmarket.market.tick.tick_state import TickState
from burstmarket.market.tick.types import TickOutput
from burstmarket.states import AllocationKind


def gather_output(
    s: TickState,
    clearing: Clearing,
    protected: set[str],
    low: set[str],
    ladder: tuple[LadderRung, ...],
) -> TickOutput:
    """The tick's result. `protected`: the market nodes the auction held under their window;
    `low`: the clusters with demand under the reserve."""
    allocations: list[tuple[str, str, AllocationKind]] = []
    pending: dict[str, int] = {}
    for c in s.sorted_clusters():
        held = sorted(s.held(c.id), key=lambda n: n.idx)
        for n in held:
            kind: AllocationKind = "protected" if n.id in protected else "market"
            allocations.append((c.id, n.id, kind))
        for n in sorted(s.block_of(c), key=lambda n: n.idx):
            allocations.append((c.id, n.id, "base_load"))
        pending[c.id] = KINDS[c.kind].pending_gpus(s, c)
    verdicts = [(c, "bid-too-low") for c in sorted(low)]
    verdicts += sorted(s.refused.items())
    return TickOutput(
        clearing=clearing,
        ladder=ladder,
        nodes=sorted(s.changed_nodes.values(), key=lambda n: n.idx),
        jobs=list(s.changed_jobs.values()),
        clusters=list(s.changed_clusters.values()),
        events=s.events,
        ledger=s.books.ledger,
        rates={c: cc.rate for c, cc in clearing.clusters.items()},
        allocations=allocations,
        pending_gpus=sum(pending.values()),
        pending=pending,
        holders_before=s.holders_before,
        verdicts=verdicts,
        blocks=list(s.changed_blocks.values()),
        own_ladders=s.own_ladders,
        newcomer_ladders=s.newcomer_ladders,
        waiting=[
            (c.id, pending[c.id], c.pending_reason, c.pending_detail)
            for c in s.sorted_clusters()
            if pending[c.id] or c.pending_reason is not None
        ],
    )
