"""A tick reads the island's live jobs from an order of acceptance no live job has less than
(market/runner.py `_jobs_since`), so it skips the jobs long finished. On a real DuckDB file,
with jobs made between ticks (at the market time of the last tick's snapshot), jobs that wait
for many ticks, jobs finished, a tick with no live job before one made right after it, and a
restart, every tick reads exactly the jobs the store holds live."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from burstmarket.clock import NS_PER_S, ManualClock
from burstmarket.contract import BidChange, IslandChange, NewAccount, NewCluster, NewJob
from burstmarket.market import runner
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.market import Market
from burstmarket.market.tick import TickInput, TickOutput
from burstmarket.money import micros_to_decimal
from tests.conftest import MakeMarket
from tests.constants import T0, USD

TICK_NS = 10 * NS_PER_S


def live(market: Market) -> set[str]:
    cur = market.db.cursor()
    try:
        rows = cur.execute("SELECT name FROM jobs WHERE state IN ('pending', 'running')")
        return {name for (name,) in rows.fetchall()}
    finally:
        cur.close()


def test_every_tick_reads_exactly_the_live_jobs(
    make_market: MakeMarket, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[set[str]] = []
    run_tick = runner.run_tick

    def seen(inp: TickInput) -> TickOutput:
        read.append({j.name for j in inp.jobs})
        return run_tick(inp)

    monkeypatch.setattr(runner, "run_tick", seen)
    clock = ManualClock(T0)
    market = make_market(clock=clock, tick_seconds=TICK_NS / NS_PER_S)
    operator, tenant = Operator(market), Tenant(market)
    operator.islands.put("lj", IslandChange(8, 3, micros_to_decimal(2 * USD)))
    operator.accounts.create(NewAccount("acct", Decimal(1_000_000)))
    operator.clusters.create(NewCluster("acct", "lj", "k8s", "k"))
    tenant.jobs.set_bid("k", BidChange(Decimal(3)))
    made = 0
    for n in range(24):
        # made at the market time of the tick before: its snapshot's own time
        for _ in range(1 + n % 3):
            made += 1
            tenant.jobs.create("k", NewJob(f"j{made}", 2 if made % 4 else 1))
        if n % 2:  # the oldest running job is done; the others wait, some for many ticks
            running = [j.name for j in tenant.jobs.jobs("k") if j.state == "running"]
            if running:
                tenant.jobs.finish("k", running[0])
        expected = live(market)
        clock.advance(TICK_NS)
        market.tick("lj")
        assert read[-1] == expected, n
    finished = made - len(live(market))
    assert finished >= 8  # some done, and the tick no longer reads them
    assert any(len(names) > 3 for names in read)  # jobs waited for nodes across ticks
    # no job live at a tick: the next one's are those made since its snapshot
    for name in live(market):
        tenant.jobs.finish("k", name)
    clock.advance(TICK_NS)
    market.tick("lj")
    assert read[-1] == set()
    tenant.jobs.create("k", NewJob("at-the-snapshot", 1))
    made_at = market.db.cursor().execute(
        "SELECT created_at FROM jobs WHERE name = 'at-the-snapshot'"
    )
    assert made_at.fetchall() == [(clock.now_ns(),)]  # the time of the tick's snapshot
    clock.advance(TICK_NS)
    market.tick("lj")
    assert read[-1] == {"at-the-snapshot"}
    market.db.close()

    again = make_market(clock=clock, data_dir=tmp_path, tick_seconds=TICK_NS / NS_PER_S)
    tenant = Tenant(again)
    tenant.jobs.create("k", NewJob("after-restart", 1))
    for _ in range(2):
        expected = live(again)
        clock.advance(TICK_NS)
        again.tick("lj")
        assert read[-1] == expected
