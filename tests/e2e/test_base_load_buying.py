"""Buying base load through the real server: the operator's offer grid, each cell's state as a
tenant reads it, every refusal of a purchase (its code, its figures and one REFUSED line), a
purchase the balance covers and one that takes a security deposit and owes the rest by wire,
wires settling it, and an unpaid receivable turning overdue after the next business day."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Server, StartServer
from tests.e2e.support import (
    account,
    base_load,
    billed_by_kind,
    buy,
    make_account,
    make_cluster,
    make_island,
    ok,
    post_offers,
    refused,
    tick,
)


def _usd(value: Any) -> Decimal:
    return Decimal(str(value))


def _create(server: Server, cluster: str, nodes: int, rate: float, term_hours: int) -> Any:
    body = {"nodes": nodes, "rate_per_gpu_hour": rate, "term_hours": term_hours}
    path = f"/api/admin/clusters/{cluster}/base-load"
    return ok(server.client.post(path, json=body, headers=server.operator()), 201)


def test_the_offer_grid_reads_each_cells_state_from_the_islands_blocks_now(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "grid", nodes=6, reserve=1.0)
    make_account(server, "grid-rich", balance=100_000)
    make_account(server, "grid-poor", balance=12_000)
    rich = make_cluster(server, "grid-rich", "grid", "k8s", "grid-rich-k")
    poor = make_cluster(server, "grid-poor", "grid", "k8s", "grid-poor-k")
    make_cluster(server, "grid-rich", "grid", "k8s", "grid-holder")
    cells = [
        (8, 24, 2.0),  # 1 node
        (16, 24, 2.5),  # 2 nodes
        (32, 720, 1.0),  # 4 nodes: 23,040 USD
        (40, 24, 2.0),  # 5 nodes: more than the 4 reservable
        (16, 168, None),  # posted without a rate
    ]
    posted = post_offers(server, "grid", cells, reservable_nodes=4)
    assert (posted["buying_open"], posted["reservable_nodes"]) == (True, 4)
    island = next(i for i in ok(server.client.get("/api/islands")) if i["id"] == "grid")
    assert (island["base_load_cap"], island["buying_open"]) == (4, True)

    # the account team's block of 3 nodes for 10 hours reserves 3 of the 4
    holder = _create(server, "grid-holder", 3, 1.5, 10)
    grid = ok(server.client.get("/api/base-load/offers", headers=rich))
    assert (grid["island"], grid["buying_open"], grid["detail"]) == ("grid", True, None)
    assert (grid["reservable_nodes"], grid["reserved_nodes"], grid["live_block"]) == (4, 3, None)
    by_cell = {(c["size_gpus"], c["term_hours"]): c for c in grid["cells"]}
    assert list(by_cell) == [(8, 24), (16, 24), (16, 168), (32, 720), (40, 24)]
    one = by_cell[(8, 24)]
    assert (one["state"], one["until"], one["nodes"]) == ("available", None, 1)
    assert _usd(one["price_usd"]) == Decimal(2 * 8 * 24)
    assert one["deposit_usd"] == 0  # the balance covers the whole price
    # 2 and 4 nodes fit once the holder's block (ending in 10 h) lapses
    for size, term in ((16, 24), (32, 720)):
        cell = by_cell[(size, term)]
        assert cell["state"] == "sold-out"
        assert cell["until"] == holder["ends_at"]
    assert _usd(by_cell[(32, 720)]["price_usd"]) == Decimal(32 * 720)
    assert by_cell[(16, 168)]["state"] == "sold-out"
    assert by_cell[(16, 168)]["until"] is None
    assert by_cell[(16, 168)]["rate_per_gpu_hour"] is None
    assert by_cell[(40, 24)]["state"] == "not-available"

    # the deposit is this account's: the poor one would put down 10,000 of the 23,040
    mine = {
        (c["size_gpus"], c["term_hours"]): c
        for c in ok(server.client.get("/api/base-load/offers", headers=poor))["cells"]
    }
    assert mine[(32, 720)]["deposit_usd"] == 10_000
    assert mine[(8, 24)]["deposit_usd"] == 0

    # the operator raises the reserve over a posted rate: that cell reads sold out
    body = {"reserve_price": 2.2}
    ok(server.client.put("/api/admin/islands/grid", json=body, headers=server.operator()))
    cells_now = ok(server.client.get("/api/base-load/offers", headers=rich))["cells"]
    assert next(c for c in cells_now if c["size_gpus"] == 8)["state"] == "sold-out"
    # and cannot be bought under the reserve
    since = len(server.refused_lines())
    body = refused(server, buy(server, rich, 8, 24), 409, "sold-out", since)
    assert (body["rate_per_gpu_hour"], body["reserve_price"]) == (2.0, 2.2)


def test_the_grid_is_refused_for_cells_off_whole_nodes_under_the_reserve_or_twice(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "badgrid", nodes=4, reserve=2.0)
    path = "/api/admin/islands/badgrid/base-load-offers"
    cases = [
        (
            {
                "buying_open": True,
                "reservable_nodes": 2,
                "cells": [{"size_gpus": 12, "term_hours": 24, "rate_per_gpu_hour": 3}],
            },
            "cells[0].size_gpus",
        ),
        (
            {
                "buying_open": True,
                "reservable_nodes": 2,
                "cells": [{"size_gpus": 8, "term_hours": 24, "rate_per_gpu_hour": 1.5}],
            },
            "cells[0].rate_per_gpu_hour",
        ),
        (
            {
                "buying_open": True,
                "reservable_nodes": 2,
                "cells": [
                    {"size_gpus": 8, "term_hours": 24, "rate_per_gpu_hour": 3},
                    {"size_gpus": 8, "term_hours": 24, "rate_per_gpu_hour": 4},
                ],
            },
            "cells[1]",
        ),
        ({"buying_open": True, "reservable_nodes": 5, "cells": []}, "reservable_nodes"),
        (
            {
                "buying_open": True,
                "reservable_nodes": 2,
                "cells": [{"size_gpus": 8, "term_hours": 0, "rate_per_gpu_hour": 3}],
            },
            "cells[0].term_hours",
        ),
    ]
    for body, field in cases:
        since = len(server.refused_lines())
        answer = refused(
            server,
            server.client.put(path, json=body, headers=server.operator()),
            422,
            "invalid",
            since,
        )
        assert answer["field"] == field


def test_buying_closed_on_an_island_says_the_account_team_arranges_the_block(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "shut", nodes=4, reserve=1.0)
    make_account(server, "shut-acct", balance=10_000)
    k = make_cluster(server, "shut-acct", "shut", "k8s", "shut-k")
    post_offers(server, "shut", [(8, 24, 2.0)], reservable_nodes=2, buying_open=False)
    grid = ok(server.client.get("/api/base-load/offers", headers=k))
    assert grid["buying_open"] is False
    assert "account team" in grid["detail"]
    since = len(server.refused_lines())
    body = refused(server, buy(server, k, 8, 24), 409, "buying-closed", since)
    assert body["island"] == "shut"
    assert base_load(server, k) == {"live": None, "past": []}


def test_every_refusal_of_a_purchase_has_its_code_figures_and_one_line(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "shop", nodes=4, reserve=1.0)
    make_account(server, "shop-acct", balance=100)
    make_account(server, "shop-other", balance=100_000)
    k = make_cluster(server, "shop-acct", "shop", "k8s", "shop-k")
    vm = make_cluster(server, "shop-acct", "shop", "vm", "shop-vm")
    rival = make_cluster(server, "shop-other", "shop", "k8s", "shop-rival")
    cells = [(8, 1, 2.0), (8, 2, None), (16, 1, 2.0), (24, 1, 2.0), (8, 24, 2.0)]
    post_offers(server, "shop", cells, reservable_nodes=2)

    # larger than the reservable inventory: not available on this island
    since = len(server.refused_lines())
    body = refused(server, buy(server, k, 24, 1), 409, "not-available", since)
    assert (body["size_gpus"], body["reservable_nodes"]) == (24, 2)
    # no rate posted: sold out; a size and term nobody posted: sold out too
    since = len(server.refused_lines())
    body = refused(server, buy(server, k, 8, 2), 409, "sold-out", since)
    assert (body["rate_per_gpu_hour"], body["reserve_price"]) == (None, 1.0)
    since = len(server.refused_lines())
    refused(server, buy(server, k, 8, 5), 409, "sold-out", since)
    # not whole nodes, no term: invalid, naming the field
    for size, term, field in ((12, 1, "size_gpus"), (8, 0, "term_hours")):
        since = len(server.refused_lines())
        assert refused(server, buy(server, k, size, term), 422, "invalid", since)["field"] == field
    # the balance (100) does not cover a 384 USD block: its deposit is the whole price
    since = len(server.refused_lines())
    body = refused(server, buy(server, k, 8, 24), 402, "insufficient-balance", since)
    assert (body["price_usd"], body["deposit_usd"], body["balance_usd"]) == (384, 384, 100)
    # a VM cluster's token: base load is for Kubernetes clusters
    since = len(server.refused_lines())
    refused(server, buy(server, vm, 8, 1), 403, "forbidden", since)

    # the rival fills the inventory: 2 nodes does not fit beside it until it lapses
    block = ok(buy(server, rival, 16, 1), 201)
    since = len(server.refused_lines())
    body = refused(server, buy(server, k, 8, 1), 409, "sold-out", since)
    assert body["until"] == block["ends_at"]
    # a second live block for one cluster
    since = len(server.refused_lines())
    body = refused(server, buy(server, rival, 8, 1), 409, "one-per-cluster", since)
    assert body["block"] == block["id"]
    assert "Traceback" not in server.log()


def test_a_purchase_the_balance_covers_takes_no_deposit_and_bills_its_term(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "cash", nodes=4, reserve=1.0)
    make_account(server, "cash-acct", balance=1000)
    k = make_cluster(server, "cash-acct", "cash", "k8s", "cash-k")
    post_offers(server, "cash", [(16, 1, 1.5)], reservable_nodes=2)
    grid = ok(server.client.get("/api/base-load/offers", headers=k))
    (cell,) = grid["cells"]
    assert (cell["state"], cell["price_usd"], cell["deposit_usd"]) == ("available", 24, 0)

    block = ok(buy(server, k, 16, 1), 201)
    assert (block["state"], block["origin"], block["nodes"], block["gpus"]) == (
        "live",
        "purchase",
        2,
        16,
    )
    assert (block["rate_per_gpu_hour"], block["term_hours"], block["price_usd"]) == (1.5, 1, 24)
    assert (block["deposit_usd"], block["owed_usd"], block["owed_by"]) == (0, 0, None)
    # it starts at once: its first 5-minute step is billed with the purchase
    assert block["billed_usd"] == 2
    assert _usd(account(server, "cash-acct")["balance_usd"]) == Decimal(998)
    read = base_load(server, k)
    assert read["live"]["id"] == block["id"]
    assert read["past"] == []
    assert ok(server.client.get("/api/base-load/offers", headers=k))["live_block"] == block["id"]

    # the term runs (5-minute ticks): its 12 steps of 2 USD are billed as each starts
    tick(server, count=11, island="cash")
    assert base_load(server, k)["live"]["billed_usd"] == 24
    assert _usd(account(server, "cash-acct")["balance_usd"]) == Decimal(976)
    tick(server, island="cash")
    read = base_load(server, k)
    assert read["live"] is None
    (past,) = read["past"]
    assert (past["id"], past["state"], past["billed_usd"]) == (block["id"], "ended", 24)
    # its two idle nodes stepped down into the market for the idle grace, locked at the
    # reserve (nothing declared, nothing cleared): 16 GPUs x 1.0 x 5 minutes
    rows = ok(server.client.get("/api/billing", params={"granularity": "1d"}, headers=k))
    by_kind = billed_by_kind(rows)
    assert by_kind == {"base_load": Decimal(24), "market": Decimal("1.333333")}


def test_a_purchase_past_the_balance_takes_a_deposit_and_owes_the_rest_by_wire(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "wire", nodes=4, reserve=1.0)
    make_account(server, "wire-acct", balance=12_000)
    k = make_cluster(server, "wire-acct", "wire", "k8s", "wire-k")
    post_offers(server, "wire", [(16, 720, 1.5)], reservable_nodes=2)  # 17,280 USD

    block = ok(buy(server, k, 16, 720), 201)
    assert block["price_usd"] == 17_280
    assert (block["deposit_usd"], block["deposit_held_usd"], block["owed_usd"]) == (
        10_000,
        10_000,
        7_280,
    )
    starts = datetime.fromisoformat(block["starts_at"])
    due = datetime.fromisoformat(block["owed_by"])
    assert due == _next_business_day_end(starts)
    assert block["overdue"] is False
    # the deposit and the first step (16 GPUs x 1.5 x 5 min = 2 USD) left the balance
    view = account(server, "wire-acct")
    assert _usd(view["balance_usd"]) == Decimal(12_000 - 10_000 - 2)
    assert (view["owed_usd"], view["overdue_usd"]) == (7_280, 0)
    (receivable,) = view["receivables"]
    assert (receivable["purchase"], receivable["cluster"]) == (block["id"], "wire-k")
    assert (receivable["owed_usd"], receivable["deposit_held_usd"]) == (7_280, 10_000)
    assert receivable["owed_by"] == block["owed_by"]

    # a part wire: credit, and less owed; the deposit stays held
    wires = "/api/admin/accounts/wire-acct/wires"
    view = ok(server.client.post(wires, json={"amount_usd": 5_000}, headers=server.operator()))
    assert _usd(view["balance_usd"]) == Decimal(1_998 + 5_000)
    assert view["owed_usd"] == 2_280
    # the rest and more: the receivable is paid, the deposit comes back, the excess is credit
    view = ok(server.client.post(wires, json={"amount_usd": 3_000}, headers=server.operator()))
    assert (view["owed_usd"], view["receivables"]) == (0, [])
    assert _usd(view["balance_usd"]) == Decimal(1_998 + 5_000 + 3_000 + 10_000)
    live = base_load(server, k)["live"]
    assert (live["owed_usd"], live["deposit_held_usd"], live["deposit_usd"]) == (0, 0, 10_000)
    # every amount is exact: the ledger's rows add up to the balance (the wire's 720 of excess
    # is plain credit)
    since = len(server.refused_lines())
    refused(
        server,
        server.client.post(wires, json={"amount_usd": 0}, headers=server.operator()),
        422,
        "invalid",
        since,
    )


def _next_business_day_end(at: datetime) -> datetime:
    """Independently of the service: midnight after the first Monday-to-Friday day after `at`."""
    day = at.astimezone(UTC).date() + timedelta(days=1)
    while day.isoweekday() > 5:
        day += timedelta(days=1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)


@pytest.mark.parametrize(
    ("bought_at", "due"),
    [
        ("2030-01-04T15:00:00Z", "2030-01-08T00:00:00Z"),  # a Friday: due by Monday's end
        ("2030-01-05T09:00:00Z", "2030-01-08T00:00:00Z"),  # a Saturday: Monday too
        ("2030-01-07T23:59:00Z", "2030-01-09T00:00:00Z"),  # a Monday: by Tuesday's end
    ],
)
def test_an_unpaid_receivable_turns_overdue_after_the_next_business_day(
    start_server: StartServer, bought_at: str, due: str
) -> None:
    server = start_server(
        "--clock", "manual", "--tick-seconds", "3600", env={"BURSTMARKET_CLOCK_START": bought_at}
    )
    make_island(server, "late", nodes=4, reserve=1.0)
    make_account(server, "late-acct", balance=12_500)
    k = make_cluster(server, "late-acct", "late", "k8s", "late-k")
    post_offers(server, "late", [(16, 720, 1.5)], reservable_nodes=2)
    block = ok(buy(server, k, 16, 720), 201)
    assert block["owed_by"] == due
    owed_by = datetime.fromisoformat(due)
    # hourly ticks up to the last hour before the due time: not overdue yet
    hours = math.ceil((owed_by - datetime.fromisoformat(bought_at)) / timedelta(hours=1))
    tick(server, count=hours - 1, island="late")
    assert account(server, "late-acct")["overdue_usd"] == 0
    assert base_load(server, k)["live"]["overdue"] is False
    tick(server, count=1, island="late")  # market time reaches the due time
    view = account(server, "late-acct")
    assert view["overdue_usd"] == view["owed_usd"] == 7_280
    assert view["receivables"][0]["overdue"] is True
    assert base_load(server, k)["live"]["overdue"] is True
