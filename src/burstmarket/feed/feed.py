"""The market-data service: websocket feed, REST endpoints, AsyncAPI document, history exporter.

The store's tick calls `on_tick` on the event loop after each commit. The live row of every feed
that names a TickCommitted attribute is published at once (encoded once, fanned out without
awaiting anyone); feeds without one are read back from the store by one worker, in tick order.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Protocol, cast

import msgspec
from litestar import Request, Response, WebSocket, get, websocket
from litestar.handlers import BaseRouteHandler
from litestar.params import QueryParameter

from burstmarket import metrics
from burstmarket.apidoc import MARKET_DATA, TimeQuery, documented, refusals
from burstmarket.contract import Candle
from burstmarket.errors import Invalid, MarketError, NotFound, StoreUnavailable
from burstmarket.events import TickCommitted
from burstmarket.feed import series
from burstmarket.feed.asyncapi import HEARTBEAT_SECONDS, document, servers
from burstmarket.feed.catalog import FeedSpec, load_catalog
from burstmarket.feed.hub import SLOW_CONSUMER, Hub, Subscriber
from burstmarket.feed.messages import (
    Prepared,
    Row,
    error_frame,
    message_frame,
    reply_frame,
    rfc3339,
)
from burstmarket.feed.protocol import ClientFrame, Ping, Subscribe, parse_frame, request_id
from burstmarket.feed.reader import FeedReader
from burstmarket.feed.wire import wire_of
from burstmarket.history import HistoryExporter
from burstmarket.history.layout import WINDOW, floor_time
from burstmarket.market.refusals import log_refusal
from burstmarket.store import Database

log = logging.getLogger(__name__)

_JSON = "application/json"
IslandQuery = Annotated[str, QueryParameter(description="the island's id (required)")]


class FeedSettings(Protocol):
    """What the feed reads from the service's Settings."""

    @property
    def data_dir(self) -> Path: ...
    @property
    def tick_seconds(self) -> float: ...


@dataclass(frozen=True, slots=True)
class FeedOptions:
    backlog: int = 256
    """Frames held for one subscriber (live, snapshots, replayed ticks and answers alike) past
    which it is closed as a slow consumer."""
    replay_reads: int = 2
    """Replay chunks read from the store at once, whatever the number of subscribers."""
    heartbeat_seconds: float = HEARTBEAT_SECONDS
    """Silence on a connection after which it gets a heartbeat."""
    close_timeout: float = 5.0
    """How long a closed slow consumer's socket may take to drain before it is cut off."""
    ping_seconds: float = 20.0
    """The server's websocket keepalive (a ping this often, unanswered this long: a slow
    consumer); uvicorn sends the pings (server.py), this says so in the AsyncAPI document."""
    ws_path: str = "/ws/market"
    asyncapi_path: str = "/schema/asyncapi.json"
    """Beside litestar's default OpenAPI document (`/schema/openapi.json`)."""


