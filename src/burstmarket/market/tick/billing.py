"""Billing (docs/market.md "Billing"): the held time not billed yet, first; the tick's interval in
advance, the spend guard's commitments and releases and the blocks' 5-minute steps, last."""

from __future__ import annotations

from collections import defaultdict

from burstmarket.auction import Clearing
from burstmarket.market.ledger import BASE_LOAD, CHARGE, COMMITMENT, RELEASE
from burstmarket.market.model import Block
from burstmarket.market.tick.tick_state import TickState


def bill_held_time(s: TickState) -> None:
    """Bill what the clusters held since their billing stopped, up to this tick: from the end
    of the interval the last tick billed in advance (or a node's return from the operator), at
    the rate the cluster was paying, else the node's locked price. So a late tick leaves no time
    unbilled; time before the service started is never billed."""
    billed = s.inp.billed
    floor = 0 if billed is None else billed.floor
    for c in s.sorted_clusters():
        spans: dict[tuple[int, int], int] = defaultdict(int)
        for n in s.held(c.id):
            since = n.billed_until
            if since is not None:
                n.billed_until = None
                s.touch(n)
            elif billed is not None:
                since = billed.end
            rate = s.inp.rates.get(c.id, n.locked_price)
            if since is not None and rate is not None and max(since, floor) < s.now:
                spans[(max(since, floor), rate)] += 1
        for (since, rate), count in sorted(spans.items()):
            s.books.bill(CHARGE, c, since, s.now, count * s.gpus_per_node, rate)
            s.books.spend_started(c)


def charge(s: TickState, clearing: Clearing) -> None:
    """Bill the tick's interval [t, t + interval) in advance at each cluster's rate, then write
    the commitments and releases the tick made, one row per cluster each."""
    end = s.now + s.inp.interval_ns
    for cid, cc in clearing.clusters.items():
        c = s.clusters[cid]
        s.books.bill(CHARGE, c, s.now, end, cc.gpus, cc.rate)
        s.books.spend_started(c)
    for cid, (gpus, units) in sorted(s.books.committed.items()):
        s.books.record(s.clusters[cid], COMMITMENT, units, gpus)
        s.books.spend_started(s.clusters[cid])
    for cid, (gpus, units) in sorted(s.books.released.items()):
        s.books.record(s.clusters[cid], RELEASE, -units, gpus)


def bill_blocks(s: TickState) -> None:
    """Every live block bills the steps that start before the next tick."""
    for b in s.live_blocks():
        bill_block(s, b, min(s.now + s.inp.interval_ns, b.ends_at))


def bill_block(s: TickState, b: Block, until: int) -> None:
    """Bill every 5-minute step of the block that starts before `until`, for every node of the
    block, idle or busy, delivered or being replaced."""
    c = s.clusters[b.cluster]
    for start, end in b.steps(until):
        s.books.bill(BASE_LOAD, c, start, end, b.nodes * s.gpus_per_node, b.rate, block=b.id)
        s.touch_block(b)
