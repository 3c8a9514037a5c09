"""One island's tick end to end: snapshot the store, clear it (market/tick/'s `run_tick`),
commit every row it produced in one transaction, then move the figures on.

The auction clears holding nothing, so declarations never wait for it:
1. snapshot: in an exclusive section (none half-done) and holding the writer (between two group
   commits), pin a read transaction; the tick is in flight from here.
2. read the snapshot and clear it, holding nothing. Exclusive sections wait for the tick. VM
   declarations on the island go on: the book closed at the snapshot, so new demand counts from
   the next tick. One that would release nodes the cluster holds would change what the tick
   decided: it waits for the tick and runs after it (VmDesk.declare). So nothing the tick
   read and writes changes before it commits.
3. commit the tick's rows in one transaction, with the scale-downs that lowered demand asked for
   while it cleared (`_late_scale_downs`), and update what declarations read (last tick, rates,
   balances, the hot copy, and on the manual clock market time itself) before the writer runs
   anything else. A tick that does not commit changes none of them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from time import perf_counter

import pyarrow as pa

from burstmarket.clearing_json import render_published_ladder, render_stats
from burstmarket.clock import NS_PER_MS, Clock, to_datetime
from burstmarket.contract import LadderView, TickStats
from burstmarket.events import TickCommitted
from burstmarket.market.auction_record import bid_batch
from burstmarket.market.cluster_ticks import cluster_ticks, standing
from burstmarket.market.figures import Figures, LastTick, OwnLadders, Window, spent_since
from burstmarket.market.hot import Hot
from burstmarket.market.ladder import LadderRung
from burstmarket.market.ledger import CHARGE, SPENT, Billed, scale_down
from burstmarket.market.lock import MarketLock
from burstmarket.market.lookups import billing_hold_since, read_island
from burstmarket.market.model import (
    BASE_LOAD_GRACE_NS,
    BILLING_HOLD,
    Block,
    Cluster,
    Island,
    Node,
    newest_first,
)
from burstmarket.market.purchases import purchase_money
from burstmarket.market.tables import (
    ALLOCATIONS,
    BIDS,
    BLOCK_PROGRESS,
    BLOCKS,
    CLUSTER_RATES,
    CLUSTER_STATE,
    CLUSTERS,
    JOB_EVENTS,
    JOB_PROGRESS,
    JOBS,
    LADDER,
    LEDGER,
    NODE_STATE,
    NODES,
    PENDING,
    RECEIPTS,
    TICKS,
    USD,
    VERDICTS,
    AllocationRow,
    ClusterRateRow,
    PendingRow,
    TickRow,
    VerdictRow,
)
from burstmarket.market.tick import TickInput, TickOutput, run_tick
from burstmarket.money import micros_to_decimal, units_to_usd, usd
from burstmarket.store import Database
from burstmarket.store.rows import Cursor, fetch, fetch_rows, run
from burstmarket.store.table import scaled_decimals


class TickRunner:
    def __init__(
        self, db: Database, clock: Clock, lock: MarketLock, figures: Figures, hot: Hot
    ) -> None:
        self._db = db
        self._clock = clock
        self._lock = lock
        self._figures = figures
        self._hot = hot
        self._jobs_since: dict[str, int] = {}
        """Per island, an order of acceptance (`seq`) no job live now was given less than: the
        oldest live job its last tick read, or the next one to be given at that tick's
        snapshot if it is sooner (a job made since is given a later one: both hold the writer;
        a clock could step back, the counter never does). Its live jobs are read from there
        (sql/island_jobs.sql), so a tick no longer reads past every job the island ever
        finished (3 million of them: 90 ms, against 2 ms from the bound)."""
        self._terms: dict[str, Terms] = {}
        """Each island's terms as its last recorded row holds them (`record_island_terms`),
        once a tick of this process has committed: a tick on the same terms writes no row, so
        it runs no statement to find that out."""

    def tick(self, island_id: str, time: int | None = None) -> TickCommitted:
        """Run and commit one tick of one island at `time` (default: its next tick time).
        Blocking: call it from a worker thread."""
        figures = self._figures
        started = perf_counter()
        with self._lock, self._db.held():
            now = self._clock.now_ns()
            at = figures.next_tick_time(island_id, now) if time is None else time
            last = figures.last(island_id)
            number = 1 if last is None else last.tick + 1
            billed = figures.billed(island_id)
            windows = figures.spend_windows()  # as of the snapshot: no commit in between
            jobs_since = self._jobs_since.get(island_id, 0)
            next_seq = figures.last_seq() + 1
            snapshot = self._db.snapshot()
            self._lock.start_tick(island_id)
        try:
            with snapshot as cur:
                inp = self._tick_input(cur, island_id, number, at, billed, windows, jobs_since)
            self._jobs_since[island_id] = min([next_seq, *(j.seq for j in inp.jobs)])
            read = perf_counter()
            before = {cid: standing(c) for cid, c in inp.clusters.items()}
            out = run_tick(inp)
            cleared = perf_counter()
            final = {n.id: n for n in inp.nodes} | {n.id: n for n in out.nodes}
            """Every node of the island as the tick leaves it."""
            with self._db.held():
                epoch = self._db.epoch
                terms = _terms(inp.island)
                with self._db.write() as cur:
                    self._late_scale_downs(inp, out, final)
                    _write(cur, inp, out, record_terms=self._terms.get(island_id) != terms)
                    opened = _opened_windows(cur, out.clusters, windows)
                self._terms[island_id] = terms  # the last recorded row holds them now
                figures.ticked(island_id, LastTick(number, at), out.rates, _own(number, at, out))
                figures.fold(out.ledger)
                for since, spent in opened.items():
                    figures.opened(since, spent)
                self._hot.after_tick(island_id, epoch, list(final.values()), out.clusters)
                self._clock.ticked(at)  # market time moves with a committed tick only
        finally:
            self._lock.end_tick()  # committed or not (then nothing was), waiters go on
        done = perf_counter()
        return _committed(
            inp,
            out,
            before,
            {"read": read - started, "clear": cleared - read, "commit": done - cleared},
        )

    def _tick_input(
        self,
        cur: Cursor,
        island_id: str,
        number: int,
        at: int,
        billed: Billed | None,
        windows: dict[str, Window],
        jobs_since: int,
    ) -> TickInput:
        island = read_island(cur, island_id)
        clusters = {
            c.id: c
            for c in CLUSTERS.from_tuples(*fetch_rows(cur, "island_clusters", island=island_id))
        }
        spent = {
            c.id: spent_since(cur, c.id, c.spend_window_start, windows.get(c.id))
            for c in clusters.values()
            if c.spend_limit is not None and c.spend_window_start is not None
        }
        blocks = [BLOCKS.from_row(r) for r in fetch(cur, "island_blocks", island=island_id)]
        balances = {c.account: self._figures.balance(c.account) for c in clusters.values()}
        return TickInput(
            island=island,
            tick=number,
            time=at,
            interval_ns=self._figures.interval_ns,
            clusters=clusters,
            nodes=NODES.from_tuples(*fetch_rows(cur, "island_nodes", island=island_id)),
            jobs=JOBS.from_tuples(
                *fetch_rows(cur, "island_jobs", island=island_id, since=jobs_since)
            ),
            balances=balances,
            hold_since=_hold_since(cur, clusters.values(), balances),
            spent=spent,
            rates=self._figures.rates(island_id),
            blocks=blocks,
            purchases=purchase_money(cur, [b.purchase for b in blocks if _may_stop(b, at)]),
            billed=billed,
        )

    def _late_scale_downs(self, inp: TickInput, out: TickOutput, final: dict[str, Node]) -> None:
        """A declaration that lowered max_gpus while the tick cleared did not wait for it, so
        the tick may grant that cluster more than it now declares. The excess goes back at
        once, newest grant first, refunded to the ms: as if the declaration had come the moment
        after the tick. Amends `out` (its nodes and ledger rows), so the tick writes it all;
        `final` holds the same node objects, so it sees the give-backs too."""
        declared = self._lock.declared_during_tick()
        if not declared:
            return
        changed = {n.id for n in out.nodes}
        held: dict[str, list[Node]] = {}
        for n in final.values():
            if n.cluster in declared and n.service is None:
                held.setdefault(n.cluster, []).append(n)
        g = inp.island.gpus_per_node
        billed = Billed(inp.time, inp.time + inp.interval_ns, self._figures.started_at)
        for cluster, max_gpus in sorted(declared.items()):
            nodes = held.get(cluster, [])
            excess = newest_first(nodes)[: max(0, len(nodes) - max_gpus // g)]
            c, rate = inp.clusters[cluster], out.rates.get(cluster)
            out.ledger += scale_down(c, g, excess, inp.time, rate, billed)
            out.nodes += [n for n in excess if n.id not in changed]


def _opened_windows(
    cur: Cursor, changed: Iterable[Cluster], windows: dict[str, Window]
) -> dict[int, dict[str, int]]:
    """The spend windows the tick opened (by their start, the tick's time), with what each
    cluster has spent since as the store holds it inside the tick's transaction: its own rows,
    and any a declaration committed while it cleared (already folded into the window before)."""
    opened: dict[int, list[str]] = defaultdict(list)
    for c in changed:
        known = windows.get(c.id)
        since = c.spend_window_start
        if since is not None and (known is None or known.since != since):
            opened[since].append(c.id)
    found: dict[int, dict[str, int]] = {}
    for since, clusters in opened.items():
        rows = fetch(cur, "window_spent", since=since, clusters=clusters, kinds=list(SPENT))
        spent = {row["cluster"]: int(row["units"]) for row in rows}
        found[since] = {cluster: spent.get(cluster, 0) for cluster in clusters}
    return found


def _may_stop(b: Block, at: int) -> bool:
    """Whether the tick at `at` may end or cancel the block (only then does it need to know
    what the block's purchase holds: the ledger is not read for it every tick)."""
    negative = b.negative_since is not None and b.negative_since + BASE_LOAD_GRACE_NS <= at
    return at >= b.ends_at or negative


def _write(cur: Cursor, inp: TickInput, out: TickOutput, record_terms: bool) -> None:
    """Every row of the tick: its state changes, then the market data it publishes."""
    # ledger first: a grant's commitment is written before the grant itself
    LEDGER.insert(cur, out.ledger)
    NODES.update(cur, out.nodes, NODE_STATE)
    JOBS.update(cur, out.jobs, JOB_PROGRESS)
    JOB_EVENTS.insert(cur, out.events)
    CLUSTERS.update(cur, out.clusters, CLUSTER_STATE)
    island, tick, when = inp.island.id, inp.tick, to_datetime(inp.time)
    stats = out.clearing.stats
    TICKS.insert(
        cur,
        [
            TickRow(
                island,
                tick,
                when,
                vwap=_usd(stats.vwap),
                min=_usd(stats.min),
                max=_usd(stats.max),
                gpus=stats.gpus,
                clusters=stats.clusters,
                pending_gpus=out.pending_gpus,
                reserve_price=micros_to_decimal(inp.island.reserve_price),
                tick_seconds=Decimal(inp.interval_ns // NS_PER_MS).scaleb(-3),
                core_rounds=out.clearing.core_rounds,
                core_exact=out.clearing.core_exact,
            )
        ],
    )
    charges: dict[str | None, int] = defaultdict(int)
    for e in out.ledger:
        if e.kind == CHARGE:  # the tick's interval, and held time not billed before it
            charges[e.cluster] += e.units
    CLUSTER_RATES.insert(
        cur,
        [
            ClusterRateRow(
                island,
                tick,
                when,
                cid,
                cc.gpus,
                micros_to_decimal(cc.rate),
                units_to_usd(charges[cid]),
            )
            for cid, cc in out.clearing.clusters.items()
        ],
    )
    ALLOCATIONS.insert(cur, [AllocationRow(island, tick, when, *a) for a in out.allocations])
    LADDER.insert_batch(cur, _ladder_batch(island, tick, when, out.ladder))
    VERDICTS.insert(cur, [VerdictRow(island, tick, *v) for v in out.verdicts])
    RECEIPTS.insert(cur, out.receipts)
    BLOCKS.update(cur, out.blocks, BLOCK_PROGRESS)
    PENDING.insert(cur, [PendingRow(island, tick, *w) for w in out.waiting])
    _write_record(cur, inp, out, record_terms)


def _ladder_batch(island: str, tick: int, when: datetime, rungs: Sequence[LadderRung]) -> pa.Table:
    """The published ladder's rows, column by column (a rung for every node of the island)."""
    n = len(rungs)
    return LADDER.from_columns(
        {
            "island": [island] * n,
            "tick": [tick] * n,
            "time": [when] * n,
            "nodes": [r.nodes for r in rungs],
            "gpus": [r.gpus for r in rungs],
            "price": scaled_decimals([r.price for r in rungs], USD),
            "contestable_at": [_time(r.contestable_at) for r in rungs],
            "later": [
                [
                    {"since": to_datetime(at), "price": micros_to_decimal(price)}
                    for at, price in r.later
                ]
                for r in rungs
            ],
        }
    )


Terms = tuple[int, int, str | None, int]
"""An island's recorded terms: GPUs per node, nodes, node spec, reserve price (µUSD)."""


def _terms(island: Island) -> Terms:
    return (island.gpus_per_node, island.nodes, island.node_spec, island.reserve_price)


def _write_record(cur: Cursor, inp: TickInput, out: TickOutput, record_terms: bool) -> None:
    """The record of the tick (docs/history.md "The record"): every part of its two auctions,
    and the island's terms when they changed since its last recorded tick (`record_terms`:
    unless the runner knows they did not)."""
    island, when = inp.island, to_datetime(inp.time)
    assert out.bids is not None  # run_tick sets both
    assert out.next_bids is not None
    BIDS.insert_batch(cur, bid_batch(island.id, inp.tick, when, out.bids, out.next_bids))
    if not record_terms:
        return
    run(
        cur,
        "record_island_terms",
        island=island.id,
        tick=inp.tick,
        time=when,
        gpus_per_node=island.gpus_per_node,
        nodes=island.nodes,
        node_spec=island.node_spec,
        reserve_price=micros_to_decimal(island.reserve_price),
    )


def _committed(
    inp: TickInput,
    out: TickOutput,
    before: dict[str, frozenset[str]],
    durations: dict[str, float],
) -> TickCommitted:
    island, tick, time = inp.island.id, inp.tick, to_datetime(inp.time)
    reserve = usd(inp.island.reserve_price)
    return TickCommitted(
        island=island,
        tick=tick,
        time=time,
        stats=TickStats(
            island=island,
            tick=tick,
            time=time,
            **render_stats(out.clearing.stats),
            pending_gpus=out.pending_gpus,
            reserve_price=reserve,
        ),
        ladder=LadderView(
            island=island,
            tick=tick,
            time=time,
            reserve_price=reserve,
            rungs=render_published_ladder(out.ladder),
        ),
        clusters=cluster_ticks(inp, out, before),
        durations=durations,
    )


def _own(tick: int, at: int, out: TickOutput) -> OwnLadders:
    held: dict[str, int] = defaultdict(int)
    for cluster, _, kind in out.allocations:
        if kind != "base_load":
            held[cluster] += 1
    return OwnLadders(tick, at, out.own_ladders, dict(held), out.newcomer_ladders)


def _time(ns: int | None) -> datetime | None:
    return None if ns is None else to_datetime(ns)


def _usd(micros: int | None) -> Decimal | None:
    return None if micros is None else micros_to_decimal(micros)


def _hold_since(
    cur: Cursor, clusters: Iterable[Cluster], balances: dict[str, int]
) -> dict[str, int]:
    """Since when each account at or below zero is, read only for a billing hold that starts
    (a cluster already on hold keeps its `since`)."""
    starting = {
        c.account
        for c in clusters
        if balances.get(c.account, 0) <= 0 and c.pending_reason != BILLING_HOLD
    }
    found = {a: billing_hold_since(cur, a) for a in sorted(starting)}
    return {a: since for a, since in found.items() if since is not None}
