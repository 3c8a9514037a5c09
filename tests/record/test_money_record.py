"""The money record in the history (docs/history.md "The ledger, verdicts and pending"): the
`ledger` table is the store's ledger row for row, from `simulate` and from a live server's
export window by window; the ledger's check finds nothing in a true history and names the tick
of a tampered row or rate; docs/analysts.md's billing per account per day is the store's ledger
summed the same way; `verdicts` and `pending` are what the API said at those ticks."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from burstmarket.history.layout import ACCOUNT_ROWS
from burstmarket.history.views import history_views
from burstmarket.money import units_to_usd
from burstmarket.record.difference import Difference
from burstmarket.record.ledger_check import check_ledger
from tests import docs
from tests.conftest import BURSTMARKET, Server, StartServer
from tests.e2e.support import (
    declare,
    eventually,
    make_account,
    make_cluster,
    make_island,
    ok,
    refused,
    tick,
)

pytestmark = pytest.mark.early  # a simulation of minutes: handed out first

STORE_LEDGER = (
    "SELECT ts, tick, account, cluster, kind, block, node, period_start, period_end, gpus, "
    "rate, units, island FROM ledger"
)
"""The store's ledger rows in the history's terms: market ns, µUSD, exact units, the island."""
HISTORY_LEDGER = (
    "SELECT epoch_ns(time), tick, account, cluster, kind, block, node, epoch_ns(period_start), "
    "epoch_ns(period_end), gpus, (rate * 1000000)::BIGINT, amount_units::HUGEINT, island "
    "FROM ledger"
)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A day of history at hourly ticks, base load included (the simulated tenant that buys a
    block). The data dir is `data`, so the docs' queries run on it as written."""
    out = tmp_path_factory.mktemp("money") / "data"
    args = ["simulate", "--days", "1", "--tick-seconds", "3600", "--out", str(out), "--seed", "7"]
    done = subprocess.run(
        [str(BURSTMARKET), *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def views(root: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    history_views(con, root)
    return con


def store_rows(data_dir: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(data_dir / "market.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_the_ledger_table_is_the_stores_ledger_row_for_row_after_simulate(
    simulated: Path,
) -> None:
    history = views(simulated / "history").execute(HISTORY_LEDGER).fetchall()
    store = store_rows(simulated, STORE_LEDGER)
    assert sorted(history, key=repr) == sorted(store, key=repr)  # each row once
    kinds = {row[4] for row in history}
    assert {"deposit", "charge", "base_load", "commitment"} <= kinds
    # the accounts' deposits belong to no island: their partition reads as a NULL island
    assert {row[12] for row in history if row[4] == "deposit"} == {None}
    assert (simulated / "history/ledger/island=__HIVE_DEFAULT_PARTITION__").is_dir()


def test_the_ledger_check_passes_the_history_and_names_the_tick_of_a_tampered_row(
    simulated: Path, tmp_path: Path
) -> None:
    root = simulated / "history"
    assert check_ledger(views(root), None, None, None) == []

    # a copy with one market charge a µUSD higher, and another with one rate changed
    ((island, number, cluster, month),) = (
        views(root)
        .execute(
            "SELECT island, tick, cluster, month FROM ledger WHERE kind = 'charge' "
            "AND period_start = time AND island = 'ref' ORDER BY tick DESC, cluster LIMIT 1"
        )
        .fetchall()
    )
    where = f"tick = {number} AND cluster = '{cluster}' AND kind = 'charge'"
    ledger = tamper(root, tmp_path / "ledger", "ledger", island, month, where, "amount_units")
    found = check_ledger(views(ledger), "ref", None, None)
    assert found
    assert {(d.island, d.tick, d.table) for d in found} == {("ref", number, "ledger")}
    assert any(f"cluster {cluster} charge: recorded" in d.what for d in found)
    assert check_ledger(views(ledger), "edge", None, None) == []  # the other island is intact
    ((at,),) = (
        views(root)
        .execute(f"SELECT time FROM ticks WHERE island = 'ref' AND tick = {number}")
        .fetchall()
    )
    assert check_ledger(views(ledger), "ref", None, at) == []  # the ticks before it are intact
    assert check_ledger(views(ledger), None, at, None) == found

    where = f"tick = {number} AND cluster = '{cluster}'"
    rates = tamper(root, tmp_path / "rates", "cluster_rates", island, month, where, "rate")
    (difference,) = check_ledger(views(rates), None, None, None)
    assert difference == Difference("ref", number, "ledger", difference.what)
    assert difference.what.startswith(f"cluster {cluster} charge: recorded")


def tamper(
    root: Path, copy: Path, table: str, island: str, month: str, where: str, column: str
) -> Path:
    """A copy of the history with `column` of the rows `where` of one month of `table` raised
    by one unit of its last digit, in the one file that holds them (a month holds a file per
    UTC day until the monthly merge)."""
    shutil.copytree(root, copy)
    files = str(copy / table / f"island={island}" / f"month={month}" / "*.parquet")
    ((name,),) = duckdb.sql(
        f"SELECT DISTINCT filename FROM read_parquet('{files}', filename = true) WHERE {where}"
    ).fetchall()
    path = Path(name)
    changed = path.with_suffix(".tmp")
    step = "1" if column == "amount_units" else "0.000001"
    duckdb.sql(
        f"COPY (SELECT * REPLACE (CASE WHEN {where} THEN {column} + {step} ELSE {column} END "
        f"AS {column}) FROM read_parquet('{path}')) TO '{changed}' (FORMAT parquet)"
    )
    changed.replace(path)
    return copy


def test_billing_per_account_per_day_from_the_readme_is_the_stores_ledger(
    simulated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (per_account,) = docs.code("README.md", "sql")
    monkeypatch.chdir(simulated.parent)  # the query reads `data/history/...`, as written
    rows = duckdb.sql(per_account).fetchall()
    store = store_rows(
        simulated,
        "SELECT account, CAST(make_timestamp(period_start // 1000) AS DATE), "
        "sum(units) FILTER (WHERE kind IN ('charge', 'refund', 'hold')), "
        "sum(units) FILTER (WHERE kind = 'base_load'), sum(units) FROM ledger "
        "WHERE kind IN ('charge', 'refund', 'hold', 'base_load') GROUP BY ALL ORDER BY ALL",
    )
    assert [row[:4] for row in rows] == [row[:4] for row in store]
    for (*_, usd), (*_, units) in zip(rows, store, strict=True):
        assert usd == pytest.approx(float(units_to_usd(units)), abs=1e-6)
    assert any(base_load for _, _, _, base_load, _ in rows)  # the block's steps are billed


def test_export_copies_the_ledger_with_its_rows_of_no_island(
    simulated: Path, tmp_path: Path
) -> None:
    root = simulated / "history"
    ((start, end),) = views(root).execute("SELECT min(time), max(time) FROM ledger").fetchall()
    out = tmp_path / "export"
    args = ["export", "--data-dir", str(simulated), "--out", str(out), "--start"]
    args += [start.isoformat(), "--end", (end + timedelta(seconds=1)).isoformat()]
    done = subprocess.run([str(BURSTMARKET), *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    copied = views(out).execute(HISTORY_LEDGER).fetchall()
    assert sorted(copied, key=repr) == sorted(
        views(root).execute(HISTORY_LEDGER).fetchall(), key=repr
    )
    assert any(row[12] is None for row in copied)  # the deposits came too


def test_pending_rows_add_up_to_each_ticks_pending_gpus(simulated: Path) -> None:
    con = views(simulated / "history")
    mismatched = con.execute(
        "SELECT t.island, t.tick, t.pending_gpus, coalesce(sum(p.gpus), 0) FROM ticks AS t "
        "LEFT JOIN pending AS p USING (island, tick) GROUP BY ALL "
        "HAVING t.pending_gpus != coalesce(sum(p.gpus), 0)"
    ).fetchall()
    assert mismatched == []
    ((waited,),) = con.execute("SELECT count(*) FROM pending WHERE gpus > 0").fetchall()
    assert waited > 0
    assert store_rows(simulated, "SELECT count(*) FROM pending") == [
        con.execute("SELECT count(*) FROM pending").fetchone()
    ]


def exported_tick(folder: Path) -> int:
    """The last tick in the history's files under `folder` (0 while there is none, or while a
    compaction swapped the file a read listed)."""
    try:
        ((number,),) = duckdb.sql(
            f"SELECT coalesce(max(tick), 0) FROM read_parquet('{folder}/**/*.parquet')"
        ).fetchall()
    except duckdb.Error:
        return 0
    return int(number)


@pytest.fixture
def five_minute_server(start_server: StartServer) -> Server:
    """Five-minute ticks from 23:40 UTC: each tick closes the window of the one before, and
    the day (and the month) ends between them."""
    return start_server(
        "--clock",
        "manual",
        "--tick-seconds",
        "300",
        env={"BURSTMARKET_CLOCK_START": "2026-01-31T23:40:00Z"},
    )


@pytest.mark.e2e
def test_a_live_servers_money_record_is_its_ledger_and_what_its_api_said(
    five_minute_server: Server,
) -> None:
    server = five_minute_server
    # the partition of the ledger rows of no island is no island's to take
    body = {"gpus_per_node": 8, "nodes": 1, "reserve_price": 1.0}
    reserved = f"/api/admin/islands/{ACCOUNT_ROWS}"
    response = server.client.put(reserved, json=body, headers=server.operator())
    assert refused(server, response, 422, "invalid", 0)["field"] == "id"
    make_island(server, "mr", nodes=2, reserve=1.0)
    make_account(server, "mr-acct", balance=5_000)  # a deposit: a row of no island
    rich = make_cluster(server, "mr-acct", "mr", "vm", "mr-rich")
    poor = make_cluster(server, "mr-acct", "mr", "vm", "mr-poor")
    poor_id = ok(server.client.get("/api/cluster", headers=poor))["id"]
    ok(declare(server, rich, 16, 6))
    ok(declare(server, poor, 8, 3))
    said: dict[int, dict[str, Any]] = {}
    for step in range(4):
        if step == 2:  # the reserve rises over the poor cluster's bid: bid-too-low
            body = {"reserve_price": 4.0}
            path = "/api/admin/islands/mr"
            ok(server.client.put(path, json=body, headers=server.operator()))
        if step == 3:  # a scale-down between ticks: a refund no tick wrote
            ok(declare(server, rich, 8, 6))
        number = tick(server, island="mr")["tick"]
        capacity = server.client.get("/api/vm/capacity", headers=poor)
        said[number] = json.loads(capacity.text, parse_float=Decimal)
    last = max(said)
    tick(server, island="mr")  # closes the window of the last one looked at

    ticks = server.data_dir / "history" / "ticks" / "island=mr"
    eventually(lambda: exported_tick(ticks) >= last, "the ticks looked at exported", server)
    server.stop()  # the store's file is the server's while it runs

    root = server.data_dir / "history"
    con = views(root)
    ((through,),) = con.execute("SELECT max(time) + INTERVAL 5 MINUTE FROM ticks").fetchall()
    history = con.execute(HISTORY_LEDGER).fetchall()
    cutoff = int(through.timestamp()) * 1_000_000_000
    store = [row for row in store_rows(server.data_dir, STORE_LEDGER) if row[0] < cutoff]
    assert sorted(history, key=repr) == sorted(store, key=repr)  # each row once
    assert {(row[4], row[12]) for row in history if row[1] is None} >= {
        ("deposit", None),
        ("refund", "mr"),
    }
    assert check_ledger(con, "mr", None, None) == []

    verdicts = con.execute("SELECT tick, cluster, verdict FROM verdicts ORDER BY ALL").fetchall()
    assert [v for v in verdicts if v[1] == poor_id] == [
        (number, poor_id, "bid-too-low") for number, read in said.items() if read["bid_too_low"]
    ]
    assert any(read["bid_too_low"] for read in said.values())
    pending = {
        number: (gpus, reason, detail)
        for number, cluster, gpus, reason, detail in con.execute(
            "SELECT tick, cluster, gpus, pending_reason, pending_detail FROM pending"
        ).fetchall()
        if cluster == poor_id
    }
    assert set(pending) == set(said)
    for number, read in said.items():
        gpus, reason, detail = pending[number]
        assert (gpus, reason) == (read["pending_gpus"], read["pending_reason"])
        shown = read["pending_detail"]
        assert detail["ceiling"] == Decimal(str(shown["ceiling"]))
        if reason == "bid-too-low":
            assert detail["reserve"] == Decimal(str(shown["reserve_price"]))
        if reason == "outbid":
            assert detail["price"] == Decimal(str(shown["price_to_win"]))
            assert detail["nodes"] == shown["nodes"]
    assert {reason for _, reason, _ in pending.values()} >= {"outbid", "bid-too-low"}
