"""Held time is billed once, without gaps, whatever a tick's lateness: on a real DuckDB file,
ticks at chosen market times (docs/market.md "Billing"), and the account's rate read between
them. Also the pure rule behind it: time before the service started is never billed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from decimal import Decimal

import pytest

from burstmarket.clock import NS_PER_MS, NS_PER_S, ManualClock
from burstmarket.contract import (
    CapacityDeclaration,
    CapacityView,
    IslandChange,
    NewAccount,
    NewCluster,
)
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.ledger import Billed
from burstmarket.market.market import Market
from burstmarket.market.model import Island
from burstmarket.market.tick import TickInput, run_tick
from burstmarket.money import micros_to_decimal
from tests.conftest import MakeMarket
from tests.constants import T0, USD
from tests.market.test_tick import G, nodes, vm

TICK_NS = 10 * NS_PER_S
RESERVE = 2 * USD


@dataclass
class Book:
    market: Market
    tenant: Tenant

    def declare(self, nodes_wanted: int) -> CapacityView:
        declaration = CapacityDeclaration(nodes_wanted * G, Decimal(3))
        return asyncio.run(self.tenant.vm.declare("a", declaration))

    def tick_at(self, at: int) -> None:
        clock = self.market.clock
        assert isinstance(clock, ManualClock)
        clock.advance(at - clock.now_ns())
        self.market.tick("lt", at)

    def charged(self) -> list[tuple[int, int, int]]:
        """(period_start, period_end, gpus) of the cluster's billed rows, refunds negative."""
        cur = self.market.db.cursor()
        try:
            rows = cur.execute(
                "SELECT period_start, period_end, gpus FROM ledger WHERE cluster = 'a' "
                "AND kind IN ('charge', 'refund') ORDER BY period_start, period_end"
            ).fetchall()
        finally:
            cur.close()
        return [(int(s), int(e), int(g)) for s, e, g in rows]


@pytest.fixture
def book(make_market: MakeMarket) -> Book:
    market = make_market(tick_seconds=TICK_NS / NS_PER_S)
    operator = Operator(market)
    operator.islands.put("lt", IslandChange(G, 2, micros_to_decimal(RESERVE)))
    operator.accounts.create(NewAccount("acct", Decimal(1_000)))
    operator.clusters.create(NewCluster("acct", "lt", "vm", "a"))
    return Book(market, Tenant(market))


def _gpu_ms(rows: list[tuple[int, int, int]]) -> int:
    return sum(gpus * ((end - start) // NS_PER_MS) for start, end, gpus in rows)


def test_a_late_tick_bills_the_time_since_the_last_interval_ended(book: Book) -> None:
    book.declare(2)
    first = T0 + TICK_NS
    book.tick_at(first)
    late = first + TICK_NS + 3 * NS_PER_S  # three seconds late
    book.tick_at(late)
    rows = book.charged()
    assert rows == [
        (first, first + TICK_NS, 2 * G),
        (first + TICK_NS, late, 2 * G),  # at the rate in force, before this tick cleared
        (late, late + TICK_NS, 2 * G),
    ]
    held = 2 * G * ((late + TICK_NS - first) // NS_PER_MS)
    assert _gpu_ms(rows) == held
    ledger = book.market.db.cursor()
    units = ledger.execute(
        "SELECT sum(units) FROM ledger WHERE cluster = 'a' AND kind = 'charge'"
    ).fetchone()
    ledger.close()
    assert units is not None
    assert int(units[0]) == RESERVE * held  # alone on the island: the reserve throughout


def test_a_scale_down_between_late_ticks_is_billed_up_to_its_moment(book: Book) -> None:
    book.declare(2)
    first = T0 + TICK_NS
    book.tick_at(first)
    clock = book.market.clock
    assert isinstance(clock, ManualClock)
    released_at = clock.advance(TICK_NS + 2 * NS_PER_S)  # after the billed interval ended
    assert book.declare(1).held_gpus == G
    late = first + TICK_NS + 5 * NS_PER_S
    book.tick_at(late)
    rows = book.charged()
    # the released node: billed up to its release; the kept one: without a gap or overlap
    assert (first + TICK_NS, released_at, G) in rows
    assert (first + TICK_NS, late, G) in rows
    kept = G * ((late + TICK_NS - first) // NS_PER_MS)
    released = G * ((released_at - first) // NS_PER_MS)
    assert _gpu_ms(rows) == kept + released


def test_an_early_release_is_refunded_and_nothing_is_billed_twice(book: Book) -> None:
    book.declare(2)
    first = T0 + TICK_NS
    book.tick_at(first)
    clock = book.market.clock
    assert isinstance(clock, ManualClock)
    released_at = clock.advance(4 * NS_PER_S)  # inside the interval billed in advance
    book.declare(1)
    book.tick_at(first + TICK_NS)  # on time
    rows = book.charged()
    kept = G * (2 * TICK_NS // NS_PER_MS)
    released = G * ((released_at - first) // NS_PER_MS)
    assert _gpu_ms(rows) == kept + released
    assert all(end - start <= TICK_NS for start, end, _ in rows)


def _pure(billed: Billed | None, at: int) -> list[tuple[int, int, int]]:
    island = nodes(1)
    island[0].cluster, island[0].granted_at = "a", T0
    a = vm("a", G, 3 * USD)
    out = run_tick(
        TickInput(
            island=Island("i", G, 1, USD, None),
            tick=2,
            time=at,
            interval_ns=TICK_NS,
            clusters={"a": a},
            nodes=island,
            jobs=[],
            balances={"acct": 10**30},
            spent={},
            rates={"a": USD},
            billed=billed,
        )
    )
    charges = [e for e in out.ledger if e.kind == "charge"]
    return [(e.period_start or 0, e.period_end or 0, e.gpus) for e in charges]


def test_time_before_the_service_started_is_never_billed() -> None:
    ended = T0 + TICK_NS
    started = ended + 3600 * NS_PER_S  # down for an hour
    at = started + 4 * NS_PER_S  # the first tick after the start
    rows = _pure(Billed(T0, ended, floor=started), at)
    assert rows == [(started, at, G), (at, at + TICK_NS, G)]
    # a service that did not stop: the whole time since the interval ended
    assert _pure(Billed(T0, ended), at)[0] == (ended, at, G)


def test_the_accounts_rate_follows_a_release_and_stands_through_a_late_tick(book: Book) -> None:
    """The rate `GET /api/account` reads (docs/market.md "Spend guard", the account): a node
    given back inside the interval billed in advance stops counting at once, and while the next
    tick is late the nodes still held count as they did, never as 0."""

    def account() -> tuple[float, float | None]:
        view = book.tenant.account.account("a")
        return view.rate_usd_per_hour, view.runway_hours

    book.declare(2)
    first = T0 + TICK_NS
    book.tick_at(first)
    paying = float(micros_to_decimal(2 * G * RESERVE))  # alone on the island: the reserve
    balance = float(micros_to_decimal(book.market.figures.balance("acct") // 3_600_000))
    assert account() == (paying, round(balance / paying, 4))

    clock = book.market.clock
    assert isinstance(clock, ManualClock)
    clock.advance(4 * NS_PER_S)  # inside the interval billed in advance
    book.declare(1)  # one node back: refunded from now
    assert account()[0] == paying / 2
    clock.advance(TICK_NS)  # past the interval's end: the next tick is late
    assert account()[0] == paying / 2
    book.tick_at(clock.now_ns())
    assert account()[0] == paying / 2
