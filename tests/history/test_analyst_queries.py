"""docs/analysts.md's queries, run as written against history the exporter wrote."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from burstmarket.history import HistoryExporter
from tests import docs
from tests.feed.support import MarketDB, two_clusters


def blocks(language: str) -> list[str]:
    return docs.code("docs/analysts.md", language, "# Analysts: the history")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[MarketDB, Path]:
    tmp_path = tmp_path_factory.mktemp("analysts")
    db = MarketDB(tmp_path / "market.duckdb")
    db.commit_many("ref", range(1, 400), two_clusters, ["2"])  # 31 March 23:00 to 1 April 00:06
    HistoryExporter(db, tmp_path / "data" / "history").run()
    return db, tmp_path


@pytest.fixture
def history(written: tuple[MarketDB, Path], monkeypatch: pytest.MonkeyPatch) -> MarketDB:
    db, folder = written
    monkeypatch.chdir(folder)  # the queries read `data/history/...`, as on the page
    return db


def test_the_duckdb_queries_run_as_written(history: MarketDB) -> None:
    # the last, billing per account per day, needs ledger rows: tests/record/test_money_record.py
    hourly, per_day, percentiles = (duckdb.sql(text).fetchall() for text in blocks("sql"))
    # The hour 23:00 of 31 March, closed and exported: its vwap by hand from the live table.
    ((vwap,),) = history.con.execute(
        "SELECT round(sum(vwap * gpus) / sum(gpus), 6) FROM ticks "
        "WHERE time < TIMESTAMPTZ '2025-04-01 00:00:00+00'"
    ).fetchall()
    assert hourly[0][0] == "ref"
    assert hourly[0][2] == vwap
    assert len(hourly) == 2
    assert {row[0] for row in per_day} == {"a", "b"}
    assert [row[1].isoformat() for row in per_day if row[0] == "b"] == ["2025-03-31", "2025-04-01"]
    ((island, p50, p90, p99),) = percentiles
    assert island == "ref"
    assert p50 <= p90 <= p99 <= 3.0001


def test_the_polars_queries_run_as_written(history: MarketDB) -> None:
    (code,) = blocks("python")
    scope: dict[str, object] = {}
    exec(code, scope)
    hourly = scope["hourly_vwap"]
    duck = duckdb.sql(blocks("sql")[0]).fetchall()
    assert hourly["vwap"].to_list() == [r[2] for r in duck]  # type: ignore[index]
