"""How market time moves under the simulation, and the loop that steps the tenants with it.

- `RealTime`: the service's own scheduler ticks on the wall clock; the tenants act once per
  tick interval, at wall-clock time.
- `Driven`: the service runs on the manual clock and the simulation ticks it
  (`POST /api/admin/ticks`), each tick `period` wall seconds after the last one began: a
  faster market for a demo (`serve --speed`), or no waiting at all (`simulate`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from burstmarket.client import OperatorClient, TickReport
from burstmarket.simulation.world import World


class Pace(Protocol):
    interval: timedelta

    async def first(self) -> datetime:
        """Market time when the simulation starts."""
        ...

    async def next(self) -> datetime:
        """Let one tick of market time pass; market time after it."""
        ...


class RealTime:
    def __init__(self, tick_seconds: float) -> None:
        self.interval = timedelta(seconds=tick_seconds)

    async def first(self) -> datetime:
        return datetime.now(UTC)

    async def next(self) -> datetime:
        await asyncio.sleep(self.interval.total_seconds())
        return datetime.now(UTC)


class Driven:
    def __init__(
        self,
        operator: OperatorClient,
        tick_seconds: float,
        period: float,
        on_tick: Callable[[TickReport], None] | None = None,
    ) -> None:
        self.interval = timedelta(seconds=tick_seconds)
        self.operator = operator
        self.period = period
        self.on_tick = on_tick
        self._started = 0.0

    async def first(self) -> datetime:
        return await self._tick()

    async def next(self) -> datetime:
        if self.period > 0:
            await asyncio.sleep(max(0.0, self._started + self.period - time.monotonic()))
        return await self._tick()

    async def _tick(self) -> datetime:
        self._started = time.monotonic()
        stats = await self.operator.ticks(1)
        if self.on_tick is not None:
            self.on_tick(stats)
        return stats.time


async def run(
    world: World | None,
    pace: Pace,
    duration: timedelta | None = None,
    ready: Callable[[World], None] | None = None,
) -> datetime:
    """Step the world once per tick for `duration` of market time (forever if None); the
    market time at the end. Without a world only the pace runs (a faster clock, no tenants).
    `ready` is called once the world's tenants exist."""
    if world is not None:
        await world.setup()  # islands and clusters first, so the first tick is every island's
        if ready is not None:
            ready(world)
    now = await pace.first()
    until = None if duration is None else now + duration
    if world is not None:
        await world.start(now)
    while until is None or now < until:
        if world is not None:
            await world.step(now, pace.interval)
        now = await pace.next()
    return now
