"""The real clock's tick loop: one APScheduler job, every island once per interval.

The job never overlaps itself (max_instances=1); a run that could not start on time is
coalesced into the next one and the lateness is logged and counted, so a tick is never skipped
silently. The tick itself runs in a worker thread; listeners are called back here, on the event
loop. The loop also knows when each island last ticked on the wall clock: `overdue` is what
`/readyz` asks (api/health.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anyio.to_thread
from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from burstmarket import metrics
from burstmarket.market.market import Market
from burstmarket.store import store_fault

log = logging.getLogger(__name__)


class TickScheduler:
    def __init__(self, market: Market, interval_seconds: float) -> None:
        self.market = market
        self.interval = interval_seconds
        self._scheduler: Any = None
        self._last_start: float | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._ticked: dict[str, float] = {}
        """Island -> when (monotonic) it last committed a tick, or the loop started or first
        met it."""

    def start(self) -> None:
        scheduler = AsyncIOScheduler(timezone="UTC")
        scheduler.add_job(
            self._run,
            IntervalTrigger(seconds=self.interval, timezone="UTC"),
            id="tick",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,
        )
        scheduler.add_listener(self._on_missed, EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES)
        now = time.monotonic()
        self._ticked = dict.fromkeys(self.market.island_ids(), now)
        self._last_start = now  # the first run is due one interval from here
        scheduler.start()
        self._scheduler = scheduler

    async def stop(self) -> None:
        """No run starts any more, and the one under way ends (each of its ticks commits whole
        or not at all) before the store closes: shutting the scheduler down would cancel it
        midway, its tick still running in its thread."""
        if self._scheduler is None:
            return
        self._scheduler.pause()
        await asyncio.sleep(0)  # a run the scheduler has just begun is under way now
        await self._idle.wait()
        self._scheduler.shutdown(wait=False)
        self._scheduler = None

    def overdue(self, limit: float) -> dict[str, float]:
        """Every island whose last tick is more than `limit` wall-clock seconds old, with that
        age (an island that has not ticked since the start counts from the start)."""
        now = time.monotonic()
        return {island: now - at for island, at in self._ticked.items() if now - at > limit}

    def _on_missed(self, event: JobEvent) -> None:
        log.warning(
            "tick late: a run was due at %s while the previous one was still running "
            "(it runs as soon as that one ends)",
            getattr(event, "scheduled_run_time", "?"),
        )

    async def _run(self) -> None:
        self._idle.clear()
        try:
            await self._tick_every_island()
        finally:
            self._idle.set()

    async def _tick_every_island(self) -> None:
        started = time.monotonic()
        gap = started - (self._last_start or started)
        if gap > 1.5 * self.interval:
            metrics.TICKS_LATE.inc()
            log.warning("tick late by %.3f s (interval %.3f s)", gap - self.interval, self.interval)
        self._last_start = started
        for island in await anyio.to_thread.run_sync(self.market.island_ids):
            self._ticked.setdefault(island, started)  # a new island is judged from here
            try:
                event = await anyio.to_thread.run_sync(self.market.tick, island)
            except Exception as exc:
                fault = store_fault(exc)
                if fault is None:
                    log.exception("tick of island %s failed; nothing of it was committed", island)
                else:  # a full disk: one line, and the next interval tries again
                    log.warning("tick of island %s not committed: %s", island, fault.detail)
                continue
            self._ticked[island] = time.monotonic()
            self.market.publish(event)
