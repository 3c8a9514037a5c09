"""Receipts over the real server (docs/api.md `GET /api/receipts`): each tick's receipt adds up
to what `GET /api/billing` billed for the market, names no other cluster, explains the core's
addition with its coalition, reads by tick and by range (refusing a bad one `invalid`), and is
written to the Parquet history as the `receipts` table."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from burstmarket.client import SyncTenantClient
from tests.conftest import Server, StartServer
from tests.e2e.support import (
    declare,
    eventually,
    five_minute_ticks,
    make_account,
    make_cluster,
    make_island,
    ok,
    read_history,
    refused,
    set_bid,
    submit_job,
    tick,
)

FIVE_MINUTES = timedelta(minutes=5)
PARTS = ("reserve", "displaced", "core", "protected")


@pytest.fixture
def five_minute_server(start_server: StartServer) -> Server:
    """Five-minute ticks from 23:40 UTC: each tick closes the window of the one before."""
    return five_minute_ticks(start_server, "2026-01-31T23:40:00Z")


def _receipts(server: Server, auth: dict[str, str], **params: Any) -> list[Any]:
    response = server.client.get("/api/receipts", params=params, headers=auth)
    assert response.status_code == 200, response.text
    rows: list[Any] = json.loads(response.text, parse_float=Decimal)
    return rows


def test_receipts_add_up_to_the_bill_and_name_only_price_levels(
    five_minute_server: Server,
) -> None:
    server = five_minute_server
    make_island(server, "rc", nodes=2, reserve=1.0)
    make_account(server, "rc-acct", balance=10_000)
    a = make_cluster(server, "rc-acct", "rc", "vm", "rc-a")
    b = make_cluster(server, "rc-acct", "rc", "vm", "rc-b")
    gang = make_cluster(server, "rc-acct", "rc", "k8s", "rc-gang")
    # two single nodes at 6 beat a gang of two at 5.5 (over the reserve: 40 + 40 > 72)
    ok(declare(server, a, 8, 6))
    ok(declare(server, b, 8, 6))
    set_bid(server, gang, 5.5)
    submit_job(server, gang, "both", 2)
    ids = {ok(server.client.get("/api/cluster", headers=h))["id"] for h in (b, gang)}
    first = tick(server, island="rc")
    for _ in range(3):  # the windows hold the nodes: protected, at their lock
        last = tick(server, island="rc")

    rows = _receipts(server, a)
    assert [r["tick"] for r in rows] == list(range(first["tick"], last["tick"] + 1))
    for row in rows:
        units = row["parts_units"]
        assert sum(units[p] for p in PARTS) == row["amount_units"]
        assert sum(row["parts"][p] for p in PARTS) == row["amount_usd"]
        for level in [*row["displaced"], *row["protected_displaced"]]:
            assert set(level) == {"price", "nodes"}
    # the first tick: the reserve, VCG's displaced gang and the core's addition, 5.5 in all
    won = rows[0]
    assert (won["nodes"], won["gpus"], won["rate"]) == (1, 8, Decimal("5.5"))
    assert won["parts_units"] == {
        "reserve": 8 * 300_000 * 1_000_000,
        "displaced": 32 * 300_000 * 1_000_000,
        "core": 4 * 300_000 * 1_000_000,
        "protected": 0,
    }
    assert won["displaced"] == [
        {"price": Decimal("5.5"), "nodes": 2},
        {"price": Decimal(6), "nodes": -1},
    ]
    assert won["core"] == {"coalition": [{"price": Decimal("5.5"), "nodes": 2}], "value": 72}
    # later ticks: both nodes under their windows, and one node alone keeps the gang of two
    # out of nothing: each pays for what it displaces, nothing over the reserve, under its lock
    held = rows[-1]
    assert held["rate"] == 1
    assert held["parts_units"]["protected"] == held["amount_units"]
    assert (held["displaced"], held["protected_displaced"], held["core"]) == ([], [], None)
    assert held["capped"] is False

    # the same money as the bill's market rows over the same ticks
    start = datetime.fromisoformat(first["time"])
    end = datetime.fromisoformat(last["time"]) + FIVE_MINUTES
    billing = ok(
        server.client.get(
            "/api/billing",
            params={"start": start.isoformat(), "end": end.isoformat(), "granularity": "5m"},
            headers=a,
        )
    )
    market = sum(r["amount_units"] for r in billing if r["kind"] == "market")
    assert sum(r["amount_units"] for r in rows) == market > 0

    # never another cluster's id, account or name
    for h in (a, b):
        text = server.client.get("/api/receipts", headers=h).text
        assert not any(name in text for name in (*ids, "rc-acct", "rc-b", "rc-gang"))

    # by tick, by range, the newest `limit`; the typed client reads the same
    assert [r["tick"] for r in _receipts(server, a, tick=first["tick"])] == [first["tick"]]
    assert [r["tick"] for r in _receipts(server, a, limit=1)] == [last["tick"]]
    window = {"start": first["time"], "end": (start + FIVE_MINUTES).isoformat()}
    assert [r["tick"] for r in _receipts(server, a, **window)] == [first["tick"]]
    token = a["Authorization"].removeprefix("Bearer ")
    with SyncTenantClient(server.url, token=token) as client:
        typed = client.receipts(tick=first["tick"])
    assert typed[0].core is not None
    assert typed[0].core.coalition[0].nodes == 2
    assert typed[0].amount_units == won["amount_units"]

    # refusals: a range that ends before it starts, a tick beside a range, a limit past 10,000
    since = len(server.refused_lines())
    backwards = {"start": window["end"], "end": window["start"]}
    response = server.client.get("/api/receipts", params=backwards, headers=a)
    assert refused(server, response, 422, "invalid", since)["field"] == "start"
    since = len(server.refused_lines())
    both = {"tick": 1, "start": window["start"]}
    response = server.client.get("/api/receipts", params=both, headers=a)
    assert refused(server, response, 422, "invalid", since)["field"] == "tick"
    since = len(server.refused_lines())
    response = server.client.get("/api/receipts", params={"limit": 10_001}, headers=a)
    refused(server, response, 422, "invalid", since)

    # the history: the closed windows' receipts, readable with DuckDB
    tree = server.data_dir / "history" / "receipts"
    found = eventually(
        lambda: list(tree.glob("island=rc/month=*/*.parquet")), "receipts history", server
    )
    assert found
    a_id = ok(server.client.get("/api/cluster", headers=a))["id"]
    history = read_history(
        f"SELECT tick, amount_units::HUGEINT, reserve_units + displaced_units + core_units"
        f" + protected_units, displaced, coalition, island "
        f"FROM read_parquet('{tree}/**/*.parquet', hive_partitioning = true) "
        f"WHERE cluster = '{a_id}' ORDER BY tick"
    )
    assert history
    by_tick = {r["tick"]: r for r in rows}
    for number, amount, parts, _, _, island in history:
        assert island == "rc"
        assert amount == parts == by_tick[number]["amount_units"]
    number, _, _, displaced, coalition, _ = history[0]
    assert number == first["tick"]
    assert displaced == [
        {"price": Decimal("5.500000"), "nodes": 2},
        {"price": Decimal("6.000000"), "nodes": -1},
    ]
    assert coalition == [{"price": Decimal("5.500000"), "nodes": 2}]
