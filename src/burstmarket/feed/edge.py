"""A feed edge (`burstmarket feed --bus redis://…`): the feed's websocket, latest-row endpoints
and AsyncAPI document (feed/service.py, the very ones the market serves), fed from the bus
(feed/bus.py) instead of a store. No DuckDB, no tenant or operator endpoint.

One task follows every channel on the bus with one blocking XREAD from the last tick it has,
and publishes each tick to the edge's hub: the edge's work per tick is one read and one fan-out
of the market's own frame, whatever the market does; the market's is one write per channel,
whatever the edges hold. New channels (an island's first tick, a market process joining) are
found in the bus's set of channels.

An edge that loses Redis keeps its sockets open and says it is not ready (`/readyz`); once
Redis answers again it reads on from the last tick it had, so its subscribers get every tick
missed meanwhile, in order, then live. `from_tick` replays from the bus's history (the replay
window of each feed); past it, the same refusal the market gives.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from burstmarket.feed.bus import Bus, RedisError, stop
from burstmarket.feed.catalog import FeedSpec
from burstmarket.feed.messages import Row
from burstmarket.feed.service import FeedOptions, FeedService

log = logging.getLogger(__name__)

BLOCK_MS = 1000
"""How long one XREAD waits for a new tick (then new channels are looked for)."""
COUNT = 256
"""Ticks of one channel taken in one read (a catch-up after an outage takes several)."""
RETRY_SECONDS = 0.5
"""How often an edge that lost Redis tries it again."""


class BusSource:
    """The edge's past rows: the bus's history. A read while Redis is away waits for it (the
    subscriber gets its replay once Redis is back, as the live ticks)."""

    def __init__(self, bus: Bus) -> None:
        self._bus = bus

    async def rows(self, spec: FeedSpec, island: str, from_tick: int, to_tick: int) -> list[Row]:
        channel = spec.channel_for(island)
        while True:
            try:
                return await self._bus.rows(channel, island, from_tick, to_tick)
            except RedisError:
                await asyncio.sleep(RETRY_SECONDS)

    async def replay_floor(self, spec: FeedSpec, island: str, latest: Row) -> int:
        """The oldest tick the bus holds: its stream is trimmed to the feed's replay window."""
        while True:
            try:
                oldest = await self._bus.oldest(spec.channel_for(island))
            except RedisError:
                await asyncio.sleep(RETRY_SECONDS)
                continue
            return latest.tick + 1 if oldest is None else oldest

    async def exists(self, island: str) -> bool:
        """An edge knows the islands on the bus, which are those that have ticked: any other
        is `unknown-island` here (docs/api.md "Beyond one machine")."""
        return False


class Edge:
    def __init__(self, url: str, options: FeedOptions) -> None:
        self.bus = Bus(url)
        self.service = FeedService(BusSource(self.bus), options)
        self.ready = False
        """Following the bus now (else Redis is away, or has not answered yet)."""
        self.detail = "not connected to the bus yet"
        self._after: dict[str, int] = {}
        """channel -> the last tick published here."""
        self._islands: dict[str, str] = {}
        """channel -> its island."""
        self._specs: dict[str, FeedSpec] = {}
        """channel -> its feed."""
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self.service.start()
        self._task = asyncio.create_task(self._follow(), name="edge-follow")

    async def stop(self) -> None:
        self._stopping = True
        await stop(self._task)
        await self.service.stop()
        await self.bus.close()

    async def _follow(self) -> None:
        loop = asyncio.get_running_loop()
        look_again = 0.0
        while not self._stopping:
            try:
                if loop.time() >= look_again:
                    await self._find_channels()
                    look_again = loop.time() + BLOCK_MS / 1000
                    self._up()
                rows = await self.bus.follow(
                    self._after, self._islands.__getitem__, BLOCK_MS, COUNT
                )
                for row in rows:
                    self._publish(row)
            except RedisError as exc:
                if self.ready:
                    log.warning(
                        "edge: lost the bus (%s); sockets stay open, the missed ticks "
                        "follow when it is back",
                        exc,
                    )
                self.ready = False
                self.detail = f"the bus does not answer: {exc}"
                look_again = 0.0
                await asyncio.sleep(RETRY_SECONDS)

    def _up(self) -> None:
        if not self.ready:
            log.info("edge: following %d channels on the bus %s", len(self._after), self.bus.url)
        self.ready = True
        self.detail = f"following {len(self._after)} channels"

    async def _find_channels(self) -> None:
        for channel in sorted(await self.bus.channels() - self._after.keys()):
            spec = next((s for s in self.service.specs if s.island_of(channel)), None)
            if spec is None:
                continue  # a feed this edge's version does not know
            island = spec.island_of(channel)
            assert island is not None
            latest = await self.bus.latest(channel, island)
            if latest is not None:
                self._islands[channel] = island
                self._specs[channel] = spec
                self._publish(latest)

    def _publish(self, row: Row) -> None:
        self._after[row.channel] = row.tick
        self.service.note(row.island, row.tick, datetime.fromisoformat(row.time))
        self.service.publish(row, self._specs[row.channel])
