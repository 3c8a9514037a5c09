"""Each cluster's spend window is kept in memory (market/figures.py) rather than summed from the
ledger by every tick and every declaration. On a real DuckDB file, through windows that open,
run out after 24 h and open again, refunds of declarations between ticks, a limit set halfway
and a restart, what the figures hold is at every step the ledger's own sum over the window, and
neither the ticks nor the spend guard's checks of growing declarations sum the ledger."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from burstmarket.clock import NS_PER_HOUR, ManualClock
from burstmarket.contract import (
    CapacityDeclaration,
    IslandChange,
    NewAccount,
    NewCluster,
    SpendLimitChange,
)
from burstmarket.market import figures
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.market import Market
from burstmarket.money import micros_to_decimal
from tests.conftest import MakeMarket
from tests.constants import T0, USD

GPUS = 8
TICK_NS = 2 * NS_PER_HOUR
"""Two-hour ticks: a window runs out after twelve of them."""


def ledger_windows(market: Market) -> dict[str, tuple[int, int]]:
    """Per cluster with a window: its start and the billed units since, summed from the ledger."""
    cur = market.db.cursor()
    try:
        rows = cur.execute(
            "SELECT c.id, c.spend_window_start, COALESCE(sum(l.units), 0) FROM clusters c "
            "LEFT JOIN ledger l ON l.cluster = c.id AND l.ts >= c.spend_window_start "
            "AND l.kind IN ('charge', 'refund', 'hold') "
            "WHERE c.spend_window_start IS NOT NULL GROUP BY ALL"
        ).fetchall()
    finally:
        cur.close()
    return {cluster: (since, int(units)) for cluster, since, units in rows}


def kept(market: Market) -> dict[str, tuple[int, int]]:
    return {c: (w.since, w.units) for c, w in market.figures.spend_windows().items()}


def declare(tenant: Tenant, cluster: str, gpus: int) -> None:
    asyncio.run(tenant.vm.declare(cluster, CapacityDeclaration(gpus, Decimal(3))))


def test_the_spend_windows_kept_are_the_ledgers_through_renewals_refunds_and_a_restart(
    make_market: MakeMarket, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    summed: list[str] = []
    fetch_one = figures.fetch_one

    def counted(cur: Any, name: str, /, **params: Any) -> Any:
        summed.append(name)
        return fetch_one(cur, name, **params)

    monkeypatch.setattr(figures, "fetch_one", counted)
    clock = ManualClock(T0)
    market = make_market(clock=clock, tick_seconds=TICK_NS / 1e9)
    operator, tenant = Operator(market), Tenant(market)
    operator.islands.put("sw", IslandChange(GPUS, 6, micros_to_decimal(2 * USD)))
    operator.accounts.create(NewAccount("acct", Decimal(1_000_000)))
    for cluster in ("a", "b", "c"):
        operator.clusters.create(NewCluster("acct", "sw", "vm", cluster))
    tenant.spend_guard.set_limit("a", SpendLimitChange(Decimal(10_000)))
    tenant.spend_guard.set_limit("b", SpendLimitChange(Decimal(10_000)))
    declare(tenant, "a", 3 * GPUS)
    declare(tenant, "b", 2 * GPUS)
    declare(tenant, "c", GPUS)  # no limit: its window is kept all the same
    starts: set[tuple[str, int]] = set()
    for n in range(30):
        clock.advance(TICK_NS)
        market.tick("sw")
        assert kept(market) == ledger_windows(market), n
        starts |= {(c, since) for c, (since, _) in kept(market).items()}
        clock.advance(TICK_NS // 3)
        if n % 4 == 1:  # gives nodes back: refunds of the rest of the billed interval
            declare(tenant, "a", GPUS)
            declare(tenant, "b", 0)
        elif n % 4 == 3:
            declare(tenant, "a", 3 * GPUS)
            declare(tenant, "b", 2 * GPUS)
        if n == 17:
            tenant.spend_guard.set_limit("c", SpendLimitChange(Decimal(10_000)))
        assert kept(market) == ledger_windows(market), n
    refunded = market.db.cursor().execute(
        "SELECT count(*) FROM ledger WHERE kind = 'refund' AND cluster IN ('a', 'b')"
    )
    assert refunded.fetchone()[0] > 0  # type: ignore[index]
    # 80 hours of market (ticks 2 h 40 min apart): every window ran out and opened again thrice
    assert {c: sum(1 for o, _ in starts if o == c) for c in "abc"} == {"a": 4, "b": 4, "c": 4}
    assert summed == []  # every tick and every check read the windows from memory
    market.db.close()

    again = make_market(clock=clock, data_dir=tmp_path, tick_seconds=TICK_NS / 1e9)
    assert kept(again) == ledger_windows(again)  # read back from the store at start
    clock.advance(TICK_NS)
    again.tick("sw")
    assert kept(again) == ledger_windows(again)
    assert summed == []
