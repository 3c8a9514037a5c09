"""What every process serving the feed serves: `/ws/market`, the latest-row endpoints and the
AsyncAPI document, over a hub of channels (feed/hub.py) fed by `publish`.

Where the rows come from is the caller's: the market's feed (feed/feed.py) publishes each
committed tick and replays from its store; a feed edge (feed/edge.py) publishes what it reads
from the bus and replays from the bus's history. Both hand a `Source` for the reads, so the
protocol, the refusals and the document are one and the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from typing import Annotated, Any, Protocol, cast

import msgspec
from litestar import Request, Response, WebSocket, get, websocket
from litestar.handlers import BaseRouteHandler
from litestar.params import QueryParameter

from burstmarket import metrics
from burstmarket.apidoc import MARKET_DATA, documented, refusals
from burstmarket.contract import ClusterTickView
from burstmarket.errors import Invalid, MarketError, NotTickedYet, UnknownIsland, echo
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
from burstmarket.feed.private import Authenticate, ClusterChannels, is_private
from burstmarket.feed.protocol import (
    CLUSTER_CHANNEL,
    Auth,
    ClientFrame,
    Ping,
    Snapshot,
    Subscribe,
    Unsubscribe,
    parse_frame,
    request_id,
)
from burstmarket.feed.wire import wire_of
from burstmarket.market.refusals import log_refusal

log = logging.getLogger(__name__)

_JSON = "application/json"
IDLE_POLL_SECONDS = 0.02
"""How often `caught_up` looks for a first subscriber."""
IslandQuery = Annotated[str, QueryParameter(description="the island's id (required)")]


class Source(Protocol):
    """Where a feed's past rows are read: the market's store, or the bus."""

    async def rows(self, spec: FeedSpec, island: str, from_tick: int, to_tick: int) -> list[Row]:
        """The feed's rows of ticks from_tick..to_tick of one island, in tick order."""
        ...

    async def replay_floor(self, spec: FeedSpec, island: str, latest: Row) -> int:
        """The oldest tick `from_tick` may name now that `latest` is the newest."""
        ...

    async def exists(self, island: str) -> bool:
        """Whether the island exists (asked only of an island that has not ticked here)."""
        ...


@dataclass(frozen=True, slots=True)
class FeedOptions:
    backlog: int = 256
    """Frames held for one subscriber (live, snapshots, replayed ticks and answers alike) past
    which it is closed as a slow consumer."""
    replay_reads: int = 2
    """Replay chunks read at once, whatever the number of subscribers."""
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