class Feed:
    def __init__(self, db: Database, settings: FeedSettings, options: FeedOptions) -> None:
        self.options = options
        self.specs = load_catalog()
        self._settings = settings
        self._store = FeedReader(db)
        self._hub = Hub()
        self._islands: dict[str, tuple[int, datetime]] = {}
        """Every island that has ticked: its latest tick and that tick's time."""
        self._history = HistoryExporter(db, settings.data_dir / "history")
        self._history_due: dict[str, datetime] = {}
        self._history_kick = asyncio.Event()
        self._sql_ticks: asyncio.Queue[tuple[FeedSpec, str, int]] = asyncio.Queue()
        self._replay_reads = asyncio.Semaphore(options.replay_reads)
        self._floors: dict[tuple[str, str], tuple[int, int]] = {}
        """(feed, island) -> (latest tick, oldest tick a replay may start from at that tick)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._asyncapi = document(self.specs, options.ws_path, backlog=options.backlog,
                                  ping_seconds=options.ping_seconds)
        self.route_handlers: list[BaseRouteHandler] = [
            *(self._latest_handler(spec) for spec in self.specs),
            self._series_handler(),
            self._asyncapi_handler(),
            self._socket_handler(),
        ]

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        for island, tick, time in await asyncio.to_thread(self._store.query, "feed_islands", {}):
            self._note(island, tick, time)
        self._tasks = [
            asyncio.create_task(self._heartbeats(), name="feed-heartbeats"),
            asyncio.create_task(self._sql_feeds(), name="feed-sql"),
            asyncio.create_task(self._export_history(), name="feed-history"),
        ]

    async def stop(self) -> None:
        """Stop the background tasks; an export in progress finishes its current run first."""
        self._stopping = True
        self._history_kick.set()
        for task in self._tasks[:2]:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    @property
    def subscribers(self) -> int:
        """Open websocket connections."""
        return len(self._hub.connections)

    # -- publishing ----------------------------------------------------------------------------

    def on_tick(self, event: TickCommitted) -> None:
        """Called on the event loop after a tick commits; never blocks, never awaits."""
        self._note(event.island, event.tick, event.time)
        for spec in self.specs:
            if spec.event is None:
                self._sql_ticks.put_nowait((spec, event.island, event.tick))
                continue
            source = getattr(event, spec.event)
            data = {field: source[field] for field in spec.fields}
            self._hub.publish(
                Row(spec.channel_for(event.island), event.island, event.tick, event.time, data)
            )
        due = self._history_due.get(event.island)
        if due is None or event.time >= due:
            self._history_due[event.island] = floor_time(event.time, WINDOW) + WINDOW
            self._history_kick.set()

    def _note(self, island: str, tick: int, time: datetime) -> None:
        known = self._islands.get(island)
        if known is None or tick > known[0]:
            self._islands[island] = (tick, time)

    async def _sql_feeds(self) -> None:
        """Feeds without a TickCommitted attribute: read each committed tick back, in order."""
        while True:
            spec, island, tick = await self._sql_ticks.get()
            for row in await asyncio.to_thread(self._store.rows, spec, island, tick, tick):
                self._hub.publish(row)

    async def _heartbeats(self) -> None:
        loop = asyncio.get_running_loop()
        quiet = self.options.heartbeat_seconds
        while True:
            await asyncio.sleep(quiet / 5)
            now = loop.time()
            beat = None
            for subscriber in list(self._hub.connections):
                idle = subscriber.idle_since
                if idle is not None and now - idle >= quiet:
                    beat = beat or message_frame({
                        "type": "heartbeat", "time": rfc3339(datetime.now(UTC)),
                        "ticks": {island: tick for island, (tick, _) in self._islands.items()},
                    })
                    subscriber.offer(beat)

    async def _export_history(self) -> None:
        while not self._stopping:
            try:
                await asyncio.to_thread(self._history.run)
            except Exception:
                # Disk full, a bad file...: the tick goes on; the next window retries.
                log.exception("history: export failed")
            await self._history_kick.wait()
            self._history_kick.clear()

    # -- reading -------------------------------------------------------------------------------

    def _island(self, island: str | None) -> tuple[int, datetime]:
        if not island:
            raise Invalid("island", "is required")
        known = self._islands.get(island)
        if known is None:
            raise NotFound(f"no island {island!r} has ticked", island=island)
        return known

    async def latest(self, spec: FeedSpec, island: str) -> Row:
        """The newest row of a feed for one island: from memory, else from the store once."""
        tick, _ = self._island(island)
        row = self._hub.latest.get(spec.channel_for(island))
        if row is not None:
            return row
        rows = await asyncio.to_thread(self._store.rows, spec, island, tick, tick)
        if not rows:
            raise NotFound(f"no {spec.name} for island {island!r} yet", island=island)
        return self._hub.remember(rows[0])

    def _resolve(self, channel: str) -> tuple[FeedSpec, str]:
        for spec in self.specs:
            island = spec.island_of(channel)
            if island is not None:
                self._island(island)
                return spec, island
        names = ", ".join(spec.channel for spec in self.specs)
        raise Invalid("channels", f"unknown channel {channel!r}; channels are {names}",
                      channel=channel)

    # -- websocket -----------------------------------------------------------------------------

    async def serve(self, socket: WebSocket[Any, Any, Any]) -> None:
        wire = wire_of(socket.scope)
        if wire is None:
            # Frames go straight to the transport (feed/wire.py): only that server can serve.
            log.error("feed: the server does not expose the websocket transport; run it with "
                      "burstmarket.feed.wire.FeedWebSocketProtocol")
            await socket.close(1011, "server misconfigured")
            return
        await socket.accept()
        subscriber = Subscriber(wire, self.options.backlog, self._read_replay)
        self._hub.attach(subscriber)
        reader = asyncio.create_task(self._read(socket, subscriber))
        failed = asyncio.create_task(subscriber.failed.wait())
        try:
            await asyncio.wait({reader, failed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._hub.detach(subscriber)
            reader.cancel()
            failed.cancel()
            await asyncio.gather(reader, failed, return_exceptions=True)
        if subscriber.close_code == SLOW_CONSUMER:
            peer = socket.client
            where = f"{peer.host}:{peer.port}" if peer else "-"
            log.info("feed: closing a slow consumer %s: %s", where, subscriber.close_why)
            metrics.SLOW_CONSUMER_CLOSES.inc()
            subscriber.close(SLOW_CONSUMER, "slow-consumer", self.options.close_timeout)

    async def _read(self, socket: WebSocket[Any, Any, Any], subscriber: Subscriber) -> None:
        while not subscriber.closed:  # frames queued by a peer that has gone are not worked on
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = cast(dict[str, Any], message)
            raw = data.get("text") or data.get("bytes") or b""
            try:
                frame = parse_frame(raw)
            except MarketError as error:
                self._refuse(subscriber, error, request_id(raw))
                continue
            try:
                await self._handle(subscriber, frame)
            except MarketError as error:
                self._refuse(subscriber, error, frame.id)

    @staticmethod
    def _refuse(subscriber: Subscriber, error: MarketError, answering: str | int | None) -> None:
        log_refusal(error)
        subscriber.offer(error_frame(error, answering))

    async def _handle(self, subscriber: Subscriber, frame: ClientFrame) -> None:
        if isinstance(frame, Ping):
            subscriber.offer(reply_frame("pong", frame.id, time=rfc3339(datetime.now(UTC))))
        elif isinstance(frame, Subscribe):
            await self._subscribe(subscriber, frame)
        else:
            channels = list(dict.fromkeys(frame.channels))
            for channel in channels:
                self._hub.leave(subscriber, channel)
            subscriber.offer(reply_frame("unsubscribed", frame.id, channels=channels))

    async def _subscribe(self, subscriber: Subscriber, frame: Subscribe) -> None:
        """All channels or none: every channel and `from_tick` is checked before joining. A
        channel subscribed again is started again (its replay replaced, never added)."""
        channels = list(dict.fromkeys(frame.channels))
        targets = [(channel, *self._resolve(channel)) for channel in channels]
        for _, spec, island in targets:
            latest = await self.latest(spec, island)
            if frame.from_tick is not None:
                await self._check_from_tick(spec, island, latest, frame.from_tick)
        if subscriber.closed:
            return
        for channel, _, _ in targets:
            self._hub.join(subscriber, channel)
        subscriber.offer(reply_frame("subscribed", frame.id, channels=channels))
        for channel, _, _ in targets:
            subscriber.start(self._hub.latest[channel], frame.from_tick)

    async def _read_replay(self, channel: str, from_tick: int, to_tick: int) -> list[Row]:
        """One chunk of a replay from the store; few at once, so replays never crowd out the
        store's other readers."""
        spec, island = self._resolve(channel)
        async with self._replay_reads:
            return await asyncio.to_thread(self._store.rows, spec, island, from_tick, to_tick)

    async def _check_from_tick(self, spec: FeedSpec, island: str, latest: Row, tick: int) -> None:
        newest, _ = self._islands[island]
        window = timedelta(seconds=spec.replay_seconds)
        known = self._floors.get((spec.name, island))
        if known is not None and known[0] == latest.tick:
            floor = known[1]
        else:
            floor = await asyncio.to_thread(self._store.replay_floor, island, latest, window)
            self._floors[spec.name, island] = (latest.tick, floor)
        if not floor <= tick <= newest + 1:
            raise Invalid(
                "from_tick",
                f"must be between {floor} (replay window of {spec.replay_seconds} s) and "
                f"{newest + 1}; resubscribe without from_tick for a fresh snapshot",
                island=island, earliest_tick=floor, next_tick=newest + 1,
            )

    # -- route handlers ------------------------------------------------------------------------

    def _latest_handler(self, spec: FeedSpec) -> BaseRouteHandler:
        trim = spec.trim

        async def handler(island: IslandQuery) -> Prepared:
            return (await self.latest(spec, island)).response()

        async def trimmed(island: IslandQuery, count: int | None = None) -> Prepared:
            assert trim is not None
            cut = None if count is None else (trim.field, count)
            return (await self.latest(spec, island)).response(cut)

        if trim is not None:  # the parameter's name is the catalog's (feeds/<name>.toml)
            trimmed.__annotations__["count"] = Annotated[int | None, QueryParameter(
                name=trim.param, ge=0, schema_extra={"minimum": 0},  # ge: checked, not listed
                description=f"keep the first n of `{trim.field}`")]
        return get(spec.path, name=f"market-{spec.name}", summary=f"Latest {spec.name}",
                   description=spec.description, responses=refusals(Invalid, NotFound),
                   tags=[MARKET_DATA],
                   operation_class=documented(answer=_answer(spec)),
                   )(handler if trim is None else trimmed)

    def _series_handler(self) -> BaseRouteHandler:
        history = self._settings.data_dir / "history"
        tick_seconds = self._settings.tick_seconds

        async def handler(
            island: IslandQuery,
            interval: Annotated[series.Interval, QueryParameter()] = "1h",
            start: TimeQuery = None,
            end: TimeQuery = None,
            limit: Annotated[int, QueryParameter(ge=1, le=series.MAX_LIMIT,
                                                 description="buckets")] = series.DEFAULT_LIMIT,
            output: Annotated[series.Format, QueryParameter(name="format")] = "json",
        ) -> Response[list[Candle]]:
            _, latest = self._island(island)
            query = series.SeriesQuery.of(island, latest, interval, limit, output, start, end)

            def run() -> bytes:
                table = series.candles(self._store, history, query, tick_seconds)
                return series.render(table, query.format)

            body = await asyncio.to_thread(run)
            return Response(body, media_type=series.FORMATS[query.format])  # type: ignore[arg-type]

        also = {
            series.FORMATS["csv"]: "the candles as CSV: " + ",".join(series.COLUMNS),
            series.FORMATS["arrow"]: "the candles as an Arrow IPC stream (exact decimals)",
        }
        return get("/api/market/series", name="market-series", summary="Candles",
                   description="Candles of the per-tick vwap.",
                   responses=refusals(Invalid, NotFound, StoreUnavailable), tags=[MARKET_DATA],
                   operation_class=documented(also=also))(handler)

    def _asyncapi_handler(self) -> BaseRouteHandler:
        document = self._asyncapi

        async def handler(request: Request[Any, Any, Any]) -> Response[bytes]:
            host = request.headers.get("host") or request.url.netloc
            secure = request.url.scheme == "https"
            body = msgspec.json.encode({**document, "servers": servers(host, secure)})
            return Response(body, media_type=_JSON)

        return get(self.options.asyncapi_path, name="asyncapi", summary="AsyncAPI document",
                   include_in_schema=False)(handler)

    def _socket_handler(self) -> BaseRouteHandler:
        async def handler(socket: WebSocket[Any, Any, Any]) -> None:
            await self.serve(socket)

        return websocket(self.options.ws_path, name="market-feed")(handler)


def _answer(spec: FeedSpec) -> dict[str, Any]:
    """The JSON Schema of a feed's REST answer: `{island, tick, time, **data}`."""
    properties: dict[str, Any] = {
        "island": {"type": "string"},
        "tick": {"type": "integer", "description": "gap-free per island"},
        "time": {"type": "string", "format": "date-time"},
        **spec.schema,
    }
    return {"type": "object", "properties": properties, "required": list(properties)}


def build_feed(db: Database, settings: FeedSettings, options: FeedOptions | None = None) -> Feed:
    """The market-data layer for `create_app`: mount `route_handlers`, call `on_tick` after each
    commit, and `start()` / `stop()` it in the app's lifespan."""
    return Feed(db, settings, options or FeedOptions())
