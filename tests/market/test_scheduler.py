"""The real clock's tick loop when a tick runs longer than its interval, on a real DuckDB file.

The scheduler's own clock is injected: a tick "takes" as long as the test says, no wall clock
is read and nothing is asserted about real time.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from burstmarket.clock import NS_PER_S, ManualClock
from burstmarket.contract import CapacityDeclaration, IslandChange, NewAccount, NewCluster
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.market import Market
from burstmarket.scheduler import TickScheduler
from tests.conftest import MakeMarket
from tests.constants import T0

INTERVAL_S = 10.0
INTERVAL_NS = 10 * NS_PER_S


class WallClock(ManualClock):
    """The real clock the tick loop runs on, held still: it moves only when the test moves it,
    never with a tick (a manual clock follows the ticks that commit)."""

    def ticked(self, ns: int) -> None:
        """Nothing: the wall clock does not follow the ticks."""


@dataclass
class SlowTicks:
    """Wraps `Market.tick`: the n-th tick of island `lt` takes `durations[n]` seconds on the
    injected clock (any other tick none), and overlapping ticks are caught."""

    market: Market
    durations: list[float]
    now: float = 0.0
    running: int = 0
    overlapped: bool = False
    calls: list[int | None] = field(default_factory=list)
    """The market time each tick of `lt` was asked for (None: the market's next)."""

    def monotonic(self) -> float:
        return self.now

    def tick(self, island: str, time: int | None = None) -> Any:
        self.running += 1
        self.overlapped |= self.running > 1
        try:
            event = Market.tick(self.market, island, time)
            if island == "lt":
                self.calls.append(time)
                index = len(self.calls) - 1
                self.now += self.durations[index] if index < len(self.durations) else 0.0
            return event
        finally:
            self.running -= 1


@pytest.fixture
def market(make_market: MakeMarket) -> Market:
    market = make_market(WallClock(T0), tick_seconds=INTERVAL_S)
    operator = Operator(market)
    operator.islands.put("lt", IslandChange(8, 2, Decimal(1)))
    operator.accounts.create(NewAccount("acct", Decimal(1_000)))
    tenant = Tenant(market)
    for name, price in (("a", 6), ("b", 5), ("c", 4)):
        operator.clusters.create(NewCluster("acct", "lt", "vm", name))
        asyncio.run(tenant.vm.declare(name, CapacityDeclaration(8, Decimal(price))))
    return market


def ticks(market: Market) -> list[tuple[Any, ...]]:
    cur = market.db.cursor()
    try:
        return cur.execute(
            "SELECT tick, epoch_ns(time), core_rounds, core_exact FROM ticks "
            "WHERE island = 'lt' ORDER BY tick"
        ).fetchall()
    finally:
        cur.close()


def test_a_tick_past_its_interval_is_logged_and_the_next_starts_at_once_contiguous(
    market: Market, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    slow = SlowTicks(market, durations=[14.0, 1.0])
    monkeypatch.setattr(market, "tick", slow.tick)
    scheduler = TickScheduler(market, INTERVAL_S, monotonic=slow.monotonic)

    with caplog.at_level(logging.WARNING, logger="burstmarket.scheduler"):
        asyncio.run(scheduler._run())

    overran = [r.getMessage() for r in caplog.records if "overran" in r.getMessage()]
    assert len(overran) == 1
    assert "14.000 s for an interval of 10.000 s" in overran[0]
    assert (
        "island lt tick 1 at 2027-01-15T08:00:00Z: 14.000 s, 16 GPUs held by 2 clusters, "
        "8 GPUs pending" in overran[0]
    )
    # the long tick was followed at once by the next one, from the committed market, one
    # interval after it in market time: consecutive numbers, contiguous billed intervals
    assert slow.calls == [None, T0 + INTERVAL_NS]
    assert not slow.overlapped
    assert [row[:2] for row in ticks(market)] == [(1, T0), (2, T0 + INTERVAL_NS)]

    # a run within its interval logs nothing and waits for its slot
    caplog.clear()
    market.clock.advance(2 * INTERVAL_NS)  # type: ignore[attr-defined]
    with caplog.at_level(logging.WARNING, logger="burstmarket.scheduler"):
        asyncio.run(scheduler._run())
    assert not [r for r in caplog.records if "overran" in r.getMessage()]
    assert [row[:2] for row in ticks(market)][-1] == (3, T0 + 2 * INTERVAL_NS)


def test_every_tick_row_says_how_the_core_was_reached(market: Market) -> None:
    market.tick("lt")
    # two nodes, three single-node bids: VCG is in the core, one exact separation says so
    assert ticks(market) == [(1, T0, 1, True)]


def test_a_run_due_while_the_last_still_runs_is_logged_once_with_its_time(
    market: Market, caplog: pytest.LogCaptureFixture
) -> None:
    """The loop as APScheduler runs it: a run comes due while a tick still runs; the line
    says when it was due (APScheduler's event carries a list of times), and APScheduler's own
    warning of it is not written beside ours."""
    scheduler = TickScheduler(market, 0.05)
    release = threading.Event()
    monkey_tick = market.tick

    def slow_tick(*args: Any, **kwargs: Any) -> Any:
        release.wait(timeout=30)
        return monkey_tick(*args, **kwargs)

    market.tick = slow_tick  # type: ignore[method-assign]

    async def scenario() -> None:
        scheduler.start()
        try:
            for _ in range(600):  # until a run came due while the first tick was held
                await asyncio.sleep(0.05)
                if any("was due at" in r.getMessage() for r in caplog.records):
                    break
        finally:
            release.set()
            await scheduler.stop()

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    due = [r.getMessage() for r in caplog.records if "was due at" in r.getMessage()]
    assert due, "no run came due while the tick was held"
    assert "?" not in due[0]
    assert re.search(r"was due at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}", due[0]), due[0]
    assert not [r for r in caplog.records if r.name.startswith("apscheduler")]
