"""One definition per table (market/tables.py): the migrated store holds exactly those tables, a
store that drifts from them is refused with every difference named, rows go to the store and
back unchanged through the definitions' mapping, and batches are read by their registered name
only."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from burstmarket.clock import ManualClock
from burstmarket.market.islands import create_island
from burstmarket.market.ledger import DEPOSIT, Entry
from burstmarket.market.lookups import read_cluster
from burstmarket.market.market import Market
from burstmarket.market.model import Cluster, Island, Tranche
from burstmarket.market.tables import (
    CLUSTER_DEMAND,
    CLUSTERS,
    LEDGER,
    NODE_STATE,
    NODES,
    TABLES,
    TICKS,
    TickRow,
)
from burstmarket.settings import IslandSpec, Settings
from burstmarket.store import Database, TableDriftError
from burstmarket.store.rows import fetch, fetch_rows
from tests.conftest import MakeMarket
from tests.constants import T0


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    store = Database(tmp_path / "market.duckdb")
    yield store
    store.close()


def test_the_migrated_store_holds_exactly_the_defined_tables(db: Database) -> None:
    db.check_tables(TABLES)
    with db.read() as cur:
        names = {
            name for (name,) in cur.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        }
    assert names == {t.name for t in TABLES} | {"schema_version"}


def test_a_store_that_drifted_is_refused_with_every_difference_named(db: Database) -> None:
    with db.write() as cur:
        cur.execute("ALTER TABLE ticks ADD COLUMN extra INTEGER")
        cur.execute("ALTER TABLE nodes ALTER COLUMN idx TYPE BIGINT")
        cur.execute("ALTER TABLE ladder DROP COLUMN contestable_at")
        cur.execute("DROP TABLE verdicts")
        cur.execute("CREATE TABLE stray (x INTEGER)")
    with pytest.raises(TableDriftError) as refused:
        Market(db, ManualClock(T0), Settings(clock="manual"))
    message = str(refused.value)
    for difference in (
        "ticks.extra is not defined",
        "nodes.idx is BIGINT NOT NULL in the store, defined INTEGER NOT NULL",
        "ladder.contestable_at is not in the store",
        "no table verdicts",
        "table stray is not defined",
    ):
        assert difference in message


def test_rows_go_to_the_store_and_back_unchanged(db: Database) -> None:
    with db.write() as cur:
        create_island(cur, Island("i", 8, 3, 1_000_000, None), T0)
        cur.execute(
            "INSERT INTO clusters (id, account, island, kind, token_hash, created_at) "
            "VALUES ('c', 'a', 'i', 'vm', 'h', 0)"
        )
    with db.read() as cur:
        fresh = NODES.from_tuples(*fetch_rows(cur, "island_nodes", island="i"))
    assert [(n.id, n.idx, n.cluster, n.billed_until) for n in fresh] == [
        ("i-n0000", 0, None, None),
        ("i-n0001", 1, None, None),
        ("i-n0002", 2, None, None),
    ]
    held = replace(
        fresh[1],
        cluster="c",
        job=None,
        granted_at=T0,
        window_ends_at=T0 + 1,
        locked_price=2_500_000,
        commit_price=2_500_000,
        commit_ends_at=T0 + 2,
        service="cordoned",
        owed_until=T0 + 3,
        billed_until=T0 + 4,
    )
    cluster = Cluster(
        "c",
        "a",
        "i",
        "vm",
        16,
        2_000_000,
        [Tranche(1, 5, 7), Tranche(1, 9, 8)],
        None,
        None,
        None,
        None,
    )
    units = -(10**30)  # beyond 64 bits: HUGEINT in the store, DECIMAL(38, 0) on the way
    with db.write() as cur:
        NODES.update(cur, [held], NODE_STATE)
        CLUSTERS.update(cur, [cluster], CLUSTER_DEMAND)
        LEDGER.insert(cur, [Entry(at=T0, account="a", kind=DEPOSIT, units=units)])
    with db.read() as cur:
        by_tuples = NODES.from_tuples(*fetch_rows(cur, "island_nodes", island="i"))
        by_row = [NODES.from_row(r) for r in fetch(cur, "cluster_nodes", cluster="c")]
        assert read_cluster(cur, "c") == cluster
        assert cur.execute("SELECT sum(units) FROM ledger").fetchone() == (units,)
    assert by_tuples == [fresh[0], held, fresh[2]]
    assert by_row == []  # out of service: not delivered to its cluster


def test_a_batch_schema_is_non_nullable_where_the_column_is_not_null() -> None:
    schema = NODES.schema()
    assert [f.name for f in schema] == [c.name for c in NODES.columns]
    assert {f.name for f in schema if not f.nullable} == {"island", "id", "idx"}
    assert TICKS.schema().field("time").type == pa.timestamp("us", tz="UTC")
    assert LEDGER.schema().field("ts").nullable is False  # Entry.at, stored as ts


def test_a_batch_is_read_only_by_its_registered_name(make_market: MakeMarket) -> None:
    """The store turns DuckDB's replacement scan off: a whole market (an island, a tick) writes
    every batch by the name it registers, and a batch is there only for its own statement."""
    market = make_market(first_island=IslandSpec("solo", 8, 2, 1_000_000, None))
    db = market.db
    market.tick("solo")
    with db.read() as cur:
        assert cur.execute("SELECT count(*) FROM nodes WHERE island = 'solo'").fetchone() == (2,)
        assert cur.execute("SELECT count(*) FROM ticks").fetchone() == (1,)
        batch = pa.table({"x": [1]})  # noqa: F841 - a scan by variable name must not find it
        with pytest.raises(duckdb.CatalogException, match="batch"):
            cur.execute("SELECT * FROM batch")
    with pytest.raises(duckdb.InvalidInputException, match="new_ticks"), db.write() as cur:
        cur.execute("SELECT * FROM new_ticks")  # registered with the writer, empty after use
    market.tick("solo")  # and the next write registers it again, the failure rolled it back


def test_a_failing_batch_raises_its_own_error_and_leaves_the_store_writable(db: Database) -> None:
    """The statement's error is the one raised (a full disk must read as one); the batch's
    first registration rolled back with it, the next write of the table registers again."""
    row = TickRow(
        "i",
        1,
        datetime(2025, 1, 1, tzinfo=UTC),
        None,
        None,
        None,
        0,
        0,
        0,
        Decimal(1),
        Decimal(10),
        1,
        True,
    )
    with pytest.raises(duckdb.ConstraintException), db.write() as cur:
        TICKS.insert(cur, [row, replace(row, gpus=8)])  # the same (island, tick) twice
    with db.write() as cur:
        TICKS.insert(cur, [row])
    with pytest.raises(duckdb.ConstraintException), db.write() as cur:
        TICKS.insert(cur, [replace(row, gpus=8)])  # the same (island, tick) again
    with db.write() as cur:
        TICKS.insert(cur, [replace(row, tick=2)])
    with db.read() as cur:
        found = cur.execute("SELECT tick, gpus FROM ticks ORDER BY tick").fetchall()
    assert found == [(1, 0), (2, 0)]
