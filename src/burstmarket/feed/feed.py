"""The market's feed: the feed service (feed/service.py) over the market's store, the series
endpoint, the history exporter, and with `--bus` the publisher to the edges (feed/publisher.py).

The store's tick calls `on_tick` on the event loop after each commit. The rows the tick carries
(`TickCommitted.rows`, each of its feed's row type) are published at once (encoded once, fanned
out without awaiting anyone); the other feeds' rows are read back from the store by one worker,
in tick order.
Every row published here goes to the bus too, when there is one.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Protocol

from litestar import Response, get
from litestar.handlers import BaseRouteHandler
from litestar.params import QueryParameter

from burstmarket.apidoc import MARKET_DATA, TimeQuery, documented, refusals
from burstmarket.contract import Candle
from burstmarket.errors import Invalid, NotTickedYet, StoreUnavailable, UnknownIsland
from burstmarket.events import TickCommitted
from burstmarket.feed import series
from burstmarket.feed.bus import Bus, stop
from burstmarket.feed.catalog import FeedSpec
from burstmarket.feed.messages import Row
from burstmarket.feed.private import Authenticate
from burstmarket.feed.publisher import BusPublisher
from burstmarket.feed.reader import FeedReader
from burstmarket.feed.service import FeedOptions, FeedService, IslandQuery
from burstmarket.history import HistoryExporter
from burstmarket.history.layout import WINDOW, floor_time
from burstmarket.store import Database, store_fault

log = logging.getLogger(__name__)

STORE_RETRY_SECONDS = 0.5
"""How soon a feed read the store refused is tried again."""
EXPORT_QUIET_SECONDS = 0.25
"""The history exporter waits for the ticks to pause this long before a run, so a burst of
ticks (an operator's `POST /api/admin/ticks` of many, a simulated clock) is exported in one run
of a few files rather than in a run per window. A live market pauses ~10 s between ticks."""
EXPORT_DEFER_SECONDS = 5.0
"""Ticks that never pause delay an export no longer than this."""


class FeedSettings(Protocol):
    """What the feed reads from the service's Settings."""

    @property
    def data_dir(self) -> Path: ...
    @property
    def tick_seconds(self) -> float: ...
    @property
    def bus(self) -> str | None: ...
    @property
    def history_live(self) -> bool: ...


class StoreSource:
    """The market's past rows: its store, read in worker threads."""

    def __init__(self, db: Database) -> None:
        self.reader = FeedReader(db)

    async def rows(self, spec: FeedSpec, island: str, from_tick: int, to_tick: int) -> list[Row]:
        return await asyncio.to_thread(self.reader.rows, spec, island, from_tick, to_tick)

    async def replay_floor(self, spec: FeedSpec, island: str, latest: Row) -> int:
        window = timedelta(seconds=spec.replay_seconds)
        return await asyncio.to_thread(self.reader.replay_floor, island, latest, window)

    async def exists(self, island: str) -> bool:
        return bool(await asyncio.to_thread(self.reader.query, "island", {"island": island}))


class Feed:
    def __init__(
        self,
        db: Database,
        settings: FeedSettings,
        options: FeedOptions,
        authenticate: Authenticate | None = None,
    ) -> None:
        self._settings = settings
        self._store = StoreSource(db)
        self.service = FeedService(self._store, options, authenticate)
        self.specs = self.service.specs
        self._history = HistoryExporter(db, settings.data_dir / "history")
        self._history_due: dict[str, datetime] = {}
        self._history_kick = asyncio.Event()
        self._last_tick = 0.0  # the event loop's time of the last commit
        self._sql_ticks: asyncio.Queue[tuple[FeedSpec, str, int]] = asyncio.Queue()
        self._bus = None if settings.bus is None else Bus(settings.bus)
        self._publisher = (
            None
            if self._bus is None
            else BusPublisher(
                self._bus,
                self.specs,
                settings.tick_seconds,
                self._store.rows,
                lambda: {island: tick for island, (tick, _) in self.service.islands.items()},
            )
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self.route_handlers: list[BaseRouteHandler] = [
            *self.service.route_handlers,
            self._series_handler(),
        ]

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        query = self._store.reader.query
        for island, tick, time in await asyncio.to_thread(query, "feed_islands", {}):
            self.service.note(island, tick, time)
        self.service.start()
        self._tasks = [asyncio.create_task(self._sql_feeds(), name="feed-sql")]
        if self._settings.history_live:
            self._tasks.append(asyncio.create_task(self._export_history(), name="feed-history"))
        if self._publisher is not None:
            self._tasks.append(asyncio.create_task(self._publisher.run(), name="feed-bus"))

    async def stop(self) -> None:
        """Stop the background tasks; an export in progress finishes its current run first."""
        self._stopping = True
        self._history_kick.set()
        if self._publisher is not None:
            self._publisher.stopping = True
            await stop(self._tasks.pop())
        for task in self._tasks[:1]:  # the SQL feeds
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.service.stop()
        if self._bus is not None:
            await self._bus.close()

    @property
    def subscribers(self) -> int:
        """Open websocket connections."""
        return self.service.subscribers

    # -- publishing ----------------------------------------------------------------------------

    def on_tick(self, event: TickCommitted) -> None:
        """Called on the event loop after a tick commits; never blocks, never awaits."""
        self.service.note(event.island, event.tick, event.time)
        self._last_tick = asyncio.get_running_loop().time()
        live = {type(row): row for row in event.rows}
        for spec in self.specs:
            row = live.get(spec.row)
            if row is None:
                self._sql_ticks.put_nowait((spec, event.island, event.tick))
                continue
            channel = spec.channel_for(event.island)
            self._publish(spec, Row(channel, event.island, event.tick, event.time, spec.data(row)))
        self.service.publish_clusters(event.clusters)  # never to the bus: private rows
        if not self._settings.history_live:
            return  # no exporter runs (`simulate` writes its history at its end)
        due = self._history_due.get(event.island)
        if due is None or event.time >= due:
            self._history_due[event.island] = floor_time(event.time, WINDOW) + WINDOW
            self._history_kick.set()

    def _publish(self, spec: FeedSpec, row: Row) -> None:
        self.service.publish(row, spec)
        if self._publisher is not None:
            self._publisher.offer(spec, row)

    async def _sql_feeds(self) -> None:
        """Feeds whose row no tick carries: read each committed tick back, in order. A read
        the store refuses for a while (reopening after a failed checkpoint) is tried again: the
        tick is committed, so its rows will be there."""
        while True:
            spec, island, tick = await self._sql_ticks.get()
            while True:
                try:
                    rows = await self._store.rows(spec, island, tick, tick)
                    break
                except Exception as exc:
                    if store_fault(exc) is None:
                        raise
                    await asyncio.sleep(STORE_RETRY_SECONDS)
            for row in rows:
                self._publish(spec, row)

    async def _export_history(self) -> None:
        while not self._stopping:
            try:
                await asyncio.to_thread(self._history.run)
            except Exception as exc:
                # Disk full, a bad file...: the tick goes on; the next window retries.
                if isinstance(exc, OSError) or store_fault(exc) is not None:
                    log.warning("history: export failed, the next window retries: %s", exc)
                else:
                    log.exception("history: export failed")
            await self._history_kick.wait()
            self._history_kick.clear()
            await self._ticks_pause()

    async def _ticks_pause(self) -> None:
        """Until no tick has committed for EXPORT_QUIET_SECONDS (EXPORT_DEFER_SECONDS at most),
        or the feed stops."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + EXPORT_DEFER_SECONDS
        while not self._stopping:
            wait = min(self._last_tick + EXPORT_QUIET_SECONDS, give_up) - loop.time()
            if wait <= 0:
                return
            await asyncio.sleep(wait)

    # -- route handlers ------------------------------------------------------------------------

    def _series_handler(self) -> BaseRouteHandler:
        history = self._settings.data_dir / "history"
        tick_seconds = self._settings.tick_seconds

        async def handler(
            island: IslandQuery,
            interval: Annotated[series.Interval, QueryParameter()] = "1h",
            start: TimeQuery = None,
            end: TimeQuery = None,
            limit: Annotated[
                int, QueryParameter(ge=1, le=series.MAX_LIMIT, description="buckets")
            ] = series.DEFAULT_LIMIT,
            output: Annotated[series.Format, QueryParameter(name="format")] = "json",
        ) -> Response[list[Candle]]:
            _, latest = await self.service.island(island)
            query = series.SeriesQuery.of(island, latest, interval, limit, output, start, end)

            def run() -> bytes:
                table = series.candles(self._store.reader, history, query, tick_seconds)
                return series.render(table, query.format)

            body = await asyncio.to_thread(run)
            # As a header: the CSV type names its charset, which litestar would add again.
            headers = {"content-type": series.FORMATS[query.format]}
            return Response(body, headers=headers)  # type: ignore[arg-type]

        also = {
            series.FORMATS["csv"]: "the candles as CSV: " + ",".join(series.COLUMNS),
            series.FORMATS["arrow"]: "the candles as an Arrow IPC stream (exact decimals)",
        }
        return get(
            "/api/market/series",
            name="market-series",
            summary="Candles",
            description="Candles of the per-tick vwap.",
            responses=refusals(Invalid, UnknownIsland, NotTickedYet, StoreUnavailable),
            tags=[MARKET_DATA],
            operation_class=documented(also=also),
        )(handler)


def build_feed(
    db: Database,
    settings: FeedSettings,
    options: FeedOptions | None = None,
    authenticate: Authenticate | None = None,
) -> Feed:
    """The market-data layer for `create_app`: mount `route_handlers`, call `on_tick` after each
    commit, and `start()` / `stop()` it in the app's lifespan. `authenticate` (a cluster token
    -> its cluster) serves the clusters' own channels (feed/private.py)."""
    return Feed(db, settings, options or FeedOptions(), authenticate)
