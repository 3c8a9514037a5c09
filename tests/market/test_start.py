"""The market's start: a new store gets the configured first island (data the service start
hands in, not the market's own), a store with islands keeps its own, and the figures kept in
memory are the store's."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

from burstmarket.clock import NS_PER_S
from burstmarket.contract import CapacityDeclaration, NewAccount, NewCluster
from burstmarket.market.desks import Operator, Tenant
from burstmarket.money import LEDGER_UNITS_PER_MICRO
from burstmarket.settings import REFERENCE_ISLAND, IslandSpec, Settings
from tests.conftest import MakeMarket
from tests.constants import USD


def test_a_new_store_starts_with_the_configured_island_or_none(
    make_market: MakeMarket, tmp_path: Path
) -> None:
    assert Settings().first_island == REFERENCE_ISLAND
    small = IslandSpec("small", 4, 3, 2 * USD, '{"gpus": "4x test"}')
    market = make_market(data_dir=tmp_path / "a", first_island=small)
    assert market.island_ids() == ["small"]
    (island,) = Operator(market).islands.islands()
    shown = (island.id, island.gpus_per_node, island.nodes, island.reserve_price, island.node_spec)
    assert shown == ("small", 4, 3, 2, {"gpus": "4x test"})
    market.db.close()
    assert make_market(data_dir=tmp_path / "b", first_island=None).island_ids() == []


def test_a_store_with_islands_keeps_its_own_and_its_figures(make_market: MakeMarket) -> None:
    market = make_market(first_island=IslandSpec("first", 8, 2, USD, None))
    operator = Operator(market)
    operator.accounts.create(NewAccount("acct", Decimal(100)))
    token = operator.clusters.create(NewCluster("acct", "first", "vm", "c")).token
    asyncio.run(Tenant(market).vm.declare("c", CapacityDeclaration(8, Decimal(3))))
    market.clock.advance(10 * NS_PER_S)  # type: ignore[attr-defined]
    market.tick("first")
    balance, rates = market.figures.balance("acct"), market.figures.rates("first")
    last = market.figures.last("first")
    market.db.close()

    again = make_market(first_island=REFERENCE_ISLAND)  # a restart: a new clock at T0
    assert again.island_ids() == ["first"]  # the configured island is for a new store only
    assert again.cluster_for_token(token) == "c"
    assert (again.figures.balance("acct"), again.figures.rates("first")) == (balance, rates)
    assert again.figures.last("first") == last
    # one node of 8 GPUs at the reserve, billed 10 s (10,000 ms) in advance
    assert balance == 100 * USD * LEDGER_UNITS_PER_MICRO - USD * 8 * 10_000
    assert rates == {"c": USD}
