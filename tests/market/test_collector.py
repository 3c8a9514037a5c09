"""The cycle collector waits while a tick runs (collector.py): off from the tick's read
to its commit, on again after, and when ticks of two islands overlap, on again only once the
last has ended; a collector someone else turned off stays off."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from burstmarket.collector import collector_paused
from burstmarket.contract import CapacityDeclaration, IslandChange, NewAccount, NewCluster
from burstmarket.market import runner
from burstmarket.market.desks import Operator, Tenant
from tests.conftest import MakeMarket


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_a_tick_runs_with_the_collector_off_and_turns_it_on_again(
    make_market: MakeMarket, monkeypatch: pytest.MonkeyPatch
) -> None:
    market = make_market()
    operator = Operator(market)
    operator.islands.put("i", IslandChange(8, 2, Decimal(1)))
    operator.accounts.create(NewAccount("acct", Decimal(1_000)))
    operator.clusters.create(NewCluster("acct", "i", "vm", "a"))
    asyncio.run(Tenant(market).vm.declare("a", CapacityDeclaration(8, Decimal(3))))
    seen: list[bool] = []
    run_tick = runner.run_tick

    def watched(inp: Any) -> Any:
        seen.append(gc.isenabled())
        return run_tick(inp)

    monkeypatch.setattr(runner, "run_tick", watched)
    event = market.tick("i")
    assert seen == [False]
    assert gc.isenabled()
    assert event.stats.gpus == 8  # the tick itself as ever: the cluster won its node


def test_overlapping_ticks_turn_it_on_once_the_last_ends() -> None:
    first_in, second_in, first_may_end = threading.Event(), threading.Event(), threading.Event()
    inside: list[bool] = []

    def first() -> None:
        with collector_paused():
            first_in.set()
            second_in.wait(10)
            first_may_end.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with collector_paused():
        second_in.set()
        inside.append(gc.isenabled())
    inside.append(gc.isenabled())  # the first tick still runs
    first_may_end.set()
    thread.join(10)
    assert inside == [False, False]
    assert gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
