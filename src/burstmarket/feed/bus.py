"""The feed on Redis: one stream per channel, between the market processes and the feed edges.

Each channel (`stats:ref`, ...) is the stream `burstmarket:feed:<channel>`; an entry is one tick
of the channel, its ID `<tick>-1`, its one field `update` the `update` message exactly as the
market encoded it (docs/api.md "The feed"). So an edge replays `from_tick` with XRANGE by tick,
follows every channel with one XREAD from the last tick it has, and writes the market's own bytes
to its subscribers. A stream is trimmed to its feed's replay window (XADD MAXLEN), and the set
`burstmarket:feed` names every channel ever published, for edges to find new islands.

Stream IDs only grow, so a tick added twice (a market republishing what the bus missed, two
processes racing) is refused by Redis itself and ignored here: a stream never holds a tick twice
nor goes backwards.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError, ResponseError

from burstmarket.feed.messages import Row

STREAM_PREFIX = "burstmarket:feed:"
CHANNELS = "burstmarket:feed"
"""The set of every channel published."""
_UPDATE = b"update"
_STALE = "equal or smaller than the target stream top item"
"""Redis's answer to an XADD whose ID is not past the stream's last: that tick is there."""
CONNECT_SECONDS = 2.0
READ_SECONDS = 10.0
"""A Redis answer not read within this is a lost Redis (a blocking read waits at most a second
for the answer to start, feed/edge.py)."""
STOP_SECONDS = 3.0

__all__ = ["Bus", "RedisError", "stop"]


def stream(channel: str) -> str:
    return STREAM_PREFIX + channel


class Bus:
    """One process's connection to the bus (the redis package's asyncio client and pool: it
    reconnects by itself once Redis answers again; every call raises RedisError meanwhile)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.redis = redis.Redis.from_url(
            url,
            socket_connect_timeout=CONNECT_SECONDS,
            socket_timeout=READ_SECONDS,
            health_check_interval=10,
        )

    async def close(self) -> None:
        with contextlib.suppress(RedisError, TimeoutError):
            await asyncio.wait_for(self.redis.aclose(), STOP_SECONDS)

    # -- the market's side ---------------------------------------------------------------------

    async def append(self, rows: Iterable[tuple[Row, int]]) -> None:
        """Add each (row, stream length to keep) in order, in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        channels = set()
        for row, keep in rows:
            pipe.xadd(
                stream(row.channel),
                {_UPDATE: row.update_json},
                id=f"{row.tick}-1",
                maxlen=keep,
                approximate=True,
            )
            channels.add(row.channel)
        if not channels:
            return
        pipe.sadd(CHANNELS, *channels)
        for result in await pipe.execute(raise_on_error=False):
            if isinstance(result, ResponseError) and _STALE in str(result):
                continue  # that tick is on the bus already
            if isinstance(result, Exception):
                raise result

    async def top(self, channel: str) -> int | None:
        """The newest tick of a channel on the bus (None: none)."""
        entries = _entries(await self.redis.xrevrange(stream(channel), count=1))
        return entries[0][0] if entries else None

    # -- the edges' side -----------------------------------------------------------------------

    async def channels(self) -> set[str]:
        names: Any = await self.redis.smembers(CHANNELS)
        return {name.decode() for name in names}

    async def oldest(self, channel: str) -> int | None:
        entries = _entries(await self.redis.xrange(stream(channel), count=1))
        return entries[0][0] if entries else None

    async def latest(self, channel: str, island: str) -> Row | None:
        entries = _entries(await self.redis.xrevrange(stream(channel), count=1))
        return Row.from_update(channel, island, entries[0][1]) if entries else None

    async def rows(self, channel: str, island: str, from_tick: int, to_tick: int) -> list[Row]:
        """The channel's ticks from_tick..to_tick that the bus holds, in tick order."""
        answer = await self.redis.xrange(stream(channel), f"{from_tick}-0", f"{to_tick}-1")
        return [Row.from_update(channel, island, update) for _, update in _entries(answer)]

    async def follow(
        self, after: dict[str, int], island_of: Callable[[str], str], block_ms: int, count: int
    ) -> list[Row]:
        """What the bus holds past `after` (channel -> the last tick had), waiting up to
        `block_ms` for something new, at most `count` ticks a channel, each channel in order."""
        if not after:  # nothing published yet: wait as a read would
            await asyncio.sleep(block_ms / 1000)
            return []
        answer: Any = await self.redis.xread(
            {stream(channel): f"{tick}-1" for channel, tick in after.items()},
            count=count,
            block=block_ms,
        )
        found = []
        for key, entries in answer or []:
            channel = key.decode()[len(STREAM_PREFIX) :]
            island = island_of(channel)
            found += [Row.from_update(channel, island, update) for _, update in _entries(entries)]
        return found


def _entries(answer: Any) -> list[tuple[int, bytes]]:
    """A stream read's entries as (tick, update message)."""
    return [(int(entry_id.split(b"-", 1)[0]), fields[_UPDATE]) for entry_id, fields in answer or []]


async def stop(task: asyncio.Task[None] | None) -> None:
    """Cancel a loop over the bus and wait for it, STOP_SECONDS at most. A cancellation that
    lands while redis-py reconnects can be lost (seen with an edge whose event loop had been
    blocked past the read timeout): the loops also check a flag of their own, and a stop never
    hangs on one."""
    if task is None:
        return
    task.cancel()
    await asyncio.wait({task}, timeout=STOP_SECONDS)
