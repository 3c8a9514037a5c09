"""The market's start: a new store gets the configured first island (data the service start
hands in, not the market's own), a store with islands keeps its own, and the figures kept in
memory are the store's."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

from burstmarket.clock import NS_PER_S, ManualClock
from burstmarket.contract import CapacityDeclaration, NewAccount, NewCluster
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.market import Market
from burstmarket.money import LEDGER_UNITS_PER_MICRO
from burstmarket.settings import REFERENCE_ISLAND, IslandSpec, Settings
from burstmarket.store import Database

T0 = 1_800_000_000 * NS_PER_S
USD = 1_000_000


def start(path: Path, first: IslandSpec | None, clock: ManualClock | None = None) -> Market:
    settings = Settings(clock="manual", data_dir=path, first_island=first)
    return Market(Database(settings.database_path), clock or ManualClock(T0), settings)


def test_a_new_store_starts_with_the_configured_island_or_none(tmp_path: Path) -> None:
    assert Settings().first_island == REFERENCE_ISLAND
    small = IslandSpec("small", 4, 3, 2 * USD, '{"gpus": "4x test"}')
    market = start(tmp_path / "a", small)
    assert market.island_ids() == ["small"]
    (island,) = Operator(market).islands.islands()
    shown = (island.id, island.gpus_per_node, island.nodes, island.reserve_price, island.node_spec)
    assert shown == ("small", 4, 3, 2, {"gpus": "4x test"})
    market.db.close()
    assert start(tmp_path / "b", None).island_ids() == []


def test_a_store_with_islands_keeps_its_own_and_its_figures(tmp_path: Path) -> None:
    market = start(tmp_path, IslandSpec("first", 8, 2, USD, None))
    operator = Operator(market)
    operator.accounts.create(NewAccount("acct", Decimal(100)))
    token = operator.clusters.create(NewCluster("acct", "first", "vm", "c")).token
    asyncio.run(Tenant(market).vm.declare("c", CapacityDeclaration(8, Decimal(3))))
    market.clock.advance(10 * NS_PER_S)  # type: ignore[attr-defined]
    market.tick("first")
    balance, rates = market.figures.balance("acct"), market.figures.rates("first")
    last = market.figures.last("first")
    market.db.close()

    again = start(tmp_path, REFERENCE_ISLAND, ManualClock(T0))
    assert again.island_ids() == ["first"]  # the configured island is for a new store only
    assert again.cluster_for_token(token) == "c"
    assert (again.figures.balance("acct"), again.figures.rates("first")) == (balance, rates)
    assert again.figures.last("first") == last
    # one node of 8 GPUs at the reserve, billed 10 s (10,000 ms) in advance
    assert balance == 100 * USD * LEDGER_UNITS_PER_MICRO - USD * 8 * 10_000
    assert rates == {"c": USD}
    again.db.close()
