"""One tick on one island as a pure function: state in, state changes and rows out
(docs/market.md "One tick"). It does no I/O: the service reads its input from the store and
writes its output in one transaction, so replaying a tick gives the same rows.

`run_tick` is the tick's table of contents. Each phase is a function of one `TickState`
(tick_state.py: the nodes indexed by where they are, what changed, the transitions); what a
phase leaves for later ones is a named field of the state (`refused`, `credit`, `unpriced`) or a
value it returns (`Bids`, `Clearing`). Where VM and Kubernetes demand differ, a phase asks the
cluster's kind (market/kinds/: `KINDS[c.kind]`), never its name.
"""

from __future__ import annotations

from burstmarket.clock import to_datetime
from burstmarket.market.ladder import published_ladder
from burstmarket.market.own_ladder import own_ladders
from burstmarket.market.receipts import receipts
from burstmarket.market.tick import (
    billing,
    block_delivery,
    block_terms,
    housekeeping,
    packing,
    placement,
    replacements,
    verdicts,
)
from burstmarket.market.tick.apply import apply
from burstmarket.market.tick.clearing import (
    clear_round,
    next_bids,
    step_down_groups,
    window_releases,
    with_step_downs,
)
from burstmarket.market.tick.output import gather_output
from burstmarket.market.tick.own import holdings, newcomers
from burstmarket.market.tick.tick_state import TickState
from burstmarket.market.tick.types import AuctionRecord, TickInput, TickOutput

__all__ = ["TickInput", "TickOutput", "run_tick"]


def run_tick(inp: TickInput) -> TickOutput:
    s = TickState(inp)
    # 0. held time not billed yet, up to now (a late tick leaves no gap)
    billing.bill_held_time(s)
    # 1. housekeeping
    block_terms.end_terms(s)
    housekeeping.billing_hold(s)
    housekeeping.lapse_owed(s)
    housekeeping.release_idle(s)
    housekeeping.renew_commitments(s)
    # 2. what is owed goes ahead of every bid
    block_delivery.deliver(s)
    replacements.deliver(s)
    # 3. capacity the cluster already has; then jobs smaller than one node on the blocks
    placement.on_blocks(s)
    placement.on_idle(s)
    packing.place_small_jobs(s)
    # 4-7. the auction; nodes stepping down from a block stay out of it: those with no price
    # to lock are locked at the lowest rate it clears at, then each pays its lock
    bids, clearing = clear_round(s)
    unpriced = set(s.unpriced)
    if s.unpriced:
        block_terms.lock_step_downs(s, clearing.stats.min)
    step_downs = step_down_groups(bids.stepping_down, unpriced)
    clearing = with_step_downs(clearing, step_downs, s.gpus_per_node)
    # 8. the outcome
    apply(s, bids, clearing)
    s.provisioned()
    # billing: the interval in advance, commitments, the blocks' steps
    billing.charge(s, clearing)
    billing.bill_blocks(s)
    block_terms.count_negative(s)  # on the balance this tick's own billing leaves
    # 9. the ladders, on the auction the next tick would run if nothing else changed
    coming = next_bids(s, inp.interval_ns)
    releases = window_releases(s, [*coming.protected, *coming.stepping_down])
    fresh = newcomers()
    every = [*holdings(s, coming, clearing), *fresh.values()]
    ladders = own_ladders(coming.auction, every, releases, s.now)
    s.own_ladders = {c: ladders[c] for c in s.clusters}
    s.newcomer_ladders = {kind: ladders[h.cluster] for kind, h in fresh.items()}
    verdicts.jobs_too_low(s)
    low = verdicts.clusters_too_low(s, clearing)
    verdicts.pending_reasons(s, low)
    held = [*bids.protected, *bids.stepping_down]
    ladder = published_ladder(coming.auction, releases, s.now)
    out = gather_output(s, clearing, {n.id for n in held}, low, ladder)
    # why each cluster pays what `billing.charge` billed it for the interval
    out.receipts = receipts(
        inp.island.id,
        inp.tick,
        to_datetime(inp.time),
        clearing,
        s.reserve_price,
        s.gpus_per_node,
        inp.interval_ns,
    )
    # the record: all the auctions used, so the history can run them again (docs/history.md)
    out.bids = AuctionRecord(bids.auction, step_downs)
    out.next_bids = AuctionRecord(
        coming.auction, step_down_groups(coming.stepping_down, ()), tuple(releases)
    )
    return out
