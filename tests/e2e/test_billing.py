"""Billing figures through the real server on the manual clock (5-minute ticks): a report's rows
add up exactly to its total, a minimum hold is spread over the buckets it covers, figures have
fixed decimals, and prices are read exactly from the JSON text (docs/market.md "Billing",
"Money")."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from tests.conftest import Server
from tests.e2e.support import (
    declare,
    make_account,
    make_cluster,
    make_island,
    ok,
    read_job,
    set_bid,
    submit_job,
    tick,
)

LEDGER_UNITS_PER_USD = Decimal(3_600_000_000_000)


def _rows(server: Server, auth: dict[str, str], granularity: str) -> list[Any]:
    response = server.client.get("/api/billing", params={"granularity": granularity}, headers=auth)
    assert response.status_code == 200, response.text
    rows: list[Any] = json.loads(response.text, parse_float=Decimal)  # the figures as written
    return rows


def _total(rows: list[Any]) -> Decimal:
    exact = sum(Decimal(r["amount_units"]) for r in rows) / LEDGER_UNITS_PER_USD
    return exact.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


def test_a_reports_rows_add_up_exactly_to_its_total(shared_server: Server) -> None:
    """At a reserve of 1.0001 a 5-minute tick of 8 GPUs costs 0.6667333…: rounded row by row,
    six rows made 4.000398 of an exact 4.000400."""
    server = shared_server
    make_island(server, "sums", nodes=1, reserve=1.0001)
    make_account(server, "sums-acct", balance=1000)
    c = make_cluster(server, "sums-acct", "sums", "vm", "sums-c")
    ok(declare(server, c, 8, 2))
    tick(server, count=6, island="sums")
    for granularity in ("5m", "1h", "1d"):
        rows = _rows(server, c, granularity)
        assert sum(r["amount_usd"] for r in rows) == _total(rows) == Decimal("4.0004")
        assert sum(r["gpu_hours"] for r in rows) == Decimal(4)
        for r in rows:  # fixed decimals: never a float's noise
            assert -r["amount_usd"].as_tuple().exponent <= 6
            assert -r["gpu_hours"].as_tuple().exponent <= 6


def test_a_minimum_hold_is_spread_over_the_buckets_it_covers(shared_server: Server) -> None:
    """A gang reclaimed 10 minutes in bills its hold to the hour: 50 minutes, in the ten
    5-minute buckets they cover, not in one."""
    server = shared_server
    make_island(server, "hold", nodes=1, reserve=1.0)
    make_account(server, "hold-acct", balance=1000)
    k = make_cluster(server, "hold-acct", "hold", "k8s", "hold-k")
    vm = make_cluster(server, "hold-acct", "hold", "vm", "hold-vm")
    set_bid(server, k, 3)
    submit_job(server, k, "short", 1)
    granted = tick(server, island="hold")["time"]
    ok(declare(server, vm, 8, 9))
    tick(server, island="hold")
    patch = {"limit_price_per_gpu_hour": 2}  # under the gang's start price: the window goes
    ok(server.client.patch("/api/k8s/jobs/short", json=patch, headers=k))
    tick(server, island="hold")
    assert read_job(server, k, "short")["state"] == "pending"
    rows = _rows(server, k, "5m")
    per_tick = Decimal(8) * 5 / 60  # GPU-hours of one node over 5 minutes
    assert all(r["gpu_hours"] <= per_tick.quantize(Decimal("0.000001")) for r in rows)
    assert sum(r["gpu_hours"] for r in rows) == Decimal(8)  # one hour in all
    # the hour from the grant: 12 buckets of 5 minutes, 13 when it starts inside one
    aligned = datetime.fromisoformat(granted).timestamp() % 300 == 0
    assert len(rows) == (12 if aligned else 13)
    assert sum(r["amount_usd"] for r in rows) == _total(rows)


def test_a_price_is_read_exactly_from_the_json_text(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "exact", nodes=1, reserve=1.0)
    make_account(server, "exact-acct", balance=1000)
    c = make_cluster(server, "exact-acct", "exact", "vm", "exact-c")
    k = make_cluster(server, "exact-acct", "exact", "k8s", "exact-k")
    cases = [
        ("PUT", "/api/vm/capacity", c, '{"max_gpus": 8, "max_price_per_gpu_hour": %s}'),
        ("PUT", "/api/k8s/bid", k, '{"limit_price_per_gpu_hour": %s}'),
        ("POST", "/api/k8s/jobs", k, '{"name": "j", "nodes": 1, "limit_price_per_gpu_hour": %s}'),
    ]
    for method, path, auth, body in cases:
        for price in ("2.99999999999999999999", "3.00001", "1e999999999", "-1e999999999"):
            before = len(server.refused_lines())
            response = server.client.request(
                method,
                path,
                content=(body % price).encode(),
                headers={**auth, "content-type": "application/json"},
            )
            assert response.status_code == 422, (path, price, response.text)
            assert response.json()["error"] == "invalid"
            assert response.json()["field"].endswith("price_per_gpu_hour")
            assert len(server.refused_lines()) == before + 1
    exact = '{"max_gpus": 8, "max_price_per_gpu_hour": 2.99990000000000000000}'
    response = server.client.put(
        "/api/vm/capacity", content=exact.encode(), headers={**c, "content-type": "text/json"}
    )
    assert ok(response)["max_price_per_gpu_hour"] == 2.9999  # trailing zeros are exact
    assert "Traceback" not in server.log()
