"""The real clock's tick loop: one APScheduler job, every island once per interval.

The job never overlaps itself (max_instances=1); a run that could not start on time is
coalesced into the next one and the lateness is logged, so a tick is never skipped silently.
A run that takes longer than the interval is logged with its figures, and the next run starts
at once, from the market as the long one committed it, at the next market time (the last
tick's time plus one interval): ticks stay consecutive and their billed intervals contiguous
however long one ran, instead of the market drifting behind the wall clock unbilled.
The tick itself runs in a worker thread; listeners are called back here, on the event loop.
Every such lateness is also counted (metrics.py).

Market time on the real clock never runs ahead of the wall clock. A tick is stamped one interval
after the island's last at the earliest (so billed intervals never overlap), and a run can begin
before that: the run after a late one (the interval job keeps its own beat), or the first runs
on a store whose last tick is ahead of the wall clock (ticks run on the manual clock, a clock
set back). Such an island's tick waits until it is due, when its stamp is the wall clock's own
time; one more than an interval away is left to a later run, with one log line.

The loop knows when each island last ticked
on the wall clock (`overdue`, what `/readyz` asks: api/health.py), and on stopping it lets the
run under way end before the store closes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from burstmarket import metrics
from burstmarket.clock import from_datetime, rfc3339
from burstmarket.market.market import Market
from burstmarket.store import store_fault

log = logging.getLogger(__name__)
# APScheduler warns of a run skipped for max_instances in words of its own; `_on_missed` says
# the same with the time it was due, so only its line is written.
logging.getLogger("apscheduler.scheduler").setLevel(logging.ERROR)


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
        self._idle = asyncio.Event()
        self._idle.set()
        self._ticked: dict[str, float] = {}
        """Island -> when (monotonic) it last committed a tick, or the loop started or first
        met it."""
        self._ahead: set[str] = set()
        """Islands whose last tick is ahead of the wall clock, said once in the log."""

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
        now = self._monotonic()
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
        now = self._monotonic()
        return {island: now - at for island, at in self._ticked.items() if now - at > limit}

    def _late(self, message: str, *args: object) -> None:
        """The loop fell behind: say so, and count it."""
        metrics.TICKS_LATE.inc()
        log.warning(message, *args)

    def _on_missed(self, event: JobEvent) -> None:
        # A run refused for max_instances carries the times it was due (a list); a missed
        # run, its one time.
        due = getattr(event, "scheduled_run_times", None) or [event.scheduled_run_time]
        self._late(
            "tick late: a run was due at %s while the previous one was still running "
            "(it runs as soon as that one ends)",
            ", ".join(f"{when:%Y-%m-%dT%H:%M:%S.%f}"[:-3] for when in due),
        )

    async def _run(self) -> None:
        self._idle.clear()
        try:
            await self._run_until_on_time()
        finally:
            self._idle.set()

    async def _run_until_on_time(self) -> None:
        started = self._monotonic()
        if self._last_start is not None:
            gap = started - self._last_start
            if gap > 1.5 * self.interval:
                self._late(
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
            self._late(
                "tick overran its interval: %.3f s for an interval of %.3f s (%s); the next "
                "tick runs now, from the market as committed, one interval after the last",
                took,
                self.interval,
                "; ".join(figures),
            )
            catching_up = True

    async def _due(self, island: str, due_ns: int) -> bool:
        """Whether the island's next tick, due at market time `due_ns`, may run now: at once if
        the wall clock has reached it, after a wait if it is at most an interval away; further
        off (the store's ticks ahead of the wall clock), not in this run."""
        early = (due_ns - self.market.clock.now_ns()) / 1e9
        if early <= 0:
            self._ahead.discard(island)
            return True
        if early <= self.interval:
            await asyncio.sleep(early + 0.001)  # past it: the wall clock counts whole ms
            return True
        if island not in self._ahead:
            self._ahead.add(island)
            log.warning(
                "island %s: its last tick is %.3f s ahead of the wall clock; it ticks again "
                "once the wall clock reaches %s",
                island,
                early - self.interval,
                rfc3339(due_ns),
            )
        return False

    async def _tick_all(self, catching_up: bool) -> list[str]:
        """Tick every island once; one line of figures per island."""
        figures = []
        interval_ns = round(self.interval * 1e9)
        for island in await anyio.to_thread.run_sync(self.market.island_ids):
            last = self.market.figures.last(island)
            self._ticked.setdefault(island, self._monotonic())  # a new island is judged from here
            if last is not None and not await self._due(island, last.time + interval_ns):
                continue
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
            self._ticked[island] = self._monotonic()
            stats = event.stats
            figures.append(
                f"island {island} tick {event.tick} at {rfc3339(from_datetime(event.time))}: "
                f"{self._monotonic() - began:.3f} s, {stats.gpus} GPUs held by "
                f"{stats.clusters} clusters, {stats.pending_gpus} GPUs pending"
            )
            self.market.publish(event)
        return figures
