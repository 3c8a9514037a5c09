"""The store: schema versioned and upgraded on start; one transaction, all or nothing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from burstmarket.shipped import numbered, sql
from burstmarket.store import Database
from burstmarket.store.database import MIGRATIONS

CONTRACT = {
    "ticks": [
        "island",
        "tick",
        "time",
        "vwap",
        "min",
        "max",
        "gpus",
        "clusters",
        "pending_gpus",
        "reserve_price",
        "tick_seconds",
        "core_rounds",
        "core_exact",
    ],
    "cluster_rates": ["island", "tick", "time", "cluster", "gpus", "rate", "amount_usd"],
    "allocations": ["island", "tick", "time", "cluster", "node", "kind"],
    "ladder": ["island", "tick", "time", "nodes", "gpus", "price", "contestable_at", "later"],
}


def test_a_new_store_is_at_the_latest_schema_and_reopening_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "market.duckdb"
    db = Database(path)
    cur = db.cursor()
    assert cur.execute("SELECT max(version), count(*) FROM schema_version").fetchone() == (
        len(MIGRATIONS),
        len(MIGRATIONS),
    )
    db.close()
    again = Database(path)
    versions = again.cursor().execute("SELECT count(*) FROM schema_version").fetchone()
    assert versions == (len(MIGRATIONS),)
    again.close()


def test_the_migrations_are_the_numbered_schema_files_in_version_order() -> None:
    """No list to keep by hand: a new sql/schema_NNN.sql is the next migration; a number
    missing or given twice stops the start instead of skipping or repeating a step."""
    files = ["schema_010.sql", "island.sql", "schema_002.sql", "schema_001.sql", "schema_1.sql"]
    files += [f"schema_{n:03d}.sql" for n in range(3, 10)]
    assert numbered(files) == tuple(f"schema_{n:03d}" for n in range(1, 11))
    # the store's own, from the shipped sql/ (six when the list was still kept by hand)
    assert MIGRATIONS[:6] == tuple(f"schema_{n:03d}" for n in range(1, 7))
    for broken in (["schema_001.sql", "schema_003.sql"], ["schema_002.sql"]):
        with pytest.raises(ValueError, match="must number"):
            numbered(broken)


def test_market_data_tables_have_the_contract_columns(tmp_path: Path) -> None:
    db = Database(tmp_path / "market.duckdb")
    cur = db.cursor()
    for table, columns in CONTRACT.items():
        found = cur.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $t "
            "ORDER BY ordinal_position",
            {"t": table},
        ).fetchall()
        assert [c for (c,) in found] == columns
    types = dict(
        cur.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'ticks'"
        ).fetchall()
    )
    assert types["vwap"] == "DECIMAL(18,6)"
    assert types["time"] == "TIMESTAMP WITH TIME ZONE"
    db.close()


def test_ticks_written_before_schema_4_learn_their_interval_from_what_they_billed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "market.duckdb"
    with duckdb.connect(str(path)) as con:  # a store as schema 3 left it
        con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for version, name in enumerate(MIGRATIONS[:3], start=1):
            con.execute(sql(name))
            con.execute("INSERT INTO schema_version VALUES (?)", [version])
        con.execute(
            "INSERT INTO ticks VALUES ('a', 1, '2025-01-01 00:00Z', 2, 2, 2, 8, 1, 0, 1),"
            " ('a', 2, '2025-01-01 00:30Z', NULL, NULL, NULL, 0, 0, 0, 1),"
            " ('b', 1, '2025-01-01 00:00Z', NULL, NULL, NULL, 0, 0, 0, 1)"
        )
        # tick 1 of `a` billed one cluster 30 minutes in advance
        con.execute(
            "INSERT INTO ledger (ts, account, cluster, island, tick, kind, period_start,"
            " period_end, gpus, gpu_ms, rate, units) VALUES (0, 'x', 'c', 'a', 1, 'charge', 0,"
            " 1800000000000, 8, 14400000, 2000000, 1)"
        )
    db = Database(path)
    rows = (
        db.cursor()
        .execute("SELECT island, tick, tick_seconds FROM ticks ORDER BY island, tick")
        .fetchall()
    )
    db.close()
    # a tick that billed nobody takes its island's interval (the default on one that never did)
    assert rows == [("a", 1, Decimal("1800")), ("a", 2, Decimal("1800")), ("b", 1, Decimal("10"))]


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    db = Database(tmp_path / "market.duckdb")

    def write_twice() -> None:
        with db.write() as cur:
            cur.execute("INSERT INTO accounts VALUES ('a', 1)")
            cur.execute("INSERT INTO accounts VALUES ('a', 2)")  # primary key: all of it fails

    with pytest.raises(duckdb.Error):
        write_twice()
    assert db.cursor().execute("SELECT count(*) FROM accounts").fetchone() == (0,)
    db.close()
