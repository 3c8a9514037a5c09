"""Parquet history: closed windows exported atomically, compacted per day and month, readable
by DuckDB while it is being written."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import duckdb

from burstmarket.history import HistoryExporter
from burstmarket.history.layout import TABLES
from tests.feed.support import START, MarketDB, backfill, two_clusters

LADDER = ["2.1", "2.2", "2.35"]
TIMED = [t for t in TABLES if t not in ("ledger", "verdicts", "pending")]
"""The tables whose store rows carry their tick's time, as `live` reads them (the others:
tests/record/test_money_record.py)."""
STORE = {"islands": "island_terms"}
"""The store table a history table is exported from, where their names differ."""


def commit(db: MarketDB, ticks: range) -> None:
    db.commit_many("east", ticks, two_clusters, LADDER)


def files(root: Path, table: str) -> list[str]:
    return sorted(
        str(p.relative_to(root / table)) for p in (root / table).rglob("*") if p.is_file()
    )


def history(root: Path, table: str) -> list[tuple[object, ...]]:
    return duckdb.sql(
        f"SELECT * EXCLUDE (month) FROM read_parquet('{root}/{table}/**/*.parquet', "
        "hive_partitioning = true) ORDER BY ALL"
    ).fetchall()


def live(db: MarketDB, table: str, before: str) -> list[tuple[object, ...]]:
    """The live rows of closed windows in the history's column order: each with its tick's
    interval (`ticks` has its own), island last. How the core was reached (`core_rounds`,
    `core_exact`) is the operator's, in the store only."""
    if table == "demand":
        # no request reached these stores (tests/record/test_backtest.py exports a journal)
        assert db.con.execute("SELECT count(*) FROM demand").fetchone() == (0,)
        return []
    interval = "" if table == "ticks" else "t.tick_seconds,"
    operators = ", core_rounds, core_exact" if table == "ticks" else ""
    rows = db.con.execute(
        f"SELECT x.* EXCLUDE (island{operators}), {interval} x.island "
        f"FROM {STORE.get(table, table)} AS x "
        "JOIN ticks AS t ON t.island = x.island AND t.tick = x.tick "
        f"WHERE x.time < TIMESTAMPTZ '{before}' ORDER BY ALL"
    ).fetchall()
    return rows


def test_closed_windows_are_exported_then_compacted_per_month(tmp_path: Path) -> None:
    db = MarketDB(tmp_path / "market.duckdb")
    root = tmp_path / "history"
    exporter = HistoryExporter(db, root)
    commit(db, range(1, 201))  # 23:00:00 .. 23:33:10 on 31 March
    exporter.run()
    assert files(root, "ticks") == [
        "island=east/month=2025-03/20250331T230000Z_20250331T233000Z.parquet"
    ]
    for table in TIMED:
        assert history(root, table) == live(db, table, "2025-03-31 23:30:00+00")

    commit(db, range(201, 221))  # to 23:36:30: one more closed window
    exporter.run()
    assert files(root, "allocations")[-1].endswith("20250331T233000Z_20250331T233500Z.parquet")
    exporter.run()  # nothing new closed: nothing rewritten
    assert len(files(root, "ladder")) == 2

    commit(db, range(221, 401))  # across midnight into April, to 00:06:30
    exporter.run()
    # March closed: its three parts are now one file; April's first window is on its own. A
    # table with no row after the first export has that first part only (a window without rows
    # gets no file, but a table's first does, for a glob to find it typed).
    rowed = ("cluster_rates", "allocations", "ladder", "ticks")
    for table in TABLES:
        assert files(root, table) == (
            [
                "island=east/month=2025-03/20250331T230000Z_20250401T000000Z.parquet",
                "island=east/month=2025-04/20250401T000000Z_20250401T000500Z.parquet",
            ]
            if table in rowed
            else ["island=east/month=2025-03/20250331T230000Z_20250331T233000Z.parquet"]
        )
    for table in TIMED:
        assert history(root, table) == live(db, table, "2025-04-01 00:05:00+00")
    # Sorted by time inside the merged file.
    times = duckdb.sql(
        f"SELECT time FROM '{root}/ticks/island=east/month=2025-03/*.parquet'"
    ).fetchall()
    assert times == sorted(times)
    # Nothing half-written is left among the data files, and no work directory beside them
    # (a reader's `**/*.parquet` from the data dir would count its copies twice).
    assert not [p for p in root.rglob("*") if p.is_file() and p.suffix != ".parquet"]
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["history"]


