"""The running market: state in the store, ticks, and the caches that keep the hot path short.

Who writes, and how they keep out of each other's way:
- VM declarations, the hot path, are jobs of the store's group-commit writer: many to a
  transaction, on an in-memory copy of what they read (market/hot.py).
- Every other state change (operator actions, Kubernetes jobs, spend limits) is an exclusive
  section, `with market.lock:` plus one store transaction.
- A tick reads a snapshot, clears it holding nothing, then commits under the writer (`tick`).
An in-memory figure (last tick, rates, balances) changes only after its rows are committed,
holding the writer. Reads need no lock: they use their own cursor.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from time import perf_counter
from typing import Any

from burstmarket.clearing_json import render_published_ladder, render_stats
from burstmarket.clock import NS_PER_MS, Clock, ManualClock, rfc3339, to_datetime
from burstmarket.errors import NotFound
from burstmarket.events import TickCommitted
from burstmarket.market.hot import Hot
from burstmarket.market.ledger import BALANCE, CHARGE, Billed, Entry, stop_billing
from burstmarket.market.model import Block, Cluster, Island, Job, JobEvent, Node, newest_first
from burstmarket.market.tick import TickInput, TickOutput, run_tick
from burstmarket.money import MICROS_PER_USD, micros_to_decimal, units_to_usd, usd
from burstmarket.settings import Settings
from burstmarket.store import Database
from burstmarket.store import schemas as s
from burstmarket.store.rows import Cursor, fetch, fetch_arrow, fetch_one, run, write_batch

log = logging.getLogger(__name__)

DEFAULT_ISLAND = Island(
    id="ref",
    gpus_per_node=8,
    nodes=64,
    reserve_price=MICROS_PER_USD,
    node_spec=json.dumps(
        {
            "cpu": "240 vCPUs, AMD EPYC (Turin)",
            "gpus": "8x AMD MI355X 288 GB OAM",
            "memory": "3 TB RAM",
            "storage": "8x 3.84 TB NVMe",
            "network": "3200 Gbps scale-out, fully interconnected, on-site scalable NFS",
        }
    ),
)

Listener = Callable[[TickCommitted], None]


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def node_id(island: str, idx: int) -> str:
    return f"{island}-n{idx:04d}"


@dataclass(frozen=True, slots=True)
class LastTick:
    tick: int
    time: int


@dataclass(eq=False, slots=True)
class _InFlight:
    island: str
    done: Future[None] = field(default_factory=Future)
    declared: dict[str, int] = field(default_factory=dict)
    """max_gpus of each VM declaration committed while the tick cleared, last one wins."""


class MarketLock:
    """`with market.lock:` is an exclusive section: every state change but a VM declaration.

    Sections never overlap each other, nor a tick in flight (from its snapshot to its commit):
    so what a tick read stays true while it clears, except VM demand, which declarations keep
    changing; those check themselves against the tick (`tick_in_flight`). Reentrant, like the
    RLock it replaced (an operator's island change creates the island inside its section).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._owner: int | None = None
        self._depth = 0
        self._tick: _InFlight | None = None

    def __enter__(self) -> None:
        me = threading.get_ident()
        with self._cond:
            if self._owner != me:
                self._cond.wait_for(lambda: self._owner is None and self._tick is None)
                self._owner = me
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._depth -= 1
            if not self._depth:
                self._owner = None
                self._cond.notify_all()

    def start_tick(self, island: str) -> None:
        """Inside a section: the tick of `island` is in flight once the section ends."""
        with self._cond:
            self._tick = _InFlight(island)

    def end_tick(self) -> None:
        with self._cond:
            if self._tick is None:
                return
            done = self._tick.done
            self._tick = None
            self._cond.notify_all()
        done.set_result(None)

    def tick_in_flight(self, island: str) -> Future[None] | None:
        """The future of `island`'s tick while it is in flight (done once it committed)."""
        tick = self._tick
        return tick.done if tick is not None and tick.island == island else None

    def declared(self, island: str, cluster: str, max_gpus: int) -> None:
        """A VM declaration committed (call holding the writer): recorded if `island`'s tick
        is in flight, for its late scale-downs (Market._late_scale_downs)."""
        tick = self._tick
        if tick is not None and tick.island == island:
            tick.declared[cluster] = max_gpus

    def declared_during_tick(self) -> dict[str, int]:
        tick = self._tick
        return {} if tick is None else tick.declared


class Market:
    def __init__(self, db: Database, clock: Clock, settings: Settings) -> None:
        self.db = db
        self.clock = clock
        self.interval_ns = settings.tick_ms * NS_PER_MS
        self.lock = MarketLock()
        self.listeners: list[Listener] = []
        self.last: dict[str, LastTick] = {}
        self.rates: dict[str, dict[str, int]] = {}
        self.balances: dict[str, int] = {}
        self._tokens: dict[str, str] = {}
        self._seq = 0
        self._load()
        self.started_at = clock.now_ns()
        """Market time the service started: held time before it is never billed (the market
        was not running; docs/market.md "Billing")."""
        self.hot = Hot(self)

    # --- start ----------------------------------------------------------------------------

    def _load(self) -> None:
        with self.lock:
            cur = self.db.cursor()
            try:
                if not fetch(cur, "islands"):
                    self.create_island(DEFAULT_ISLAND)
                for row in fetch(cur, "last_ticks"):
                    self.last[row["island"]] = LastTick(row["tick"], int(row["time_us"]) * 1000)
                for row in fetch(cur, "last_rates"):
                    self.rates.setdefault(row["island"], {})[row["cluster"]] = row["rate"]
                self._load_balances(cur)
                self._tokens = {r["token_hash"]: r["id"] for r in fetch(cur, "cluster_tokens")}
                self._seq = int(fetch(cur, "demand_seq")[0]["seq"])
                resumed = fetch(cur, "market_time")[0]["ns"]
            finally:
                cur.close()
            if isinstance(self.clock, ManualClock) and resumed is not None:
                # market time resumes where the store left it, never from the wall clock;
                # BURSTMARKET_CLOCK_START only seeds a new store (the default island's row)
                self.clock.resume(int(resumed))

    def _load_balances(self, cur: Cursor) -> None:
        self.balances = {row["account"]: int(row["units"]) for row in fetch(cur, "balances")}

    def create_island(self, island: Island) -> None:
        with self.lock, self.db.write() as cur:
            run(
                cur,
                "insert_island",
                id=island.id,
                gpus_per_node=island.gpus_per_node,
                nodes=island.nodes,
                reserve_price=island.reserve_price,
                node_spec=island.node_spec,
                created_at=self.clock.now_ns(),
            )
            self.add_nodes(cur, island.id, 0, island.nodes)

    def add_nodes(self, cur: Cursor, island: str, start: int, stop: int) -> None:
        rows = [{"island": island, "id": node_id(island, i), "idx": i} for i in range(start, stop)]
        write_batch(cur, "insert_nodes", s.NODES, rows)

    # --- reads shared by the API ----------------------------------------------------------

    def island(self, cur: Cursor, island_id: str) -> Island:
        row = fetch_one(cur, "island", island=island_id)
        if row is None:
            raise NotFound(f"no island {island_id!r}", island=island_id)
        return Island.from_row(row)

    def cluster(self, cur: Cursor, cluster_id: str) -> Cluster:
        row = fetch_one(cur, "cluster", cluster=cluster_id)
        if row is None:
            raise NotFound(f"no cluster {cluster_id!r}", cluster=cluster_id)
        return Cluster.from_row(row)

    def cluster_nodes(self, cur: Cursor, cluster_id: str) -> list[Node]:
        return [Node.from_row(r) for r in fetch(cur, "cluster_nodes", cluster=cluster_id)]

    def cluster_for_token(self, token: str) -> str | None:
        """The cluster a token belongs to, from memory (safe on the event loop)."""
        return self._tokens.get(token_hash(token))

    def add_token(self, cluster: str, token: str) -> None:
        """A new cluster's token (call once its row is committed)."""
        self._tokens[token_hash(token)] = cluster

    def now(self) -> int:
        return self.clock.now_ns()

    def billed(self, island: str) -> Billed | None:
        """How far the island's market billing has gone: the interval its last tick billed in
        advance, [time, time + interval), and nothing before the service started."""
        last = self.last.get(island)
        if last is None:
            return None
        return Billed(last.time, last.time + self.interval_ns, self.started_at)

    def next_seq(self) -> int:
        """The next order of acceptance for a write of demand. Call holding the writer, so
        the order is the order the writes commit in."""
        self._seq += 1
        return self._seq

    # --- writes shared by tenant and operator actions -------------------------------------

    def write_ledger(self, cur: Cursor, entries: list[Entry]) -> None:
        write_batch(cur, "insert_ledger", s.LEDGER, [_entry_row(e) for e in entries])

    def write_nodes(self, cur: Cursor, nodes: list[Node]) -> None:
        write_batch(cur, "update_nodes", s.NODES, [_node_row(n) for n in nodes])

    def after_commit(self, entries: list[Entry]) -> None:
        """Fold committed ledger rows into the cached balances (call only after the commit)."""
        for e in entries:
            if e.kind in BALANCE:
                self.balances[e.account] = self.balances.get(e.account, 0) - e.units

    # --- ticks ----------------------------------------------------------------------------

    def island_ids(self) -> list[str]:
        cur = self.db.cursor()
        try:
            return [row["id"] for row in fetch(cur, "islands")]
        finally:
            cur.close()

    def next_tick_time(self, island: str) -> int:
        """Market time of the island's next tick: now, but never within one interval of the
        last tick, so the billed intervals [t, t + interval) never overlap."""
        last = self.last.get(island)
        now = self.clock.now_ns()
        return now if last is None else max(now, last.time + self.interval_ns)

    def tick(self, island_id: str, time: int | None = None) -> TickCommitted:
        """Run and commit one tick of one island. Blocking: call it from a worker thread, then
        hand the result to `publish` on the event loop.

        The auction clears holding nothing, so declarations never wait for it:
        1. snapshot: in an exclusive section (none half-done) and holding the writer (between
           two group commits), pin a read transaction; the tick is in flight from here.
        2. read the snapshot and clear it, holding nothing. Exclusive sections wait for the
           tick. VM declarations on the island go on: the book closed at the snapshot, so new
           demand counts from the next tick. One that would release nodes the cluster holds
           would change what the tick decided: it waits for the tick and runs after it
           (Tenant.declare_vm). So nothing the tick read and writes changes before it commits.
        3. commit the tick's rows in one transaction, with the scale-downs that lowered demand
           asked for while it cleared (`_late_scale_downs`), and update the figures declarations
           read (last tick, rates, balances, the hot copy) before the writer runs anything else.
        """
        started = perf_counter()
        reader = self.db.cursor()
        try:
            with self.lock, self.db.held():
                at = self.next_tick_time(island_id) if time is None else time
                last = self.last.get(island_id)
                number = 1 if last is None else last.tick + 1
                billed = self.billed(island_id)
                reader.execute("BEGIN TRANSACTION")
                reader.execute("SELECT count(*) FROM islands").fetchall()  # pins the snapshot
                self.lock.start_tick(island_id)
            try:
                inp = self._tick_input(reader, island_id, number, at, billed)
                reader.execute("COMMIT")
                read = perf_counter()
                out = run_tick(inp)
                cleared = perf_counter()
                final = {n.id: n for n in inp.nodes} | {n.id: n for n in out.nodes}
                """Every node of the island as the tick leaves it."""
                with self.db.held():
                    epoch = self.db.epoch
                    with self.db.write() as cur:
                        self._late_scale_downs(inp, out, final)
                        self._write_tick(cur, inp, out)
                    self.last[island_id] = LastTick(number, at)
                    self.rates[island_id] = out.rates
                    self.after_commit(out.ledger)
                    self.hot.after_tick(island_id, epoch, list(final.values()), out.clusters)
                    self.lock.end_tick()
            finally:
                self.lock.end_tick()  # a failed tick commits nothing and lets waiters go
        finally:
            reader.close()
        done = perf_counter()
        return _committed(inp, out, {"read": read - started, "clear": cleared - read,
                                     "commit": done - cleared})

    def _late_scale_downs(self, inp: TickInput, out: TickOutput, final: dict[str, Node]) -> None:
        """A declaration that lowered max_gpus while the tick cleared did not wait for it, so
        the tick may grant that cluster more than it now declares. The excess goes back at
        once, newest grant first, refunded to the ms: as if the declaration had come the moment
        after the tick. Amends `out` (its nodes and ledger rows), so the tick writes it all;
        `final` holds the same node objects, so it sees the give-backs too."""
        declared = self.lock.declared_during_tick()
        if not declared:
            return
        changed = {n.id for n in out.nodes}
        held: dict[str, list[Node]] = {}
        for n in final.values():
            if n.cluster in declared and n.service is None:
                held.setdefault(n.cluster, []).append(n)
        g = inp.island.gpus_per_node
        billed = Billed(inp.time, inp.time + self.interval_ns, self.started_at)
        for cluster, max_gpus in sorted(declared.items()):
            nodes = held.get(cluster, [])
            excess = newest_first(nodes)[: max(0, len(nodes) - max_gpus // g)]
            c, rate = inp.clusters[cluster], out.rates.get(cluster)
            out.ledger += self.scale_down(c, inp.island, excess, inp.time, rate, billed)
            out.nodes += [n for n in excess if n.id not in changed]

    def scale_down(
        self,
        c: Cluster,
        island: Island,
        nodes: list[Node],
        at: int,
        rate: int | None,
        billed: Billed | None,
    ) -> list[Entry]:
        """`nodes` go back to the island at `at` (freed here) and their billing stops at once,
        exactly at `at` (ledger.stop_billing, `rate` the cluster's rate in force). The rows."""
        entries: list[Entry] = []
        for n in nodes:
            entries += stop_billing(at, c.account, c.id, n, island.gpus_per_node, rate, billed)
            n.free()
        return entries

    def publish(self, event: TickCommitted) -> None:
        """Tell every listener about a committed tick; a failing listener never stops the rest."""
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:
                log.exception(
                    "tick listener %r failed on %s/%d", listener, event.island, event.tick
                )

    def _tick_input(
        self, cur: Cursor, island_id: str, number: int, at: int, billed: Billed | None
    ) -> TickInput:
        island = self.island(cur, island_id)
        clusters = {
            row["id"]: Cluster.from_row(row)
            for row in fetch_arrow(cur, "island_clusters", island=island_id)
        }
        spent: dict[str, int] = {}
        if any(c.spend_limit is not None for c in clusters.values()):
            spent = {r["cluster"]: int(r["units"]) for r in fetch(cur, "spent", island=island_id)}
        return TickInput(
            island=island,
            tick=number,
            time=at,
            interval_ns=self.interval_ns,
            clusters=clusters,
            nodes=[Node.from_row(r) for r in fetch_arrow(cur, "island_nodes", island=island_id)],
            jobs=[Job.from_row(r) for r in fetch_arrow(cur, "island_jobs", island=island_id)],
            balances={c.account: self.balances.get(c.account, 0) for c in clusters.values()},
            spent=spent,
            rates=dict(self.rates.get(island_id, {})),
            blocks=[Block.from_row(r) for r in fetch(cur, "island_blocks", island=island_id)],
            billed=billed,
        )

    def _write_tick(self, cur: Cursor, inp: TickInput, out: TickOutput) -> None:
        # ledger first: a grant's commitment is written before the grant itself
        self.write_ledger(cur, out.ledger)
        self.write_nodes(cur, out.nodes)
        write_batch(cur, "update_jobs", s.JOBS, [_job_row(j) for j in out.jobs])
        write_batch(cur, "insert_job_events", s.JOB_EVENTS, [_event_row(e) for e in out.events])
        write_batch(
            cur,
            "update_cluster_state",
            s.CLUSTER_STATE,
            [
                {
                    "id": c.id,
                    "spend_window_start": c.spend_window_start,
                    "pending_reason": c.pending_reason,
                    "bid_too_low": c.bid_too_low,
                }
                for c in out.clusters
            ],
        )
        island, tick, when = inp.island.id, inp.tick, to_datetime(inp.time)
        stats = out.clearing.stats
        write_batch(
            cur,
            "insert_ticks",
            s.TICKS,
            [
                {
                    "island": island,
                    "tick": tick,
                    "time": when,
                    "vwap": _dec(stats.vwap),
                    "min": _dec(stats.min),
                    "max": _dec(stats.max),
                    "gpus": stats.gpus,
                    "clusters": stats.clusters,
                    "pending_gpus": out.pending_gpus,
                    "reserve_price": micros_to_decimal(inp.island.reserve_price),
                    "tick_seconds": Decimal(inp.interval_ns // NS_PER_MS).scaleb(-3),
                }
            ],
        )
        charges: dict[str | None, int] = defaultdict(int)
        for e in out.ledger:
            if e.kind == CHARGE:  # the tick's interval, and held time not billed before it
                charges[e.cluster] += e.units
        write_batch(
            cur,
            "insert_cluster_rates",
            s.CLUSTER_RATES,
            [
                {
                    "island": island,
                    "tick": tick,
                    "time": when,
                    "cluster": cid,
                    "gpus": cc.gpus,
                    "rate": micros_to_decimal(cc.rate),
                    "amount_usd": units_to_usd(charges[cid]),
                }
                for cid, cc in out.clearing.clusters.items()
            ],
        )
        write_batch(
            cur,
            "insert_allocations",
            s.ALLOCATIONS,
            [
                {"island": island, "tick": tick, "time": when, "cluster": c, "node": n, "kind": k}
                for c, n, k in out.allocations
            ],
        )
        write_batch(
            cur,
            "insert_ladder",
            s.LADDER,
            [
                {
                    "island": island,
                    "tick": tick,
                    "time": when,
                    "nodes": rung.nodes,
                    "gpus": rung.gpus,
                    "price": micros_to_decimal(rung.price),
                    "contestable_at": _time(rung.contestable_at),
                }
                for rung in out.ladder
            ],
        )
        write_batch(
            cur,
            "insert_verdicts",
            s.VERDICTS,
            [{"island": island, "tick": tick, "cluster": c, "verdict": v} for c, v in out.verdicts],
        )
        write_batch(cur, "update_blocks", s.BLOCKS, [_block_row(b) for b in out.blocks])


def _committed(inp: TickInput, out: TickOutput, durations: dict[str, float]) -> TickCommitted:
    island, tick, time = inp.island.id, inp.tick, rfc3339(inp.time)
    stats = out.clearing.stats
    reserve = usd(inp.island.reserve_price)
    return TickCommitted(
        island=island,
        tick=tick,
        time=to_datetime(inp.time),
        stats={
            "island": island,
            "tick": tick,
            "time": time,
            **render_stats(stats),
            "pending_gpus": out.pending_gpus,
            "reserve_price": reserve,
        },
        ladder={
            "island": island,
            "tick": tick,
            "time": time,
            "reserve_price": reserve,
            "rungs": render_published_ladder(out.ladder),
        },
        durations=durations,
    )


def _time(ns: int | None) -> datetime | None:
    return None if ns is None else to_datetime(ns)


def _dec(micros: int | None) -> Decimal | None:
    return None if micros is None else micros_to_decimal(micros)


def _entry_row(e: Entry) -> dict[str, Any]:
    return {
        "ts": e.at,
        "account": e.account,
        "cluster": e.cluster,
        "island": e.island,
        "tick": e.tick,
        "kind": e.kind,
        "node": e.node,
        "period_start": e.period_start,
        "period_end": e.period_end,
        "gpus": e.gpus,
        "gpu_ms": e.gpu_ms,
        "rate": e.rate,
        "units": e.units,
    }


def _node_row(n: Node) -> dict[str, Any]:
    return {
        "island": n.island,
        "id": n.id,
        "idx": n.idx,
        "cluster": n.cluster,
        "job": n.job,
        "granted_at": n.granted_at,
        "window_ends_at": n.window_ends_at,
        "hold_until": n.hold_until,
        "idle_since": n.idle_since,
        "locked_price": n.locked_price,
        "commit_price": n.commit_price,
        "commit_ends_at": n.commit_ends_at,
        "service": n.service,
        "owed_until": n.owed_until,
        "block": n.block,
        "billed_until": n.billed_until,
    }


def _block_row(b: Block) -> dict[str, Any]:
    return {
        "id": b.id,
        "state": b.state,
        "ended_at": b.ended_at,
        "billed_until": b.billed_until,
        "negative_since": b.negative_since,
    }


def _job_row(j: Job) -> dict[str, Any]:
    return {
        "cluster": j.cluster,
        "name": j.name,
        "state": j.state,
        "provisioned_at": j.provisioned_at,
        "gang_price": j.gang_price,
        "bid_too_low": j.bid_too_low,
    }


def _event_row(e: JobEvent) -> dict[str, Any]:
    return {"cluster": e.cluster, "job": e.job, "ts": e.at, "type": e.type, "detail": e.detail}
