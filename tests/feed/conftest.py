from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.feed.support import FeedServer, MarketDB


@pytest.fixture
def market(tmp_path: Path) -> MarketDB:
    return MarketDB(tmp_path / "market.duckdb")


@pytest.fixture
def server(market: MarketDB, tmp_path: Path) -> Iterator[FeedServer]:
    with FeedServer(market, tmp_path) as running:
        yield running