def test_through_closes_the_window_of_the_last_tick(tmp_path: Path) -> None:
    db = MarketDB(tmp_path / "market.duckdb")
    root = tmp_path / "history"
    commit(db, range(1, 31))  # 23:00:00 .. 23:04:50: one window, still open
    HistoryExporter(db, root).run()
    assert files(root, "ticks") == []
    # the market stopped at 23:05 (a simulation ends): nothing more can come into that window
    HistoryExporter(db, root).run(through=START + timedelta(minutes=5))
    assert files(root, "ticks") == [
        "island=east/month=2025-03/20250331T230000Z_20250331T230500Z.parquet"
    ]
    for table in TIMED:
        assert history(root, table) == live(db, table, "2025-03-31 23:05:00+00")


def test_closed_days_are_compacted_while_the_month_runs(tmp_path: Path) -> None:
    db = MarketDB(tmp_path / "market.duckdb")
    root = tmp_path / "history"
    exporter = HistoryExporter(db, root)
    per_hour = 360
    backfill(db, "east", range(1, 13 * per_hour + 1))  # to 1 April 12:00
    exporter.run()
    for hour in range(13, 16):  # three more exports inside 1 April
        backfill(db, "east", range(hour * per_hour + 1, (hour + 1) * per_hour + 1))
        exporter.run()
    assert len(files(root, "ticks")) == 5
    backfill(db, "east", range(16 * per_hour + 1, 25 * per_hour + 123))  # to 2 April 00:20
    exporter.run()
    assert files(root, "ticks") == [
        "island=east/month=2025-03/20250331T230000Z_20250401T000000Z.parquet",
        "island=east/month=2025-04/20250401T000000Z_20250402T000000Z.parquet",
        "island=east/month=2025-04/20250402T000000Z_20250402T002000Z.parquet",
    ]
    assert history(root, "ticks") == live(db, "ticks", "2025-04-02 00:20:00+00")


def test_a_crash_mid_export_leaves_nothing_counted_twice(tmp_path: Path) -> None:
    db = MarketDB(tmp_path / "market.duckdb")
    root = tmp_path / "history"
    commit(db, range(1, 70))  # 23:00 .. 23:11:20
    HistoryExporter(db, root).run()
    commit(db, range(70, 100))  # to 23:16:20
    # The crash: the next window's rates were written, its `ticks` part never was.
    folder = root / "cluster_rates/island=east/month=2025-03"
    orphan = folder / "20250331T231000Z_20250331T231500Z.parquet"
    db.con.execute(
        f"COPY (SELECT * EXCLUDE (island) FROM cluster_rates WHERE tick < 80) TO '{orphan}'"
    )
    HistoryExporter(db, root).run()
    for table in TIMED:
        assert history(root, table) == live(db, table, "2025-03-31 23:15:00+00")


def test_duckdb_reads_the_history_while_the_exporter_writes_and_compacts(tmp_path: Path) -> None:
    db = MarketDB(tmp_path / "market.duckdb")
    root = tmp_path / "history"
    exporter = HistoryExporter(db, root)
    backfill(db, "east", range(1, 360))
    exporter.run()
    glob = f"{root}/ticks/**/*.parquet"
    stop = threading.Event()
    seen: list[tuple[int, int]] = []
    vanished: list[str] = []

    def read() -> None:
        while not stop.is_set():
            try:
                (row,) = (
                    duckdb.connect()
                    .execute(
                        f"SELECT count(*), count(DISTINCT tick) FROM read_parquet('{glob}', "
                        "hive_partitioning = true)"
                    )
                    .fetchall()
                )
            except duckdb.IOException as exc:
                # A query that listed parts just before a compaction swap may find one gone
                # (documented: rerun it). It never sees a half file or a row twice.
                vanished.append(str(exc))
                continue
            seen.append(row)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        # 28 hours in 2-hour steps: exports every step; March, then 1 April, compacted.
        for step in range(1, 15):
            backfill(db, "east", range(359 + 720 * (step - 1) + 1, 359 + 720 * step + 1))
            reads = len(seen) + len(vanished)
            exporter.run()
            while len(seen) + len(vanished) < reads + 2:  # a read during, then one after
                time.sleep(0.001)
    finally:
        stop.set()
        reader.join()
    assert len(seen) >= 14
    assert all(count == distinct for count, distinct in seen)  # never a row twice
    counts = [count for count, _ in seen]
    assert counts == sorted(counts)  # never a step back: files appear whole, swaps are atomic
    assert all("No such file" in text or "No files found" in text for text in vanished)
    assert len(vanished) < len(seen)
    assert files(root, "ticks")[:2] == [
        "island=east/month=2025-03/20250331T230000Z_20250401T000000Z.parquet",
        "island=east/month=2025-04/20250401T000000Z_20250402T000000Z.parquet",
    ]