class FeedService:
    def __init__(
        self, source: Source, options: FeedOptions, authenticate: Authenticate | None = None
    ) -> None:
        """`authenticate`: how a cluster token is checked, for the clusters' own channels
        (feed/private.py); without it (a feed edge) they are refused."""
        self.options = options
        self.specs = load_catalog()
        self._deltas = {spec.name: spec.delta for spec in self.specs if spec.delta is not None}
        self._source = source
        self._hub = Hub()
        self.clusters = ClusterChannels(self._hub, authenticate)
        self.islands: dict[str, tuple[int, datetime]] = {}
        """Every island that has ticked: its latest tick and that tick's time."""
        self._replay_reads = asyncio.Semaphore(options.replay_reads)
        self._floors: dict[tuple[str, str], tuple[int, int]] = {}
        """(feed, island) -> (latest tick, oldest tick a replay may start from at that tick)."""
        self._heartbeats: asyncio.Task[None] | None = None
        self._asyncapi = document(
            self.specs,
            options.ws_path,
            backlog=options.backlog,
            ping_seconds=options.ping_seconds,
            private=self.clusters.served,
        )
        self.route_handlers: list[BaseRouteHandler] = [
            *(self._latest_handler(spec) for spec in self.specs),
            self._asyncapi_handler(),
            self._socket_handler(),
        ]

    def start(self) -> None:
        self._heartbeats = asyncio.create_task(self._beat(), name="feed-heartbeats")

    async def stop(self) -> None:
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            await asyncio.gather(self._heartbeats, return_exceptions=True)

    @property
    def subscribers(self) -> int:
        """Open websocket connections."""
        return len(self._hub.connections)

    async def caught_up(self) -> None:
        """Return once some connection is on a channel and every connection has taken all it
        is owed: what a replay as fast as the clients read waits for before each tick
        (feed/replay.py)."""
        while True:
            connections = list(self._hub.connections)
            behind = next((s for s in connections if not s.caught_up), None)
            if behind is not None:
                await behind.catch_up()
            elif any(s.channels for s in connections):
                return
            else:  # nobody listens yet; a subscribe comes as a frame, which no event here says
                await asyncio.sleep(IDLE_POLL_SECONDS)

    # -- publishing ----------------------------------------------------------------------------

    def note(self, island: str, tick: int, time: datetime) -> None:
        known = self.islands.get(island)
        if known is None or tick > known[0]:
            self.islands[island] = (tick, time)

    def publish(self, row: Row, spec: FeedSpec) -> None:
        """A channel's new tick, to every subscriber of it; on the event loop, never waits. A
        feed with a delta sends it as the change since the channel's tick before, when that
        tick is the one known here (else whole: the first tick after a start)."""
        delta = self._deltas.get(spec.name)
        before = self._hub.latest.get(row.channel)
        if delta is not None and before is not None:
            row.follow(delta, before)
        self._hub.publish(row)

    def publish_clusters(self, views: Iterable[ClusterTickView]) -> None:
        """A tick's cluster rows, each to its own cluster's channel only (feed/private.py)."""
        self.clusters.publish(views)

    async def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        quiet = self.options.heartbeat_seconds
        while True:
            await asyncio.sleep(quiet / 5)
            now = loop.time()
            beat = None
            for subscriber in list(self._hub.connections):
                idle = subscriber.idle_since
                if idle is not None and now - idle >= quiet:
                    beat = beat or message_frame(
                        {
                            "type": "heartbeat",
                            "time": rfc3339(datetime.now(UTC)),
                            "ticks": {island: tick for island, (tick, _) in self.islands.items()},
                        }
                    )
                    subscriber.offer(beat)

    # -- reading -------------------------------------------------------------------------------

    async def island(self, island: str | None) -> tuple[int, datetime]:
        """The island's latest tick and its time; refused `unknown-island` for an island that
        does not exist (a mistyped id), `not-ticked-yet` for one that has no tick yet."""
        if not island:
            raise Invalid("island", "is required")
        known = self.islands.get(island)
        if known is not None:
            return known
        if await self._source.exists(island):
            raise NotTickedYet(f"island {island!r} has not ticked yet", island=island)
        raise UnknownIsland(f"there is no island {island!r}", island=island)

    async def latest(self, spec: FeedSpec, island: str) -> Row:
        """The newest row of a feed for one island: from memory when it is the island's latest
        tick, else from the source. A feed no tick carries (rates) is read back after the commit
        (feed/feed.py), so between the two the memory holds the tick before; the answer is the
        committed tick all the same, and never lags the tick an operator's call just ran."""
        tick, _ = await self.island(island)
        row = self._hub.latest.get(spec.channel_for(island))
        if row is not None and row.tick >= tick:
            return row
        rows = await self._source.rows(spec, island, tick, tick)
        if rows:
            return self._hub.remember(rows[0])
        if row is not None:  # an edge: the bus has this feed's row of the tick on its way
            return row
        raise NotTickedYet(f"no {spec.name} for island {island!r} yet", island=island)

    async def resolve(self, channel: str) -> tuple[FeedSpec, str]:
        """The feed and island a channel names (the island must have ticked)."""
        for spec in self.specs:
            island = spec.island_of(channel)
            if island is not None:
                await self.island(island)
                return spec, island
        names = ", ".join(spec.channel for spec in self.specs)
        if self.clusters.served:
            names += f", {CLUSTER_CHANNEL} (after auth)"
        raise Invalid(
            "channels", f"unknown channel {channel!r}; channels are {names}", channel=channel
        )

    # -- websocket -----------------------------------------------------------------------------

    async def serve(self, socket: WebSocket[Any, Any, Any]) -> None:
        wire = wire_of(socket.scope)
        if wire is None:
            # Frames go straight to the transport (feed/wire.py): only that server can serve.
            log.error(
                "feed: the server does not expose the websocket transport; run it with "
                "burstmarket.feed.wire.FeedWebSocketProtocol"
            )
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
        log_refusal(error, subscriber.cluster)
        subscriber.offer(error_frame(error, answering))

    async def _handle(self, subscriber: Subscriber, frame: ClientFrame) -> None:
        if isinstance(frame, Ping):
            subscriber.offer(reply_frame("pong", frame.id, time=rfc3339(datetime.now(UTC))))
        elif isinstance(frame, Subscribe):
            await self._subscribe(subscriber, frame)
        elif isinstance(frame, Snapshot):
            self._snapshot(subscriber, frame)
        elif isinstance(frame, Auth):
            cluster = self.clusters.authenticate(subscriber, frame.token)
            subscriber.offer(reply_frame("authenticated", frame.id, cluster=cluster))
        else:
            self._unsubscribe(subscriber, frame)

    def _unsubscribe(self, subscriber: Subscriber, frame: Unsubscribe) -> None:
        channels = list(dict.fromkeys(frame.channels))
        for channel in channels:
            self._hub.leave(subscriber, self.clusters.joined_as(subscriber, channel))
        subscriber.offer(reply_frame("unsubscribed", frame.id, channels=channels))

    async def _subscribe(self, subscriber: Subscriber, frame: Subscribe) -> None:
        """Each channel on its own (as Coinbase does): one `error` naming each channel refused
        (and one REFUSED line), then one `subscribed` listing those joined, if any. A channel
        subscribed again is started again (its replay replaced, never added)."""
        joining: list[str] = []
        keys: list[str] = []
        """What the hub knows each channel joined by (a cluster's own channel: feed/private.py)."""
        own = False
        for channel in dict.fromkeys(frame.channels):
            try:
                if is_private(channel):
                    key = self.clusters.check(subscriber, channel, frame.from_tick)
                    own = True
                else:
                    spec, island = await self.resolve(channel)
                    latest = await self.latest(spec, island)
                    if frame.from_tick is not None:
                        await self._check_from_tick(spec, island, latest, frame.from_tick)
                    key = channel
            except MarketError as error:
                error.figures.setdefault("channel", echo(channel))
                self._refuse(subscriber, error, frame.id)
                continue
            joining.append(channel)
            keys.append(key)
        if subscriber.closed or not joining:
            return
        for key in keys:
            self._hub.join(subscriber, key)
        subscriber.offer(reply_frame("subscribed", frame.id, channels=joining))
        if own:
            self.clusters.start(subscriber)
        for channel in joining:
            if is_private(channel):
                continue
            subscriber.start(self._hub.latest[channel], frame.from_tick)

    def _snapshot(self, subscriber: Subscriber, frame: Snapshot) -> None:
        """The latest tick of each channel asked for, whole, as a `snapshot` carrying the
        frame's `id`; the channel's updates go on from it (a replay under way ends there). A
        channel the connection is not subscribed to is refused, each with its own error."""
        for channel in dict.fromkeys(frame.channels):
            if channel not in subscriber.channels:
                error = Invalid("channels", f"not subscribed to {channel!r}", channel=channel)
                self._refuse(subscriber, error, frame.id)
                continue
            latest = self._hub.latest[channel]
            subscriber.start(latest, None, latest.snapshot_for(frame.id))

    async def _read_replay(self, channel: str, from_tick: int, to_tick: int) -> list[Row]:
        """One chunk of a replay; few at once, so replays never crowd out other readers. A feed
        with a delta reads the tick before the chunk too, so that each replayed update is the
        change since the tick before it (the replay's first update goes whole: feed/hub.py)."""
        spec, island = await self.resolve(channel)
        delta = spec.delta
        first = from_tick - 1 if delta is not None and from_tick > 0 else from_tick
        async with self._replay_reads:
            rows = await self._source.rows(spec, island, first, to_tick)
        if delta is None:
            return rows
        for before, row in pairwise(rows):
            row.follow(delta, before)
        return [row for row in rows if row.tick >= from_tick]

    async def _check_from_tick(self, spec: FeedSpec, island: str, latest: Row, tick: int) -> None:
        newest, _ = self.islands[island]
        known = self._floors.get((spec.name, island))
        if known is not None and known[0] == latest.tick:
            floor = known[1]
        else:
            floor = await self._source.replay_floor(spec, island, latest)
            self._floors[spec.name, island] = (latest.tick, floor)
        if not floor <= tick <= newest + 1:
            raise Invalid(
                "from_tick",
                f"must be between {floor} (replay window of {spec.replay_seconds} s) and "
                f"{newest + 1}; resubscribe without from_tick for a fresh snapshot",
                island=island,
                earliest_tick=floor,
                next_tick=newest + 1,
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
            trimmed.__annotations__["count"] = Annotated[
                int | None,
                QueryParameter(
                    name=trim.param,
                    ge=0,
                    schema_extra={"minimum": 0},  # ge: checked, not listed
                    description=f"keep the first n of `{trim.field}`",
                ),
            ]
        return get(
            spec.path,
            name=f"market-{spec.name}",
            summary=f"Latest {spec.name}",
            description=spec.description,
            responses=refusals(Invalid, UnknownIsland, NotTickedYet),
            tags=[MARKET_DATA],
            operation_class=documented(answer=_answer(spec)),
        )(handler if trim is None else trimmed)

    def _asyncapi_handler(self) -> BaseRouteHandler:
        document = self._asyncapi

        async def handler(request: Request[Any, Any, Any]) -> Response[bytes]:
            host = request.headers.get("host") or request.url.netloc
            secure = request.url.scheme == "https"
            found = servers(host, self.options.ws_path, secure)
            body = msgspec.json.encode({**document, "servers": found})
            return Response(body, media_type=_JSON)

        return get(
            self.options.asyncapi_path,
            name="asyncapi",
            summary="AsyncAPI document",
            include_in_schema=False,
        )(handler)

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
