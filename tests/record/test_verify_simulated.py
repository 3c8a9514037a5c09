"""`burstmarket verify` on a simulated week (docs/history.md "The record"): every tick re-runs
from the history alone to what was recorded; a copy with one rate or one bid changed fails,
naming the tick; arguments it cannot use are refused with exit 2."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from tests.conftest import BURSTMARKET, run_in_process

# the module's week is simulated once, by its first test: minutes, so it starts early
pytestmark = [pytest.mark.timeout(900), pytest.mark.early]

DIFFERENCE = re.compile(r"island (?P<island>\S+) tick (?P<tick>\d+) (?P<table>\w+): (?P<what>.*)")
ONE = timedelta(days=1)
SUMMARY = re.compile(r"verified (\d+) ticks on (\d+) islands: (\d+) differences")


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seven days at hourly ticks: 168 ticks on each demo island (a Kubernetes grant's 2-hour
    window still spans a tick, so windows release nodes into the ladder)."""
    out = tmp_path_factory.mktemp("week") / "data"
    args = ["simulate", "--days", "7", "--tick-seconds", "3600", "--out", str(out), "--seed", "3"]
    done = subprocess.run(
        [str(BURSTMARKET), *args],
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "history"


def verify(*args: str) -> tuple[int, list[re.Match[str]], tuple[int, int, int]]:
    ran = run_in_process("verify", *args)
    lines = ran.stdout.splitlines()
    assert lines, ran.stderr
    summary = SUMMARY.fullmatch(lines[-1])
    assert summary is not None, ran.stdout + ran.stderr
    found = [DIFFERENCE.fullmatch(line) for line in lines[:-1]]
    assert all(found), lines[:-1]
    ticks, islands, count = (int(n) for n in summary.groups())
    assert count == len(found)
    return ran.returncode, [m for m in found if m is not None], (ticks, islands, count)


def query(sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect() as con:
        return con.execute(sql).fetchall()


def files(root: Path, table: str) -> str:
    return f"read_parquet('{root}/{table}/**/*.parquet', hive_partitioning = true)"


def rewrite(path: Path, column: str, value: str, where: str) -> None:
    """Rewrite one Parquet file of the history with DuckDB, `column` set to `value` on the rows
    `where` holds: the tampering verify must catch."""
    temp = path.with_suffix(".tampered")
    query(
        f"COPY (SELECT * REPLACE (CASE WHEN {where} THEN {value} ELSE {column} END AS {column}) "
        f"FROM read_parquet('{path}', hive_partitioning = false)) TO '{temp}' (FORMAT parquet)"
    )
    temp.replace(path)


def tampered_copy(week: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "history"
    shutil.copytree(week, copy)
    return copy


def test_verify_re_runs_every_tick_of_a_simulated_week_to_what_was_recorded(week: Path) -> None:
    code, found, (ticks, islands, _) = verify("--history", str(week))
    assert [m.group(0) for m in found] == []
    assert code == 0
    ((recorded,),) = query(f"SELECT count(*) FROM {files(week, 'ticks')}")
    assert (ticks, islands) == (recorded, 2)
    assert ticks == 2 * 7 * 24
    # the record holds what made those ticks worth re-running: contested auctions, windows
    # releasing nodes into the published ladder, a core above VCG somewhere
    ((losers, releases),) = query(
        f"SELECT count(*) FILTER (WHERE part = 'unit'), count(*) FILTER (WHERE part = 'release') "
        f"FROM {files(week, 'bids')}"
    )
    assert losers > 0
    assert releases > 0
    # one island, its second day: only its ticks
    ((first,),) = query(f"SELECT min(time) FROM {files(week, 'ticks')}")
    assert isinstance(first, datetime)
    day = first.astimezone(UTC).date() + timedelta(days=1)
    code, found, (ticks, islands, _) = verify(
        "--history", str(week), "--island", "edge", "--start", str(day), "--end", str(day + ONE)
    )
    assert (code, found) == (0, [])
    ((that_day,),) = query(
        f"SELECT count(*) FROM {files(week, 'ticks')} WHERE island = 'edge' "
        f"AND time >= TIMESTAMPTZ '{day} 00:00:00+00' "
        f"AND time < TIMESTAMPTZ '{day + ONE} 00:00:00+00'"
    )
    assert (ticks, islands) == (that_day, 1)
    assert that_day == 24


def test_one_rate_changed_in_cluster_rates_fails_naming_its_tick(
    week: Path, tmp_path: Path
) -> None:
    copy = tampered_copy(week, tmp_path)
    ((island, tick, cluster, rate, path),) = query(
        f"SELECT island, tick, cluster, rate, filename FROM "
        f"read_parquet('{copy}/cluster_rates/**/*.parquet', hive_partitioning = true, "
        "filename = true) ORDER BY tick DESC, island, cluster LIMIT 1 OFFSET 100"
    )
    assert isinstance(rate, Decimal)
    rewrite(Path(str(path)), "rate", "rate + 0.000001", f"tick = {tick} AND cluster = '{cluster}'")
    code, found, (_, _, count) = verify("--history", str(copy))
    assert code == 1
    assert count > 0
    assert {(m["island"], int(m["tick"])) for m in found} == {(island, tick)}
    assert f"cluster {cluster} rate: recorded {rate + Decimal('0.000001')}, re-run {rate}" in [
        m["what"] for m in found if m["table"] == "cluster_rates"
    ]


def test_one_bid_changed_in_bids_fails_naming_its_tick(week: Path, tmp_path: Path) -> None:
    copy = tampered_copy(week, tmp_path)
    # a unit that lost (its cluster holds no market node after the tick), small enough to win:
    # bid far higher, it would have won, so the recorded outcome no longer follows
    ((island, tick, unit, path),) = query(
        f"""
        WITH b AS (
            SELECT *, filename FROM read_parquet('{copy}/bids/**/*.parquet',
                hive_partitioning = true, filename = true) WHERE auction = 'now'
        ), supply AS (SELECT island, tick, nodes, price FROM b WHERE part = 'supply')
        SELECT b.island, b.tick, b.unit, b.filename
        FROM b JOIN supply AS s USING (island, tick)
        WHERE b.part = 'unit' AND b.price >= s.price AND b.nodes <= s.nodes
          AND NOT EXISTS (
              SELECT 1 FROM {files(copy, "allocations")} AS a
              WHERE a.island = b.island AND a.tick = b.tick AND a.cluster = b.cluster
                AND a.kind <> 'base_load'
          )
        ORDER BY b.tick DESC, b.island, b.age LIMIT 1
        """
    )
    where = f"tick = {tick} AND auction = 'now' AND part = 'unit' AND unit = '{unit}'"
    rewrite(Path(str(path)), "price", "999.000000", where)
    code, found, (_, _, count) = verify("--history", str(copy))
    assert code == 1
    assert count > 0
    assert {(m["island"], int(m["tick"])) for m in found} == {(island, tick)}
    assert "allocations" in {m["table"] for m in found}


def test_arguments_verify_cannot_use_are_refused_with_exit_2(week: Path, tmp_path: Path) -> None:
    cases = [
        (["--history", str(tmp_path / "none")], "--history"),
        (["--history", str(week), "--island", "mars"], "--island"),
        (["--history", str(week), "--start", "2026-11-27", "--end", "2026-11-26T12:00"], "--end"),
        (["--history", str(week), "--start", "yesterday"], "--start"),
    ]
    for args, named in cases:
        ran = run_in_process("verify", *args)
        assert ran.returncode == 2, (args, ran.stdout, ran.stderr)
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("burstmarket verify: ")
        assert named in lines[0]
        assert ran.stdout == ""
