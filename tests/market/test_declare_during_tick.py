"""VM declarations that land while a tick clears, on a real DuckDB file, with the tick held
between its clearing and its commit: a lower max_gpus is answered at once and the tick then
grants no more than it (the excess refunded to the ms); giving back held nodes waits for the
tick."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from burstmarket.clock import NS_PER_S
from burstmarket.contract import (
    CapacityDeclaration,
    CapacityView,
    IslandChange,
    NewAccount,
    NewCluster,
)
from burstmarket.market import runner
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.hot import Hot
from burstmarket.market.market import Market
from burstmarket.market.tick import TickInput, TickOutput
from burstmarket.money import micros_to_decimal
from tests.conftest import MakeMarket
from tests.constants import T0, USD

TICK_NS = 10 * NS_PER_S
GPUS = 8
RATE = 2 * USD
"""The island's reserve: with one bidder every grant pays it."""
LEDGER_UNITS_PER_GPU_MS = RATE  # ledger units = µUSD/GPU-h × GPUs × ms


@dataclass
class HeldTick:
    """One tick of island `lt` running in a thread, stopped after its clearing until `go()`."""

    cleared: threading.Event
    release: threading.Event
    result: Future[Any]

    def go(self) -> None:
        self.release.set()
        self.result.result(timeout=60)


@dataclass
class Harness:
    market: Market
    tenant: Tenant
    pool: ThreadPoolExecutor
    monkeypatch: pytest.MonkeyPatch
    run_tick = staticmethod(runner.run_tick)

    def declare(self, max_gpus: int) -> CapacityView:
        return asyncio.run(self.tenant.vm.declare("a", CapacityDeclaration(max_gpus, Decimal(3))))

    def tick(self) -> None:
        self.market.clock.advance(TICK_NS)  # type: ignore[attr-defined]
        self.market.tick("lt")

    def held_tick(self) -> HeldTick:
        cleared, release = threading.Event(), threading.Event()

        def held(inp: TickInput) -> TickOutput:
            out = self.run_tick(inp)
            cleared.set()
            assert release.wait(60)
            return out

        self.monkeypatch.setattr(runner, "run_tick", held)
        self.market.clock.advance(TICK_NS)  # type: ignore[attr-defined]
        result = self.pool.submit(self.market.tick, "lt")
        assert cleared.wait(60)
        return HeldTick(cleared, release, result)

    def rows(self, query: str) -> list[tuple[Any, ...]]:
        cur = self.market.db.cursor()
        try:
            return cur.execute(query).fetchall()
        finally:
            cur.close()

    def hot_copy_is_true(self) -> bool:
        """The declarations' in-memory copy of the island equals a fresh read of the store."""
        market = self.market
        hot, fresh = market.hot, Hot(market.db, market.figures, market.lock)
        cur = self.market.db.cursor()
        try:
            fresh.island(cur, "lt")
        finally:
            cur.close()
        kept = {c: hot.clusters[c] for c in fresh.clusters}
        return hot.epoch == self.market.db.epoch and kept == fresh.clusters

    def held_nodes(self) -> int:
        return int(self.rows("SELECT count(*) FROM nodes WHERE cluster = 'a'")[0][0])


