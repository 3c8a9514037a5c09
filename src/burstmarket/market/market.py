"""The running market, assembled from parts that each do one job:

- `lock` (market/lock.py): exclusive sections, and the tick in flight;
- `figures` (market/figures.py): last ticks, rates, balances, tokens, kept in memory;
- `hot` (market/hot.py): the VM declarations' in-memory copy, written by the group commit;
- the tick runner (market/runner.py): snapshot, clear, commit;
- the tables (market/tables.py) and the rows looked up by id (market/lookups.py) everyone
  shares.

Who writes, and how they keep out of each other's way:
- VM declarations, the hot path, are jobs of the store's group-commit writer: many to a
  transaction, on the in-memory copy of what they read.
- Every other state change (operator actions, Kubernetes jobs, spend limits) is an exclusive
  section, `with lock:` plus one store transaction.
- A tick reads a snapshot, clears it holding nothing, then commits under the writer.
An in-memory figure changes only after its rows are committed, holding the writer. Reads need
no lock: they use their own cursor. The desks a request reaches (market/desks/) are built from
the parts they use and keep no reference to the market.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import msgspec

from burstmarket.clock import NS_PER_MS, Clock, ManualClock
from burstmarket.collector import collector_paused
from burstmarket.events import TickCommitted
from burstmarket.market.figures import Figures
from burstmarket.market.hot import Hot
from burstmarket.market.islands import create_island
from burstmarket.market.lock import MarketLock
from burstmarket.market.model import Island
from burstmarket.market.runner import TickRunner
from burstmarket.market.tables import TABLES
from burstmarket.money import micros_to_decimal
from burstmarket.settings import IslandSpec, Settings
from burstmarket.store import Database, journal
from burstmarket.store.rows import fetch

log = logging.getLogger(__name__)

Listener = Callable[[TickCommitted], None]
_AS_SENT = msgspec.json.Encoder(decimal_format="number")
"""Money as a request carries it: a JSON number."""


class Market:
    def __init__(self, db: Database, clock: Clock, settings: Settings) -> None:
        db.check_tables(TABLES)
        self.db = db
        self.clock = clock
        self.lock = MarketLock()
        with db.read() as cur:
            islands, resumed = fetch(cur, "islands"), fetch(cur, "market_time")[0]["ns"]
        if isinstance(clock, ManualClock) and resumed is not None:
            # market time resumes where the store left it, never from the wall clock;
            # BURSTMARKET_CLOCK_START only seeds a new store
            clock.resume(int(resumed))
        if not islands and settings.first_island is not None:
            # journalled as the operator's request that would make it (store/journal.py)
            journal.record(_first_island_request(settings.first_island, clock))
            try:
                with db.write() as cur:
                    create_island(cur, _island(settings.first_island), clock.now_ns())
            finally:
                journal.record(None)
        with db.read() as cur:
            self.figures = Figures(cur, settings.tick_ms * NS_PER_MS, started_at=clock.now_ns())
        self.hot = Hot(db, self.figures, self.lock)
        self._runner = TickRunner(db, clock, self.lock, self.figures, self.hot)
        self._only = None if settings.islands is None else frozenset(settings.islands)
        self.listeners: list[Listener] = []
        """Told of every committed tick, on the event loop (`publish`)."""

    @property
    def interval_ns(self) -> int:
        return self.figures.interval_ns

    def cluster_for_token(self, token: str) -> str | None:
        """The cluster a token belongs to, from memory (safe on the event loop)."""
        return self.figures.cluster_for_token(token)

    def runs(self, island: str) -> bool:
        """Whether this process runs `island` (`--islands`; without it, every island)."""
        return self._only is None or island in self._only

    def island_ids(self) -> list[str]:
        """The islands this process ticks."""
        with self.db.read() as cur:
            return [row["id"] for row in fetch(cur, "islands") if self.runs(row["id"])]

    def tick(self, island_id: str, time: int | None = None) -> TickCommitted:
        """Run and commit one tick of one island (market/runner.py). Blocking: call it from a
        worker thread, then hand the result to `publish` on the event loop. The cycle
        collector waits for it (collector.py)."""
        with collector_paused():
            return self._runner.tick(island_id, time)

    def publish(self, event: TickCommitted) -> None:
        """Tell every listener about a committed tick; a failing listener never stops the rest."""
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:
                log.exception(
                    "tick listener %r failed on %s/%d", listener, event.island, event.tick
                )


def _first_island_request(spec: IslandSpec, clock: Clock) -> journal.Entry:
    change: dict[str, object] = {
        "gpus_per_node": spec.gpus_per_node,
        "nodes": spec.nodes,
        "reserve_price": micros_to_decimal(spec.reserve_price),
    }
    if spec.node_spec is not None:
        change["node_spec"] = json.loads(spec.node_spec)
    body = _AS_SENT.encode(change).decode()
    path = f"/api/admin/islands/{spec.id}"
    return journal.Entry(clock.now_ns, "PUT", path, body, None, spec.id)


def _island(spec: IslandSpec) -> Island:
    return Island(spec.id, spec.gpus_per_node, spec.nodes, spec.reserve_price, spec.node_spec)
