"""`burstmarket simulate` and `burstmarket export`, run as commands, read back with DuckDB: two
whole UTC days of history, every analyst query (docs/analysts.md) on it with the right
GPU-hours, its data dictionary against the real files, nothing stray beside it, and the
service serving it."""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from burstmarket.history import scan
from burstmarket.history.dictionary import HISTORY, PARTITIONS
from burstmarket.history.layout import ACCOUNT_ROWS
from burstmarket.history.layout import TABLES as history_tables
from burstmarket.history.scan import schema
from burstmarket.simulation import population
from tests import docs
from tests.conftest import BURSTMARKET, StartServer, run_in_process

pytestmark = pytest.mark.early  # a simulation of minutes: handed out first

TABLES = ("ticks", "cluster_rates", "allocations", "ladder", "receipts")


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
    """Two days of history at hourly ticks: 48 ticks per island (the default 30-minute ticks
    cost the fast loop twice the time and test nothing more). The data dir is named `data`, so
    docs/analysts.md's queries run on it as written from the folder holding it."""
    out = tmp_path_factory.mktemp("simulated") / "data"
    printed = run(
        "simulate", "--days", "2", "--tick-seconds", "3600", "--out", str(out), "--seed", "7"
    )
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
        # consecutive tick numbers, every one of them exported, the last one's window too
        assert (count, first, distinct, last) == (48, 1, 48, 48)
    # two whole UTC days, midnight to midnight, on both islands
    spans = query(
        f"SELECT island, min(time), max(time) FROM {parquet(history, 'ticks')} "
        "GROUP BY island ORDER BY island"
    )
    for _, first_time, last_time in spans:
        assert isinstance(first_time, datetime)
        assert first_time.astimezone(UTC).time() == dt_time(0, 0)
        assert last_time == first_time + timedelta(days=2) - timedelta(hours=1)
    # a contested market: most ticks clear above the reserve, and the vwap moves
    moving = query(
        f"SELECT island, count(*) FILTER (WHERE vwap > reserve_price), count(DISTINCT vwap) "
        f"FROM {parquet(history, 'ticks')} GROUP BY island ORDER BY island"
    )
    for island, above, distinct_vwaps in moving:
        assert above >= 10, island
        assert distinct_vwaps >= 5, island
    # nobody pays below the reserve in force at that tick, but for nodes locked under their
    # window at a price the operator's newer reserve overtook (docs/market.md: the lock wins): a
    # cluster's rate is over all its market nodes, so only one holding no such node this tick
    # must pay at least the reserve
    below = query(
        f"SELECT count(*) FILTER (WHERE r.rate < t.reserve_price), count(*) "
        f"FROM {parquet(history, 'cluster_rates')} r "
        f"JOIN {parquet(history, 'ticks')} t USING (island, tick) "
        f"WHERE NOT EXISTS (SELECT 1 FROM {parquet(history, 'allocations')} a "
        "WHERE a.island = r.island AND a.tick = r.tick AND a.cluster = r.cluster "
        "AND a.kind = 'protected')"
    )
    ((under, checked),) = below
    assert (under, checked > 100) == (0, True)


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
        # a tenant bought a base load block on its own and ran jobs smaller than a node on it
        bought = con.execute(
            "SELECT count(*) FROM base_load_blocks WHERE origin = 'purchase' "
            "AND cluster LIKE '%-base-k8s'"
        ).fetchone()
        small = con.execute(
            "SELECT count(DISTINCT j.name) FROM jobs j JOIN job_events e "
            "ON e.cluster = j.cluster AND e.job = j.name "
            "WHERE j.gpus_per_pod IS NOT NULL AND e.type = 'Provisioned'"
        ).fetchone()
    assert jobs.get("finished", 0) >= 5
    assert jobs.get("running", 0) >= 1
    assert events.get("Provisioned", 0) >= 5
    assert bought == (1,)  # its term (a week) outlasts the two days
    assert small is not None
    assert small[0] >= 5


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


