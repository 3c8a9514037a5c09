"""Each cluster's own view of one tick, for its private feed channel (docs/api.md "The feed",
`cluster`): what it holds, what waits and why, its rate, and what happened to it at the tick.

Built from what the tick already computed (its holdings, pending GPUs, events, the nodes it
moved and its receipts), never by reading the store again: one small row per cluster of the
island.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from burstmarket.clock import to_datetime
from burstmarket.contract import ClusterEventView, ClusterTickView, PendingJobView
from burstmarket.market.model import BID_TOO_LOW, BILLING_HOLD, SPEND_LIMIT, Cluster
from burstmarket.market.pending_view import pending_detail_view
from burstmarket.market.receipts import receipt_view
from burstmarket.market.tick import TickInput, TickOutput
from burstmarket.money import maybe_usd

VERDICT_WORDS = {
    BID_TOO_LOW: "the bid is under the island's reserve price: it can never clear",
    SPEND_LIMIT: "the worst case of further grants does not fit the spend limit",
    BILLING_HOLD: "the account's balance is at or below zero: market capacity reclaimed",
}
"""The verdicts (docs/market.md "Refusals"), each a pending cause that starts with a REFUSED
line; the other causes (windows, outbid, ...) read in `pending_reason`, tick by tick."""


def standing(c: Cluster) -> frozenset[str]:
    """The verdicts standing against a cluster's demand."""
    verdicts = {BID_TOO_LOW} if c.bid_too_low else set()
    if c.pending_reason in (SPEND_LIMIT, BILLING_HOLD):
        verdicts.add(c.pending_reason)
    return frozenset(verdicts)


def cluster_ticks(
    inp: TickInput, out: TickOutput, before: dict[str, frozenset[str]]
) -> tuple[ClusterTickView, ...]:
    """One row per cluster of the island. `before`: each cluster's `standing` verdicts as the
    tick found them (the tick changes the clusters in place)."""
    island, tick, when = inp.island.id, inp.tick, to_datetime(inp.time)
    market: dict[str, list[str]] = defaultdict(list)
    block: Counter[str] = Counter()
    for cluster, node, kind in out.allocations:
        if kind == "base_load":
            block[cluster] += 1
        else:
            market[cluster].append(node)
    granted: dict[str, list[str]] = defaultdict(list)
    reclaimed: dict[str, list[str]] = defaultdict(list)
    for n in out.nodes:
        holder = out.holders_before.get(n.id, n.cluster)
        if holder == n.cluster:
            continue
        if n.cluster is not None:
            granted[n.cluster].append(n.id)
        if holder is not None:
            reclaimed[holder].append(n.id)
    job_events: dict[str, list[ClusterEventView]] = defaultdict(list)
    for e in out.events:
        job_events[e.cluster].append(
            ClusterEventView(
                type=e.type,
                at=to_datetime(e.at),
                detail=e.detail,
                job=e.job,
                nodes=[],
                verdict=None,
            )
        )

    def event(kind: str, detail: str, nodes: list[str], verdict: str | None) -> ClusterEventView:
        return ClusterEventView(
            type=kind, at=when, detail=detail, job=None, nodes=nodes, verdict=verdict
        )

    receipts = {r.cluster: r for r in out.receipts}
    waiting: dict[str, list[PendingJobView]] = defaultdict(list)
    for j in inp.jobs:  # as the tick leaves them
        if j.state == "pending":
            waiting[j.cluster].append(
                PendingJobView(
                    name=j.name,
                    nodes=j.nodes,
                    pending_reason=j.pending_reason,
                    pending_detail=pending_detail_view(j.pending_reason, j.pending_detail),
                )
            )
    rows = []
    g = inp.island.gpus_per_node
    for cid, c in sorted(inp.clusters.items()):
        now = standing(c)
        was = before.get(cid, frozenset())
        events = []
        if reclaimed[cid]:
            why = VERDICT_WORDS[BILLING_HOLD] if BILLING_HOLD in now else "outbid or released"
            events.append(
                event("Reclaimed", f"back to the island at this tick: {why}", reclaimed[cid], None)
            )
        if granted[cid]:
            events.append(event("Granted", "won at this tick", granted[cid], None))
        events += job_events[cid]
        events += [event("VerdictStarted", VERDICT_WORDS[v], [], v) for v in sorted(now - was)]
        events += [event("VerdictEnded", f"no longer: {v}", [], v) for v in sorted(was - now)]
        held = market[cid]
        rows.append(
            ClusterTickView(
                island=island,
                tick=tick,
                time=when,
                cluster=cid,
                kind=c.kind,
                held_nodes=len(held),
                held_gpus=len(held) * g,
                node_ids=held,
                base_load_nodes=block[cid],
                pending_gpus=out.pending.get(cid, 0),
                pending_reason=c.pending_reason,
                pending_detail=pending_detail_view(c.pending_reason, c.pending_detail),
                pending_jobs=waiting[cid],
                rate=maybe_usd(out.rates.get(cid)),
                verdicts=sorted(now),
                events=events,
                receipt=receipt_view(receipts[cid]) if cid in receipts else None,
            )
        )
    return tuple(rows)
