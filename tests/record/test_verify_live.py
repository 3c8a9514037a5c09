"""`burstmarket verify` on a live server's history: the real service on the manual clock ticks a
contested island (windows holding nodes, a gang against single nodes, the reserve changed
midway), its exporter writes the history, and every exported tick re-runs from it alone to what
was recorded."""

from __future__ import annotations

import duckdb
import pytest

from burstmarket.history.layout import exported_through
from tests.conftest import Server, StartServer, run_in_process
from tests.e2e.support import (
    declare,
    eventually,
    five_minute_ticks,
    make_account,
    make_cluster,
    make_island,
    ok,
    set_bid,
    submit_job,
    tick,
    ticks,
)

ISLAND = "vl"


@pytest.fixture
def five_minute_server(start_server: StartServer) -> Server:
    """Five-minute ticks: each tick closes the history window of the one before."""
    return five_minute_ticks(start_server, "2026-02-01T22:00:00Z")


def rows(server: Server, sql: str) -> list[tuple[object, ...]]:
    root = server.data_dir / "history"
    with duckdb.connect() as con:
        return con.execute(sql.replace("{root}", str(root))).fetchall()


def test_verify_re_runs_a_live_servers_exported_ticks(five_minute_server: Server) -> None:
    server = five_minute_server
    make_island(server, ISLAND, nodes=3, reserve=1.0)
    make_account(server, "vl-acct", balance=50_000)
    a = make_cluster(server, "vl-acct", ISLAND, "vm", "vl-a")
    b = make_cluster(server, "vl-acct", ISLAND, "vm", "vl-b")
    gang = make_cluster(server, "vl-acct", ISLAND, "k8s", "vl-gang")
    ok(declare(server, a, 16, 3.0))
    ok(declare(server, b, 8, 2.0))
    set_bid(server, gang, 2.5)
    submit_job(server, gang, "pair", 2)
    ticks(server, 4, ISLAND)
    # the operator raises the reserve; the losers bid up, to win once the windows end
    reserve = {"reserve_price": 1.5}
    ok(server.client.put(f"/api/admin/islands/{ISLAND}", json=reserve, headers=server.operator()))
    ok(declare(server, b, 16, 4.5))
    set_bid(server, gang, 5.0)
    ticks(server, 16, ISLAND)
    last = tick(server, island=ISLAND)
    assert last["tick"] == 21

    # every window but the last tick's is closed: the exporter writes through tick 20
    root = server.data_dir / "history"
    eventually(
        lambda: (
            (exported_through(root, ISLAND) or None)
            and rows(server, "SELECT max(tick) FROM '{root}/ticks/island=vl/**/*.parquet'")[0][0]
            == 20
        ),
        "the history through tick 20",
        server,
    )
    ran = run_in_process("verify", "--history", str(root), "--island", ISLAND)
    assert ran.stdout.splitlines() == ["verified 20 ticks on 1 islands: 0 differences"], (
        ran.stdout + ran.stderr
    )
    assert ran.returncode == 0
    # and the server's own default island beside it
    ran = run_in_process("verify", "--history", str(root))
    assert ran.stdout.endswith(" islands: 0 differences\n"), ran.stdout + ran.stderr
    assert ran.returncode == 0

    # what made it worth checking is in the record: the reserve as each tick priced it, the
    # auction contested, windows releasing nodes into the ladder
    terms = rows(
        server,
        "SELECT tick, reserve_price FROM '{root}/islands/island=vl/**/*.parquet' ORDER BY tick",
    )
    assert [(t, float(str(r))) for t, r in terms] == [(1, 1.0), (5, 1.5)]
    ((units, releases, pays),) = rows(
        server,
        "SELECT count(*) FILTER (WHERE part = 'unit' AND auction = 'now'), "
        "count(*) FILTER (WHERE part = 'release'), "
        "(SELECT count(DISTINCT cluster) FROM '{root}/cluster_rates/island=vl/**/*.parquet') "
        "FROM '{root}/bids/island=vl/**/*.parquet'",
    )
    assert units > 0
    assert releases > 0
    assert pays == 3