@pytest.fixture
def harness(make_market: MakeMarket, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    market = make_market(tick_seconds=TICK_NS / NS_PER_S)
    operator = Operator(market)
    operator.islands.put("lt", IslandChange(GPUS, 4, micros_to_decimal(RATE)))
    operator.accounts.create(NewAccount("acct", Decimal(1_000)))
    operator.clusters.create(NewCluster("acct", "lt", "vm", "a"))
    with ThreadPoolExecutor(2) as pool:
        yield Harness(market, Tenant(market), pool, monkeypatch)


def test_a_lower_demand_during_a_tick_is_answered_at_once_and_caps_the_tick(
    harness: Harness,
) -> None:
    harness.declare(4 * GPUS)  # the whole island, before the tick's snapshot
    tick = harness.held_tick()

    answer = harness.declare(GPUS)  # answered while the tick is still held
    assert not tick.result.done()
    assert (answer.max_gpus, answer.held_gpus) == (GPUS, 0)

    tick.go()
    assert harness.held_nodes() == 1
    # the clearing granted 4 nodes (its book closed before the declaration) ...
    assert harness.rows("SELECT count(*) FROM allocations WHERE cluster = 'a'") == [(4,)]
    # ... and 3 went back at once: the cluster pays one node for the interval, exactly
    billed = harness.rows(
        "SELECT kind, count(*), sum(units) FROM ledger WHERE cluster = 'a' "
        "AND kind IN ('charge', 'refund') GROUP BY kind ORDER BY kind"
    )
    interval_ms = TICK_NS // 1_000_000
    one_node = LEDGER_UNITS_PER_GPU_MS * GPUS * interval_ms
    assert billed == [("charge", 1, 4 * one_node), ("refund", 3, -3 * one_node)]
    # the commitment of every node given back is released: one node's worth stays committed
    committed, outstanding = harness.rows(
        "SELECT sum(units) FILTER (kind = 'commitment'), sum(units) FROM ledger "
        "WHERE cluster = 'a' AND kind IN ('commitment', 'release')"
    )[0]
    assert outstanding * 4 == committed
    # the cached balance is the ledger's
    (balance,) = harness.rows(
        "SELECT -sum(units) FROM ledger WHERE account = 'acct' "
        "AND kind IN ('deposit', 'charge', 'refund', 'hold', 'base_load')"
    )[0]
    assert harness.market.figures.balance("acct") == balance

    # the next declaration and tick see the cut holding
    assert harness.declare(GPUS).held_gpus == GPUS
    harness.tick()
    assert harness.held_nodes() == 1


def test_the_last_declaration_during_a_tick_is_the_one_that_counts(harness: Harness) -> None:
    harness.declare(4 * GPUS)
    tick = harness.held_tick()
    harness.declare(GPUS)
    harness.declare(3 * GPUS)  # raised again before the tick committed
    tick.go()
    assert harness.held_nodes() == 3


def test_giving_back_held_nodes_during_a_tick_waits_for_its_commit(harness: Harness) -> None:
    harness.declare(2 * GPUS)
    harness.tick()
    assert harness.held_nodes() == 2
    tick = harness.held_tick()

    releasing = harness.pool.submit(harness.declare, 0)
    with pytest.raises(TimeoutError):
        releasing.result(timeout=0.5)  # it cannot finish while the tick holds its nodes
    tick.go()
    answer = releasing.result(timeout=60)
    assert (answer.max_gpus, answer.held_gpus) == (0, 0)
    assert harness.held_nodes() == 0
    # the tick billed the interval in advance; the release refunded all of it
    (net,) = harness.rows(
        "SELECT sum(units) FROM ledger WHERE cluster = 'a' AND kind IN ('charge', 'refund') "
        f"AND ts >= {T0 + 2 * TICK_NS}"
    )[0]
    assert net == 0


def test_declarations_racing_many_ticks_never_leave_a_cluster_over_its_demand(
    harness: Harness,
) -> None:
    """Every tick cleared on a demand of the whole island, then lowered (or raised) while it
    was held: after each commit the holding is within the last demand."""
    for step in range(30):
        harness.declare(4 * GPUS)
        before = harness.held_nodes()
        tick = harness.held_tick()
        want = (step * 7 % 5) * GPUS
        declared = harness.pool.submit(harness.declare, want)
        if want >= before * GPUS:
            declared.result(timeout=60)  # gives nothing back: answered while the tick is held
            assert not tick.result.done()
        tick.go()
        assert declared.result(timeout=60).max_gpus == want
        assert harness.held_nodes() * GPUS <= want
        assert harness.hot_copy_is_true()


def test_a_declaration_answers_after_one_whose_bookkeeping_failed(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    committed = Hot._committed
    failed: list[bool] = []

    def fails_once(hot: Hot) -> None:
        if not failed:
            failed.append(True)
            raise RuntimeError("bookkeeping failed")
        committed(hot)

    monkeypatch.setattr(Hot, "_committed", fails_once)
    with pytest.raises(RuntimeError, match="bookkeeping failed"):
        harness.declare(GPUS)
    assert harness.declare(2 * GPUS).max_gpus == 2 * GPUS
    assert harness.hot_copy_is_true()
    harness.tick()
    assert harness.held_nodes() == 2
