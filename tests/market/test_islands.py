"""The operator's islands on a real store: a new island is made whole, in one transaction."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from burstmarket.contract import IslandChange
from burstmarket.market.desks import Operator
from burstmarket.market.tables import ISLANDS
from tests.conftest import MakeMarket


def test_a_new_island_and_its_base_load_cap_are_written_in_one_transaction(
    make_market: MakeMarket, monkeypatch: pytest.MonkeyPatch
) -> None:
    market = make_market(first_island=None)
    db = market.db
    operator = Operator(market)
    new = IslandChange(gpus_per_node=8, nodes=4, reserve_price=Decimal(1), base_load_cap=3)

    def fault(*args: Any) -> None:
        raise OSError("no space left on device")

    # the cap's write fails: nothing of the island is left behind, no island without its cap
    monkeypatch.setattr(ISLANDS, "update", fault)
    with pytest.raises(OSError, match="no space left"):
        operator.islands.put("i", new)
    monkeypatch.undo()
    assert operator.islands.islands() == []
    writes = db.epoch
    made = operator.islands.put("i", new)
    assert db.epoch == writes + 1
    assert (made.nodes, made.base_load_cap) == (4, 3)