def test_a_kubernetes_tenant_valued_under_its_reserve_is_refused_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    """The population draws a few tenants at or under their island's reserve (population.py
    `valuation`); with seed 5 one is a Kubernetes tenant. Its limit price is refused
    `bid-too-low` as it starts, and the simulation runs to its end rather than stopping there."""
    seed = 5
    reserves = {plan.id: plan.reserve_price for plan in population.ISLANDS}
    under = [
        spec.name
        for spec in population.draw(seed, list(population.ISLANDS))
        if spec.kind == "k8s" and spec.value < reserves[spec.island]
    ]
    assert under, "seed 5 no longer draws a Kubernetes tenant under its reserve"
    out = tmp_path / "data"
    args = ["--days", "0.1", "--tick-seconds", "1800", "--out", str(out), "--seed", str(seed)]
    printed = run("simulate", *args)
    assert "history in" in printed
    log = (out / "simulate.log").read_text()
    for name in under:
        assert f"REFUSED reason=bid-too-low cluster={name} " in log


def test_commands_explain_themselves() -> None:
    helps = {}
    for command in ("serve", "clear", "simulate", "export"):
        done = run_in_process(command, "--help")
        assert done.returncode == 0, done.stderr
        helps[command] = done.stdout
        assert "--help" in helps[command]
    assert "--simulate" in helps["serve"]
    assert "--speed" in helps["serve"]
    assert "--days" in helps["simulate"]


def test_nothing_but_the_history_lies_where_a_reader_globs(simulated: Path) -> None:
    # no work or trash directory left beside the history: a glob over the data dir reads it all
    assert sorted(p.name for p in simulated.iterdir() if p.is_dir()) == ["history"]
    layout = re.compile(
        rf"history/({'|'.join(history_tables)})/island=(ref|edge|{ACCOUNT_ROWS})/"
        r"month=\d{4}-\d{2}/\d{8}T\d{6}Z_\d{8}T\d{6}Z\.parquet"
    )
    found = [
        str(p.relative_to(simulated))
        for p in simulated.rglob("*")
        if p.is_file() and p.parent != simulated
    ]
    assert found
    assert [f for f in found if not layout.fullmatch(f)] == []
    ((rows,),) = query(
        f"SELECT count(*) FROM read_parquet('{simulated}/**/*.parquet', hive_partitioning = true)"
    )
    ((each,),) = query(
        "SELECT "
        + " + ".join(
            f"(SELECT count(*) FROM {parquet(simulated / 'history', t)})" for t in history_tables
        )
    )
    assert rows == each


def ledger_gpu_hours(simulated: Path, key: str) -> dict[tuple[Any, ...], float]:
    """GPU-hours billed, from the ledger's charge rows (GPU-ms, exact): the truth to check the
    history's figures against."""
    with duckdb.connect(str(simulated / "market.duckdb"), read_only=True) as con:
        rows = con.execute(
            f"SELECT {key}, sum(gpu_ms) / 3600000 FROM (SELECT *, "
            "make_timestamp(ts // 1000) AS billed_at FROM ledger "
            "WHERE kind = 'charge') GROUP BY ALL"
        ).fetchall()
    return {tuple(row[:-1]): float(row[-1]) for row in rows}


