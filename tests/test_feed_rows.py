"""Each feed's row is one contract Struct, named by its declaration (feeds/<name>.toml `row`):
a tick carries the rows of the feeds it computes, typed, and what it publishes live is what the
store reads back for that tick, key for key; a declaration naming no row type is refused."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from burstmarket.clock import NS_PER_S
from burstmarket.contract import (
    CapacityDeclaration,
    IslandChange,
    LadderView,
    NewAccount,
    NewCluster,
    RatesView,
    TickStats,
)
from burstmarket.feed.catalog import load_catalog, parse_spec
from burstmarket.feed.reader import FeedReader
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.market import Market

G = 8


def test_a_tick_publishes_live_what_the_store_reads_back(market: Market) -> None:
    operator = Operator(market)
    operator.islands.put("rows", IslandChange(G, 3, Decimal(2)))
    operator.accounts.create(NewAccount("acct", Decimal(1_000)))
    operator.clusters.create(NewCluster("acct", "rows", "vm", "a"))
    asyncio.run(Tenant(market).vm.declare("a", CapacityDeclaration(2 * G, Decimal(3))))
    for _ in range(2):  # the second tick's ladder has rungs the first grant's windows hold
        market.clock.advance(10 * NS_PER_S)  # type: ignore[attr-defined]
        event = market.tick("rows")
    assert [type(row) for row in event.rows] == [TickStats, LadderView]
    assert (event.stats.gpus, event.stats.pending_gpus) == (2 * G, 0)
    held = [rung for rung in event.ladder.rungs if rung.contestable_at is not None]
    assert held, event.ladder.rungs

    specs = {spec.row: spec for spec in load_catalog()}
    assert set(specs) == {TickStats, LadderView, RatesView}
    reader = FeedReader(market.db)
    for row in event.rows:
        spec = specs[type(row)]
        (stored,) = reader.rows(spec, "rows", event.tick, event.tick)
        assert spec.data(row) == stored.data
        assert tuple(stored.data) == spec.fields == type(row).__struct_fields__[3:]


def test_a_declaration_must_name_a_row_type() -> None:
    declaration = """
        name = "weather"
        channel = "weather:{island}"
        path = "/api/market/weather"
        sql = "feed_stats"
        row = "%s"
        replay_seconds = 3600
    """
    assert parse_spec(declaration % "TickStats", "weather.toml").row is TickStats
    with pytest.raises(ValueError, match="row must be one of TickStats, LadderView, RatesView"):
        parse_spec(declaration % "Weather", "weather.toml")
