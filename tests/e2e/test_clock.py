"""The manual clock across restarts: market time resumes from the store on every start;
BURSTMARKET_CLOCK_START only seeds an empty store (docs/market.md "Time")."""

from __future__ import annotations

from tests.conftest import StartServer
from tests.e2e.support import make_account, ok, tick

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