def test_every_analyst_query_runs_on_simulated_history_with_the_right_gpu_hours(
    simulated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(simulated.parent)  # the queries read `data/history/...`, as written
    # the last, billing per account per day: tests/record/test_money_record.py
    hourly, per_day, percentiles = (query(text) for text in docs.code("docs/analysts.md", "sql"))
    billed = ledger_gpu_hours(simulated, "island, time_bucket(INTERVAL 1 HOUR, billed_at)")
    # two islands, every hour once the tenants have arrived: they bid at the step after the
    # midnight tick (they come in over its first minutes), are granted the tick after that and
    # billed from then on, 46 hours of the 48
    assert len(hourly) >= 2 * 46
    assert {(island, hour): gpu_hours for island, hour, _, gpu_hours in hourly} == billed
    # an island of 64 nodes of 8 GPUs bills at most 512 GPU-hours an hour; busy, over half
    assert max(g for island, _, _, g in hourly if island == "ref") > 512 / 2
    assert max(g for island, _, _, g in hourly if island == "ref") <= 512
    per_cluster = ledger_gpu_hours(simulated, "cluster, CAST(billed_at AS DATE)")
    assert {(cluster, day): gpu_hours for cluster, day, _, gpu_hours in per_day} == per_cluster
    assert {island for island, *_ in percentiles} == {"edge", "ref"}

    (code,) = docs.code("docs/analysts.md", "python", "# Analysts: the history")
    scope: dict[str, Any] = {}
    exec(code, scope)
    polars_hourly: pl.DataFrame = scope["hourly_vwap"]
    assert polars_hourly["gpu_hours"].to_list() == [row[3] for row in hourly]
    # Polars multiplies in binary floats: the 6th decimal of a mean may round the other way
    assert polars_hourly["vwap"].to_list() == pytest.approx([row[2] for row in hourly], abs=2e-6)
    polars_daily: pl.DataFrame = scope["cost_per_day"]
    assert {(c, d): round(g, 6) for c, d, _, g in polars_daily.rows()} == per_cluster
    # linear interpolation is DuckDB's quantile_cont: the same figures, to the µUSD (DuckDB
    # cuts its DECIMAL answer to 6 decimals)
    polars_percentiles: pl.DataFrame = scope["percentiles"]
    assert len(polars_percentiles) == len(percentiles) == 2
    for ours, theirs in zip(polars_percentiles.rows(), percentiles, strict=True):
        assert ours[0] == theirs[0]
        assert list(ours[1:]) == pytest.approx([float(v) for v in theirs[1:]], abs=1e-6)


def test_the_data_dictionary_names_every_column_of_the_real_files(simulated: Path) -> None:
    history = simulated / "history"
    for table in HISTORY:
        described = query(f"DESCRIBE SELECT * FROM {parquet(history, table.name)}")
        assert [(name, kind) for name, kind, *_ in described] == [
            (c.name, c.type) for c in (*table.columns, *PARTITIONS)
        ], table.name
        for column in table.columns:
            if not column.nullable:
                ((nulls,),) = query(
                    f"SELECT count(*) FROM {parquet(history, table.name)} "
                    f"WHERE {column.name} IS NULL"
                )
                assert nulls == 0, (table.name, column.name)
    # the ladder's later rungs reached the history: windows held every node at some tick
    ((later,),) = query(
        f"SELECT count(*) FROM {parquet(history, 'ladder')} "
        "WHERE contestable_at IS NOT NULL AND contestable_at > time"
    )
    assert later > 0


def test_scan_reads_every_table_as_polars_with_the_dictionary_types(simulated: Path) -> None:
    """`burstmarket.history.scan`: each table's real files, as Polars reads them of itself,
    have the types the dictionary states (decimals exact, times UTC), and the scan, which holds
    the files to those types, gives the rows DuckDB reads, to the µUSD."""
    history = simulated / "history"
    strings = {c.name: pl.String for c in PARTITIONS}
    for table in HISTORY:
        files = history / table.name / "**" / "*.parquet"
        as_read = pl.scan_parquet(files, hive_partitioning=True, hive_schema=strings)
        assert as_read.collect_schema() == schema(table.name), table.name
        frame = scan(table.name, history).collect()
        assert frame.schema == schema(table.name), table.name
        assert list(frame.schema) == [c.name for c in (*table.columns, *PARTITIONS)]
        ((rows,),) = query(f"SELECT count(*) FROM {parquet(history, table.name)}")
        assert frame.height == rows > 0, table.name
    paid = scan("cluster_rates", history).select(pl.col("amount_usd").sum()).collect().item()
    ((summed,),) = query(f"SELECT sum(amount_usd) FROM {parquet(history, 'cluster_rates')}")
    assert paid == summed
    first = scan("ticks", history).select(pl.col("time").min()).collect().item()
    assert first.tzinfo is not None
    assert first.utcoffset() == timedelta(0)


def test_duckdb_and_polars_differ_where_analysts_md_says(simulated: Path, tmp_path: Path) -> None:
    """docs/analysts.md "Where DuckDB and Polars read the same files differently", each point
    on the simulated history."""
    history = simulated / "history"
    rates = scan("cluster_rates", history)
    # quantiles: Polars' default (nearest) is another figure than DuckDB's quantile_cont
    duck = dict(
        query(
            f"SELECT island, quantile_cont(rate, 0.99) FROM {parquet(history, 'cluster_rates')} "
            "GROUP BY island"
        )
    )

    def p99(**how: Any) -> dict[str, float]:
        return dict(
            rates.group_by("island").agg(pl.col("rate").quantile(0.99, **how)).collect().rows()
        )

    linear, nearest = p99(interpolation="linear"), p99()
    assert max(abs(linear[island] - float(duck[island])) for island in duck) <= 1e-6
    assert max(abs(nearest[island] - float(duck[island])) for island in duck) > 1e-6
    # NULLs in a sort: last in DuckDB, first in Polars
    ((last,),) = query(
        f"SELECT vwap FROM (SELECT vwap FROM {parquet(history, 'ticks')} ORDER BY vwap) "
        "QUALIFY row_number() OVER () = count(*) OVER ()"
    )
    assert last is None
    assert scan("ticks", history).sort("vwap").select("vwap").first().collect().item() is None
    # decimal arithmetic
    ((times, divided),) = query(
        "SELECT typeof(any_value(rate * gpus)), typeof(any_value(rate / gpus)) "
        f"FROM {parquet(history, 'cluster_rates')}"
    )
    assert (times, divided) == ("DECIMAL(18,6)", "DOUBLE")
    arithmetic = rates.select(times=pl.col("rate") * pl.col("gpus"), by=pl.col("rate") / 3)
    assert list(arithmetic.collect_schema().values()) == [pl.Decimal(38, 6)] * 2
    # time zone: DuckDB's day is the session's; scan's is UTC
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'America/New_York'")
        days = con.execute(
            "SELECT count(*) FILTER (WHERE CAST(time AS DATE) <> CAST(timezone('UTC', time) "
            f"AS DATE)) FROM {parquet(history, 'ticks')}"
        ).fetchall()
    assert days[0][0] > 0
    polars_days = scan("ticks", history).select(pl.col("time").dt.date()).collect()
    ((utc_days,),) = query(
        f"SELECT list(CAST(timezone('UTC', time) AS DATE) ORDER BY tick, island) "
        f"FROM {parquet(history, 'ticks')}"
    )
    assert sorted(polars_days["time"].to_list()) == sorted(utc_days)
    # partitions: an island named 7 is a number to both, unless told; a string to scan
    part = next((history / "ticks").glob("island=ref/month=*/*.parquet"))
    copy = tmp_path / "ticks" / "island=7" / part.parent.name / part.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(part.read_bytes())
    (_, kind, *_) = query(f"DESCRIBE SELECT island FROM {parquet(tmp_path, 'ticks')}")[0]
    assert kind == "BIGINT"
    guessed = pl.scan_parquet(tmp_path / "ticks" / "**" / "*.parquet", hive_partitioning=True)
    assert guessed.collect_schema()["island"] == pl.Int64
    assert scan("ticks", tmp_path).select("island").collect()["island"].unique().to_list() == ["7"]


def test_simulated_receipts_cover_every_cluster_rate_and_add_up(simulated: Path) -> None:
    """`simulate` writes receipts in the live layout: one per cluster rate, its parts adding
    up to its amount, its amount the rate × GPUs × the tick's interval."""
    history = simulated / "history"
    ((rates, receipts, matched, summed, billed),) = query(
        f"SELECT (SELECT count(*) FROM {parquet(history, 'cluster_rates')}), count(*), "
        f"count(c.cluster), "
        "count(*) FILTER (WHERE reserve_units + displaced_units + core_units + protected_units"
        " = amount_units), "
        "count(*) FILTER (WHERE amount_units = (r.rate * 1000000)::HUGEINT * r.gpus"
        " * (r.tick_seconds * 1000)::BIGINT)"
        f" FROM {parquet(history, 'receipts')} r "
        f"LEFT JOIN {parquet(history, 'cluster_rates')} c USING (island, tick, cluster)"
    )
    assert rates > 100
    assert receipts == matched == summed == billed == rates
    # a coalition is named exactly where the core added something
    ((unexplained,),) = query(
        f"SELECT count(*) FROM {parquet(history, 'receipts')} "
        "WHERE (core_units > 0) != (coalition IS NOT NULL)"
    )
    assert unexplained == 0


def test_the_service_serves_simulated_history_in_its_own_units(
    simulated: Path, start_server: StartServer
) -> None:
    # a service at its default 10-s ticks reads the simulated hourly ticks at their own
    server = start_server("--clock", "manual", data_dir=simulated)
    candles = server.client.get(
        "/api/market/series", params={"island": "ref", "interval": "1d"}
    ).json()
    ticks = parquet(simulated / "history", "ticks")
    days = query(
        f"SELECT sum(gpus * tick_seconds) / 3600 FROM {ticks} WHERE island = 'ref' "
        "GROUP BY CAST(timezone('UTC', time) AS DATE) ORDER BY ALL"
    )
    assert sorted(c["gpu_hours"] for c in candles) == sorted(float(d) for (d,) in days)
    assert [c["closed"] for c in candles] == [True, False]  # the latest tick's day is open
    dictionary = server.client.get("/schema/history.json").json()
    assert [t["name"] for t in dictionary["tables"]] == [t.name for t in HISTORY]
