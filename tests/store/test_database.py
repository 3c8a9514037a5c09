"""The store: schema versioned and upgraded on start; one transaction, all or nothing."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

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
        "core_rounds",
        "core_exact",
    ],
    "cluster_rates": ["island", "tick", "time", "cluster", "gpus", "rate", "amount_usd"],
    "allocations": ["island", "tick", "time", "cluster", "node", "kind"],
    "ladder": ["island", "tick", "time", "nodes", "gpus", "price"],
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
