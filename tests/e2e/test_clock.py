"""The manual clock across restarts: market time resumes from the store on every start;
BURSTMARKET_CLOCK_START only seeds an empty store. Market time moves only with a committed
tick, and a write between ticks is stamped with the last one's time (docs/market.md "Time")."""

from __future__ import annotations

import threading
import time
from contextlib import suppress
from pathlib import Path

import duckdb
import httpx

from burstmarket.clock import parse_time
from tests.conftest import Server, StartServer
from tests.e2e.support import (
    declare,
    make_account,
    make_cluster,
    ok,
    refused,
    small_disk,
    tick,
)

START = {"BURSTMARKET_CLOCK_START": "2020-01-01T00:00:00Z"}


def test_a_manual_clock_restart_resumes_from_the_stores_last_tick(
    start_server: StartServer,
) -> None:
    server = start_server(env=START)
    make_account(server, "clock-acct")
    assert tick(server, count=3)["time"] == "2020-01-01T00:00:30Z"
    server.stop()

    # without the variable: not the wall clock, the store's own time
    server = start_server(data_dir=server.data_dir)
    assert tick(server)["time"] == "2020-01-01T00:00:40Z"
    assert tick(server)["tick"] == 5
    server.stop()

    # with another start time: a store that has market time ignores it
    server = start_server(
        data_dir=server.data_dir, env={"BURSTMARKET_CLOCK_START": "2030-06-01T00:00:00Z"}
    )
    assert tick(server)["time"] == "2020-01-01T00:01:00Z"
    account = ok(server.client.get("/api/admin/accounts/clock-acct", headers=server.operator()))
    assert account["balance_usd"] == 1000.0


def test_the_clock_start_seeds_an_empty_store(start_server: StartServer) -> None:
    server = start_server(env={"BURSTMARKET_CLOCK_START": "2031-02-03T04:05:06Z"})
    assert tick(server)["time"] == "2031-02-03T04:05:16Z"


def _charges(data_dir: Path) -> list[tuple[int, str, int, int]]:
    """(tick, cluster, charges, longest period in ms) of every tick and cluster billed, read
    from the stopped server's store."""
    con = duckdb.connect(str(data_dir / "market.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT tick, cluster, count(*), max(period_end - period_start) // 1000000 "
            "FROM ledger WHERE kind = 'charge' GROUP BY tick, cluster ORDER BY tick, cluster"
        ).fetchall()
    finally:
        con.close()


def test_refused_ticks_leave_market_time_where_it_was_and_so_does_a_kill_9(
    tmp_path: Path, start_server: StartServer
) -> None:
    with small_disk(tmp_path / "disk", "32m") as disk:
        data = disk.path / "data"
        server = start_server(env=START, data_dir=data)
        try:
            # the store's one island (a second one's tick might still fit on the full disk)
            make_account(server, "time-acct", balance=100_000)
            vm = make_cluster(server, "time-acct", "ref", "vm", "time-vm")
            ok(declare(server, vm, 64, 3))
            assert tick(server, count=2)["time"] == "2020-01-01T00:00:20Z"

            disk.fill()  # no room for the next tick's log
            seen = len(server.refused_lines())
            for _ in range(5):
                answer = server.client.post(
                    "/api/admin/ticks", json={"count": 1}, headers=server.operator()
                )
                refused(server, answer, 503, "store-unavailable", seen)
                seen += 1
            disk.empty()
            # the refused ticks moved nothing: the next one is 10 s on, and bills 10 s
            assert tick(server)["time"] == "2020-01-01T00:00:30Z"

            # a write between ticks is stamped with the last tick's time; kill -9 while the
            # next tick runs: the restart resumes from the last tick that committed
            ok(declare(server, vm, 56, 3))
            cut = threading.Thread(target=_tick_cut_off, args=(server,))
            cut.start()
            time.sleep(0.01)
            server.kill()
            cut.join(60)
            server = start_server(data_dir=data)
            last = ok(server.client.get("/api/market/stats", params={"island": "ref"}))
            assert last["tick"] in (3, 4)  # whether the kill came before its commit or after
            resumed = tick(server)
            assert resumed["tick"] == last["tick"] + 1
            assert _seconds(resumed["time"]) - _seconds(last["time"]) == 10
        finally:
            server.stop()
        charges = _charges(data)
    assert [t for t, *_ in charges] == list(range(1, resumed["tick"] + 1))
    assert {(count, ms) for *_, count, ms in charges} == {(1, 10_000)}  # its own 10 s, once


def _tick_cut_off(server: Server) -> None:
    """Ask for a tick whose answer a kill may cut off (on a client of its own: the kill closes
    the server's)."""
    with httpx.Client(base_url=server.url, timeout=30) as client, suppress(httpx.TransportError):
        client.post("/api/admin/ticks", json={"count": 1}, headers=server.operator())


def _seconds(stamp: str) -> float:
    return parse_time("time", stamp).timestamp()
