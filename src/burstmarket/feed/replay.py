"""`burstmarket replay` (docs/feed.md "Replay"): `/ws/market` served from a recorded period of
the Parquet history, in the live protocol, with no store and no market.

The messages are the live ones by construction: the feed's own service (feed/service.py: the
hub, the protocol, the refusals, the message builders) serves them, and only where its rows
come from changes. A `Recording` loads the period's `ticks`, `ladder` and `cluster_rates` parts
into a DuckDB of the store's own schema in memory (as `burstmarket export` reads history, with
`Database(":memory:")`), so each feed's own SQL (feeds/*.toml `sql`, the queries the live
feed's `from_tick` replays with) reads them unchanged, through the live feed's FeedReader. A
`Replay` then publishes each recorded tick's row of every feed, in market-time order, as the
live feed publishes a committed tick (`FeedService.note`, then `publish`); a `from_tick` replay
reads the same rows, never past the tick the replay has reached.

Pace: `speed` recorded seconds per wall second, measured from the first tick (a tick late
because the machine was busy goes at once: the pace catches up, it does not drift), or, with
`speed=None`, as fast as the clients read: the next tick only once some connection has
subscribed and every connection has taken all it is owed (feed/service.py `caught_up`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from burstmarket.feed.catalog import FeedSpec
from burstmarket.feed.messages import Row
from burstmarket.feed.reader import FeedReader
from burstmarket.feed.service import FeedOptions, FeedService
from burstmarket.history.layout import parts_between
from burstmarket.store import Database

log = logging.getLogger(__name__)

FEED_TABLES = ("ticks", "ladder", "cluster_rates")
"""The history tables the feeds' SQL reads (sql/feed_*.sql), each loaded by
sql/replay_load_<table>.sql."""
CHUNK = 256
"""Ticks of one feed and island read from the recording at a time for publishing."""
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Tick:
    island: str
    tick: int
    time: datetime


class Recording:
    """A recorded period of a history directory (docs/history.md layout): every tick of
    `islands` with `start <= time < end`, held in memory in the store's own tables."""

    def __init__(
        self,
        history: Path,
        islands: Sequence[str],
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> None:
        first, last = start or EARLIEST, end or LATEST
        self.islands = tuple(islands)
        self._db = Database(":memory:")
        self.reader = FeedReader(self._db)
        for island in self.islands:
            for table in FEED_TABLES:
                files = [str(p.path) for p in parts_between(history, table, island, first, last)]
                if files:
                    params = {"island": island, "files": files, "start": first, "end": last}
                    self.reader.query(f"replay_load_{table}", params)
        self.ticks = [
            Tick(island, int(tick), time)
            for island, tick, time in self.reader.query("replay_schedule", {})
        ]
        """Every recorded tick, in the order it is replayed (market time, then island)."""

    def close(self) -> None:
        self._db.close()


class RecordSource:
    """The replay's past rows (feed/service.py `Source`): the recording's, never past the tick
    the replay has published of the island (`published`), as a live store holds no tick that
    has not committed yet."""

    def __init__(self, recording: Recording, published: Callable[[str], int | None]) -> None:
        self._recording = recording
        self._published = published

    async def rows(self, spec: FeedSpec, island: str, from_tick: int, to_tick: int) -> list[Row]:
        reached = self._published(island)
        last = to_tick if reached is None else min(to_tick, reached)
        if reached is None or last < from_tick:
            return []
        return await asyncio.to_thread(self._recording.reader.rows, spec, island, from_tick, last)

    async def replay_floor(self, spec: FeedSpec, island: str, latest: Row) -> int:
        window = timedelta(seconds=spec.replay_seconds)
        reader = self._recording.reader
        return await asyncio.to_thread(reader.replay_floor, island, latest, window)

    async def exists(self, island: str) -> bool:
        """An island of the recording that has not ticked yet in the replay is not-ticked-yet;
        any other is unknown."""
        return island in self._recording.islands


class Replay:
    """The feed service of a recording, and the task that publishes its ticks."""

    def __init__(self, recording: Recording, options: FeedOptions, speed: float | None) -> None:
        self.recording = recording
        self.speed = speed
        """Recorded seconds per wall second; None: as fast as the clients read."""
        self.service = FeedService(RecordSource(recording, self._published), options)
        self.specs = self.service.specs
        self.finished = asyncio.Event()
        """Set once the last recorded tick is published."""
        self._pending: dict[tuple[str, str], deque[Row]] = {}
        """(feed, island) -> rows read ahead for publishing, in tick order."""
        self._task: asyncio.Task[None] | None = None

    def _published(self, island: str) -> int | None:
        known = self.service.islands.get(island)
        return None if known is None else known[0]

    async def start(self) -> None:
        """Publish the record's opening ticks, then play the rest in a task: a client finds a
        channel to subscribe to from the first request the app serves."""
        self.service.start()
        ticks = self._order()
        opening = self._opening(ticks)
        for tick in ticks[:opening]:
            await self._publish(tick)
        self._task = asyncio.create_task(self._play(ticks[opening:]), name="replay")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.service.stop()
        self.recording.close()

    def _order(self) -> list[Tick]:
        """The ticks in the order they go out: by market time, but as fast as clients read,
        each island's first tick first (they go out before anyone reads, `_opening`)."""
        ticks = self.recording.ticks
        if self.speed is not None:
            return ticks
        firsts: dict[str, Tick] = {}
        for tick in ticks:
            firsts.setdefault(tick.island, tick)
        opening = set(firsts.values())
        return [*firsts.values(), *(tick for tick in ticks if tick not in opening)]

    def _opening(self, ticks: list[Tick]) -> int:
        """How many of `ticks` go out at the start: every island's first, as fast as clients
        read; else those of the first tick's time."""
        if self.speed is None:
            return len({tick.island for tick in ticks})
        return sum(1 for tick in ticks if tick.time == ticks[0].time)

    async def _play(self, ticks: list[Tick]) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        opening = self.recording.ticks[0].time if self.recording.ticks else EARLIEST
        for tick in ticks:
            if self.speed is not None:
                due = began + (tick.time - opening).total_seconds() / self.speed
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
            else:
                await self.service.caught_up()
            await self._publish(tick)
            await asyncio.sleep(0)  # let the sockets' frames in between two ticks
        self.finished.set()
        log.info(
            "replay: the record ends; %d ticks replayed, the feed stays up",
            len(self.recording.ticks),
        )

    async def _publish(self, tick: Tick) -> None:
        """A recorded tick's row of every feed, as the live feed publishes a committed tick."""
        rows = [(spec, await self._row(spec, tick)) for spec in self.specs]
        self.service.note(tick.island, tick.tick, tick.time)
        for spec, row in rows:
            if row is not None:
                self.service.publish(row, spec)

    async def _row(self, spec: FeedSpec, tick: Tick) -> Row | None:
        """The feed's row of a tick, read ahead `CHUNK` ticks at a time."""
        pending = self._pending.setdefault((spec.name, tick.island), deque())
        if not pending or pending[-1].tick < tick.tick:
            pending.clear()
            reader = self.recording.reader
            last = tick.tick + CHUNK - 1
            pending.extend(await asyncio.to_thread(reader.rows, spec, tick.island, tick.tick, last))
        while pending and pending[0].tick < tick.tick:
            pending.popleft()
        return pending.popleft() if pending and pending[0].tick == tick.tick else None
