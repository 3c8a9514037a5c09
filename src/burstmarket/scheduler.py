"""The real clock's tick loop: one APScheduler job, every island once per interval.

The job never overlaps itself (max_instances=1); a run that could not start on time is
coalesced into the next one and the lateness is logged, so a tick is never skipped silently.
A run that takes longer than the interval is logged with its figures, and the next run starts
at once, from the market as the long one committed it, at the next market time (the last
tick's time plus one interval): ticks stay consecutive and their billed intervals contiguous
however long one ran, instead of the market drifting behind the wall clock unbilled.
The tick itself runs in a worker thread; listeners are called back here, on the event loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from burstmarket.market.market import Market
from burstmarket.store import store_fault

log = logging.getLogger(__name__)


class TickScheduler:
    def __init__(
        self,
        market: Market,
        interval_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.market = market
        self.interval = interval_seconds
        self._monotonic = monotonic
        self._scheduler: Any = None
        self._last_start: float | None = None

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
        scheduler.add_listener(self._on_missed, EVENT_JOB_MAX_INSTANCES | EVENT_JOB_MISSED)
        scheduler.start()
        self._scheduler = scheduler

    def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None

    def _on_missed(self, event: JobEvent) -> None:
        log.warning(
            "tick late: a run was due at %s while the previous one was still running "
            "(it runs as soon as that one ends)",
            getattr(event, "scheduled_run_time", "?"),
        )

    async def _run(self) -> None:
        started = self._monotonic()
        if self._last_start is not None:
            gap = started - self._last_start
            if gap > 1.5 * self.interval:
                log.warning(
                    "tick late by %.3f s (interval %.3f s)", gap - self.interval, self.interval
                )
        self._last_start = started
        catching_up = False
        while True:
            began = self._monotonic()
            figures = await self._tick_all(catching_up)
            took = self._monotonic() - began
            if took <= self.interval:
                return
            log.warning(
                "tick overran its interval: %.3f s for an interval of %.3f s (%s); the next "
                "tick runs now, from the market as committed, one interval after the last",
                took,
                self.interval,
                "; ".join(figures),
            )
            catching_up = True

    async def _tick_all(self, catching_up: bool) -> list[str]:
        """Tick every island once; one line of figures per island."""
        figures = []
        interval_ns = round(self.interval * 1e9)
        for island in await anyio.to_thread.run_sync(self.market.island_ids):
            last = self.market.figures.last(island)
            at = last.time + interval_ns if catching_up and last is not None else None
            began = self._monotonic()
            try:
                event = await anyio.to_thread.run_sync(self.market.tick, island, at)
            except Exception as exc:
                fault = store_fault(exc)
                if fault is None:
                    log.exception("tick of island %s failed; nothing of it was committed", island)
                else:  # a full disk: one line, and the next interval tries again
                    log.warning("tick of island %s not committed: %s", island, fault.detail)
                continue
            stats = event.stats
            figures.append(
                f"island {island} tick {event.tick} at {stats['time']}: "
                f"{self._monotonic() - began:.3f} s, {stats['gpus']} GPUs held by "
                f"{stats['clusters']} clusters, {stats['pending_gpus']} GPUs pending"
            )
            self.market.publish(event)
        return figures
