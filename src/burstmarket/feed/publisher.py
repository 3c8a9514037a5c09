"""The market's side of the bus: every channel's stream kept up to the store.

The feed hands over each row it publishes (`offer`, on the event loop, never waiting); one task
sends what has queued in one round trip, so a tick costs the market one write per channel
whatever the edges hold. A stream only ever gets its next tick: a row past a gap (a tick the bus
missed) is preceded by the missing ticks read back from the store.

While Redis is away the market goes on ticking and committing; the rows meanwhile are dropped
(the store has them). Once Redis answers again, every channel of every island this process has
ticked is brought up to its latest tick from the store (`_sync`), at most a replay window's
worth, then live rows flow again. The same sync runs at start, so a process taking over an
island (or one restarted after a crash) first publishes whatever its store holds past the bus.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable

from burstmarket.feed.bus import Bus, RedisError
from burstmarket.feed.catalog import FeedSpec
from burstmarket.feed.messages import Row

log = logging.getLogger(__name__)

RETRY_SECONDS = 0.5
"""How often a market that lost Redis tries it again."""

ReadRows = Callable[[FeedSpec, str, int, int], Awaitable[list[Row]]]
"""(feed, island, from_tick, to_tick) -> the store's rows, in tick order."""


class BusPublisher:
    def __init__(
        self,
        bus: Bus,
        specs: tuple[FeedSpec, ...],
        tick_seconds: float,
        read: ReadRows,
        latest: Callable[[], dict[str, int]],
    ) -> None:
        self._bus = bus
        self._specs = {spec.name: spec for spec in specs}
        self._keep = {
            spec.name: math.ceil(spec.replay_seconds / tick_seconds) + 1 for spec in specs
        }
        """Stream length: the ticks of the feed's replay window."""
        self._read = read
        self._latest = latest
        """island -> the latest tick committed (every island this process ticks)."""
        self._queue: asyncio.Queue[tuple[FeedSpec, Row]] = asyncio.Queue()
        self._tops: dict[str, int] = {}
        """channel -> the newest tick on the bus, as far as this process knows."""
        self._synced = False
        self._away = False
        self.stopping = False

    def offer(self, spec: FeedSpec, row: Row) -> None:
        self._queue.put_nowait((spec, row))

    async def run(self) -> None:
        while not self.stopping:
            try:
                if not self._synced:
                    await self._sync()
                    self._synced = True
                    if self._away:
                        log.info("bus: Redis answers again; what it missed is republished")
                    self._away = False
                first = await self._queue.get()  # the stop's cancellation ends the wait
                batch = [first]
                while not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                await self._send(batch)
            except RedisError as exc:
                if not self._away:
                    log.warning(
                        "bus: Redis does not answer (%s); ticks go on and are "
                        "republished from the store when it is back",
                        exc,
                    )
                self._away = True
                self._synced = False
                self._tops.clear()
                while not self._queue.empty():  # the store has them: _sync sends them again
                    self._queue.get_nowait()
                await asyncio.sleep(RETRY_SECONDS)

    async def _sync(self) -> None:
        """Every channel of every island ticked here, up to its latest tick from the store."""
        for island, tick in self._latest().items():
            for spec in self._specs.values():
                channel = spec.channel_for(island)
                keep = self._keep[spec.name]
                top = await self._bus.top(channel) or 0  # ticks count from 1
                if top < tick:
                    rows = await self._read(spec, island, max(top + 1, tick - keep + 1), tick)
                    await self._bus.append((row, keep) for row in rows)
                self._tops[channel] = max(top, tick)

    async def _send(self, batch: list[tuple[FeedSpec, Row]]) -> None:
        out: list[tuple[Row, int]] = []
        for spec, row in batch:
            top = self._tops.get(row.channel)
            if top is None:  # an island new since the sync
                top = await self._bus.top(row.channel) or 0
            if row.tick <= top:
                continue
            keep = self._keep[spec.name]
            if row.tick > top + 1:  # the bus missed ticks: the store's first
                start = max(top + 1, row.tick - keep + 1)
                out += [
                    (missed, keep)
                    for missed in await self._read(spec, row.island, start, row.tick - 1)
                ]
            out.append((row, keep))
            self._tops[row.channel] = row.tick
        await self._bus.append(out)
