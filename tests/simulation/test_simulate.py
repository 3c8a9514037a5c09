"""`burstmarket simulate` and `burstmarket export`, run as commands, read back with DuckDB."""

from __future__ import annotations

import subprocess
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from tests.conftest import BURSTMARKET

TABLES = ("ticks", "cluster_rates", "allocations", "ladder")


def run(*args: str) -> str:
    done = subprocess.run(
        [str(BURSTMARKET), *args], capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def query(sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect() as con:
        return con.execute(sql).fetchall()


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Half a day of history at 30-minute ticks: 24 ticks per island."""
    out = tmp_path_factory.mktemp("simulated")
    printed = run("simulate", "--days", "0.5", "--out", str(out), "--seed", "7")
    assert "history in" in printed
    return out


def parquet(root: Path, table: str) -> str:
    return f"read_parquet('{root}/{table}/**/*.parquet', hive_partitioning = true)"


def test_simulate_writes_history_of_both_islands_through_the_real_market(
    simulated: Path,
) -> None:
    history = simulated / "history"
    ticks = query(
        f"SELECT island, count(*), min(tick), max(tick), count(DISTINCT tick) "
        f"FROM {parquet(history, 'ticks')} GROUP BY island ORDER BY island"
    )
    assert [row[0] for row in ticks] == ["edge", "ref"]
    for _, count, first, last, distinct in ticks:
        # consecutive tick numbers; the last window is still open, so not exported yet
        assert (first, distinct, last) == (1, count, count)
        assert 20 <= count <= 24
    # a contested market: most ticks clear above the reserve, and the vwap moves
    moving = query(
        f"SELECT island, count(*) FILTER (WHERE vwap > reserve_price), count(DISTINCT vwap) "
        f"FROM {parquet(history, 'ticks')} GROUP BY island ORDER BY island"
    )
    for island, above, distinct_vwaps in moving:
        assert above >= 10, island
        assert distinct_vwaps >= 5, island
    # nobody pays below the reserve in force at that tick
    below = query(
        f"SELECT count(*) FROM {parquet(history, 'cluster_rates')} r "
        f"JOIN {parquet(history, 'ticks')} t USING (island, tick) "
        f"WHERE r.rate < t.reserve_price"
    )
    assert below == [(0,)]


def test_simulated_tenants_are_vm_and_kubernetes_clusters_with_jobs_coming_and_going(
    simulated: Path,
) -> None:
    history = simulated / "history"
    clusters = {
        row[0] for row in query(f"SELECT DISTINCT cluster FROM {parquet(history, 'allocations')}")
    }
    assert any(c.endswith("-vm") for c in clusters)
    assert any(c.endswith("-k8s") for c in clusters)
    with duckdb.connect(str(simulated / "market.duckdb"), read_only=True) as con:
        jobs = dict(con.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
        events = dict(con.execute("SELECT type, count(*) FROM job_events GROUP BY type").fetchall())
    assert jobs.get("finished", 0) >= 5
    assert jobs.get("running", 0) >= 1
    assert events.get("Provisioned", 0) >= 5


def test_export_copies_a_date_range_in_the_same_layout(simulated: Path, tmp_path: Path) -> None:
    history = simulated / "history"
    ((first, last),) = query(f"SELECT min(time), max(time) FROM {parquet(history, 'ticks')}")
    assert isinstance(first, datetime)
    assert isinstance(last, datetime)
    middle = first + (last - first) / 2
    start, end = first.isoformat(), middle.isoformat()
    out = tmp_path / "export"
    printed = run(
        "export", "--data-dir", str(simulated), "--start", start, "--end", end, "--out", str(out)
    )
    assert "Parquet files written" in printed
    for table in TABLES:
        window = f"WHERE time >= TIMESTAMPTZ '{start}' AND time < TIMESTAMPTZ '{end}'"
        expected = query(
            f"SELECT island, count(*) FROM {parquet(history, table)} {window} "
            "GROUP BY island ORDER BY island"
        )
        got = query(
            f"SELECT island, count(*) FROM {parquet(out, table)} GROUP BY island ORDER BY island"
        )
        assert got, table
        assert got == expected, table


def test_commands_explain_themselves() -> None:
    for command in ("serve", "clear", "simulate", "export"):
        text = run(command, "--help")
        assert "--help" in text
    assert "--simulate" in run("serve", "--help")
    assert "--speed" in run("serve", "--help")
    assert "--days" in run("simulate", "--help")
