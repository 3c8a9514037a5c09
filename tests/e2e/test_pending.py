"""Why demand waits, through the real server on the manual clock (5-minute ticks): every read
that shows pending demand (VM capacity, the Kubernetes bid, each job) names the first cause that
holds, with its figures, from the last tick; null when nothing is pending; a job that becomes
outbid gets one `Outbid` event (docs/market.md "Why it waits")."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from burstmarket.client import SyncTenantClient
from tests.conftest import Server
from tests.e2e.support import (
    declare,
    make_account,
    make_cluster,
    make_island,
    ok,
    read_job,
    refused_for,
    set_bid,
    tick,
    when,
)


def _capacity(server: Server, vm: dict[str, str]) -> Any:
    return ok(server.client.get("/api/vm/capacity", headers=vm))


def _bid(server: Server, k: dict[str, str]) -> Any:
    return ok(server.client.get("/api/k8s/bid", headers=k))


def _job(server: Server, k: dict[str, str], name: str, nodes: int, price: float | None) -> Any:
    body: dict[str, Any] = {"name": name, "nodes": nodes, "limit_price_per_gpu_hour": price}
    return ok(server.client.post("/api/k8s/jobs", json=body, headers=k), 201)


def _why(answer: Any) -> tuple[str | None, Any]:
    return answer["pending_reason"], answer["pending_detail"]


def _spend_limit(server: Server, auth: dict[str, str], usd: float) -> None:
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": usd}, headers=auth))


def test_a_billing_hold_names_since_when_and_the_balance(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "wbh", nodes=2, reserve=1.0)
    make_account(server, "wbh-acct", balance=1)
    vm = make_cluster(server, "wbh-acct", "wbh", "vm", "wbh-vm")
    k = make_cluster(server, "wbh-acct", "wbh", "k8s", "wbh-k")
    ok(declare(server, vm, 16, 3))
    set_bid(server, k, 2)
    _job(server, k, "wait", 1, None)
    tick(server, island="wbh")  # the VM cluster takes both nodes; the bill takes the balance
    assert _why(_capacity(server, vm)) == (None, None)  # nothing pending

    tick(server, island="wbh")  # at or below zero: the hold
    account = ok(server.client.get("/api/admin/accounts/wbh-acct", headers=server.operator()))
    assert account["balance_usd"] < 0
    reason, detail = _why(_capacity(server, vm))
    assert reason == "billing-hold"
    assert detail["balance_usd"] == pytest.approx(account["balance_usd"], abs=1e-6)
    since = detail["since"]
    own = ok(server.client.get("/api/account", headers=vm))
    assert when(since) == when(own["billing_hold_since"])
    # the first tick billed the balance under zero, the second held the demand back
    assert when(since) < when(ok(server.client.get("/api/market/stats?island=wbh"))["time"])
    assert _why(read_job(server, k, "wait")) == ("billing-hold", detail)
    assert _why(_bid(server, k)) == ("billing-hold", detail)

    tick(server, count=2, island="wbh")  # since the first tick that held it, one line each
    assert _why(_capacity(server, vm))[1]["since"] == since
    assert read_job(server, k, "wait")["pending_detail"]["since"] == since
    assert len(refused_for(server, "billing-hold", "wbh-vm")) == 1
    assert len(refused_for(server, "billing-hold", "wbh-k")) == 1


def test_the_spend_limit_names_what_is_left_and_the_worst_case(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "wsl", nodes=2, reserve=1.0)
    make_account(server, "wsl-acct", balance=1000)
    vm = make_cluster(server, "wsl-acct", "wsl", "vm", "wsl-vm")
    k = make_cluster(server, "wsl-acct", "wsl", "k8s", "wsl-k")
    _spend_limit(server, vm, 50)
    ok(declare(server, vm, 8, 4))  # 8 GPUs x 4 USD x 1 h = 32 fits 50
    _spend_limit(server, k, 50)
    set_bid(server, k, 2)
    _job(server, k, "train", 1, None)  # 8 GPUs x 2 USD x 2 h = 32 fits 50
    _spend_limit(server, vm, 20)  # lowered after the writes: the tick leaves them out
    _spend_limit(server, k, 20)
    tick(server, island="wsl")

    capacity = _capacity(server, vm)
    assert capacity["pending_gpus"] == 8
    assert _why(capacity) == ("spend-limit", {"left_usd": 20.0, "worst_case_usd": 32.0})
    assert _why(read_job(server, k, "train")) == (
        "spend-limit",
        {"left_usd": 20.0, "worst_case_usd": 32.0},
    )
    assert _why(_bid(server, k))[0] == "spend-limit"
    assert len(refused_for(server, "spend-limit", "wsl-vm")) == 1


def test_a_bid_under_the_reserve_names_the_ceiling_and_the_reserve(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "wbt", nodes=1, reserve=1.0)
    make_account(server, "wbt-acct", balance=1000)
    holder = make_cluster(server, "wbt-acct", "wbt", "vm", "wbt-holder")
    waiter = make_cluster(server, "wbt-acct", "wbt", "vm", "wbt-waiter")
    k = make_cluster(server, "wbt-acct", "wbt", "k8s", "wbt-k")
    ok(declare(server, holder, 8, 4))
    ok(declare(server, waiter, 8, 2))
    _job(server, k, "free", 1, None)  # no limit price: it bids nothing
    tick(server, island="wbt")
    make_island(server, "wbt", nodes=1, reserve=3.0)
    tick(server, island="wbt")

    assert _why(_capacity(server, waiter)) == (
        "bid-too-low",
        {"ceiling": 2.0, "reserve_price": 3.0},
    )
    assert _why(read_job(server, k, "free")) == ("bid-too-low", {"reserve_price": 3.0})
    assert _why(_bid(server, k)) == ("bid-too-low", {"reserve_price": 3.0})
    assert _why(_capacity(server, holder)) == (None, None)


def test_a_gang_larger_than_the_market_nodes_names_no_supply(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "wns", nodes=3, reserve=1.0)
    make_account(server, "wns-acct", balance=1000)
    vm = make_cluster(server, "wns-acct", "wns", "vm", "wns-vm")
    k = make_cluster(server, "wns-acct", "wns", "k8s", "wns-k")
    small = make_cluster(server, "wns-acct", "wns", "k8s", "wns-small")
    path = "/api/admin/islands/wns/nodes/wns-n0002/cordon"
    ok(server.client.post(path, headers=server.operator()))
    ok(declare(server, vm, 24, 3))  # 3 nodes; the market has 2
    _job(server, k, "gang", 3, 2)
    body = {"name": "tiny", "pods": 1, "gpus_per_pod": 4}
    ok(server.client.post("/api/k8s/jobs", json=body, headers=small), 201)
    tick(server, island="wns")

    capacity = _capacity(server, vm)
    assert (capacity["held_gpus"], capacity["pending_gpus"]) == (16, 8)
    assert _why(capacity) == ("no-supply", {"nodes": 3, "market_nodes": 2})
    assert _why(read_job(server, k, "gang")) == ("no-supply", {"nodes": 3, "market_nodes": 2})
    assert _why(_bid(server, k)) == ("no-supply", {"nodes": 3, "market_nodes": 2})
    # a job smaller than one node waits for the block, never for the market
    assert _why(read_job(server, small, "tiny")) == ("PackingDisabled", {"gpus": 4})
    assert _why(_bid(server, small)) == ("PackingDisabled", {"gpus": 4})


def _full_island(server: Server, island: str) -> tuple[dict[str, str], str]:
    """One node, held by a VM cluster at 2 under the window of its fresh grant: its headers
    and when the window ends."""
    make_island(server, island, nodes=1, reserve=1.0)
    make_account(server, f"{island}-acct", balance=1000)
    holder = make_cluster(server, f"{island}-acct", island, "vm", f"{island}-holder")
    ok(declare(server, holder, 8, 2))
    tick(server, island=island)
    (node,) = _capacity(server, holder)["nodes"]
    return holder, node["window_ends_at"]


def test_a_full_island_under_fresh_windows_names_when_and_the_price_then(
    shared_server: Server,
) -> None:
    server = shared_server
    holder, ends = _full_island(server, "wwv")
    vm = make_cluster(server, "wwv-acct", "wwv", "vm", "wwv-vm")
    ok(declare(server, vm, 8, 5))
    _, ends_k = _full_island(server, "wwk")
    k = make_cluster(server, "wwk-acct", "wwk", "k8s", "wwk-k")
    _job(server, k, "later", 1, 5)
    tick(server, island="wwv")
    tick(server, island="wwk")

    reason, detail = _why(_capacity(server, vm))
    assert reason == "windows"
    # the holder bids 2 again once its window ends, and is older: one grid step over wins
    assert detail == {
        "ceiling": 5.0,
        "nodes": 1,
        "contestable_at": detail["contestable_at"],
        "price_then": 2.0001,
    }
    assert when(detail["contestable_at"]) == when(ends)
    reason, detail = _why(read_job(server, k, "later"))
    assert (reason, detail["price_then"], detail["nodes"]) == ("windows", 2.0001, 1)
    assert when(detail["contestable_at"]) == when(ends_k)
    assert _why(_bid(server, k)) == (reason, detail)
    assert _why(_capacity(server, holder)) == (None, None)


def test_a_bid_under_what_the_others_pay_is_outbid_with_one_event(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "wob", nodes=1, reserve=1.0)
    make_account(server, "wob-acct", balance=1000)
    holder = make_cluster(server, "wob-acct", "wob", "vm", "wob-holder")
    vm = make_cluster(server, "wob-acct", "wob", "vm", "wob-vm")
    k = make_cluster(server, "wob-acct", "wob", "k8s", "wob-k")
    ok(declare(server, holder, 8, 4))
    ok(declare(server, vm, 8, 2))
    _job(server, k, "cheap", 1, 3)
    tick(server, island="wob")

    reason, detail = _why(_capacity(server, vm))
    assert (reason, detail["price_to_win"], detail["ceiling"], detail["nodes"]) == (
        "outbid",
        4.0001,
        2.0,
        1,
    )
    job = read_job(server, k, "cheap")
    assert _why(job)[0] == "outbid"
    assert (job["pending_detail"]["price_to_win"], job["pending_detail"]["ceiling"]) == (
        4.0001,
        3.0,
    )
    assert _why(_bid(server, k))[0] == "outbid"
    # the typed client reads the same, its money exact
    with SyncTenantClient(server.url, vm["Authorization"].removeprefix("Bearer ")) as me:
        figures = me.capacity().pending_detail
        assert figures is not None
        assert (figures.price_to_win, figures.ceiling) == (Decimal("4.0001"), Decimal(2))
    with SyncTenantClient(server.url, k["Authorization"].removeprefix("Bearer ")) as me:
        assert me.job("cheap").pending_reason == "outbid"
    tick(server, count=3, island="wob")
    events = [e for e in read_job(server, k, "cheap")["events"] if e["type"] == "Outbid"]
    assert len(events) == 1
    assert "4.0001" in events[0]["detail"]
    assert refused_for(server, "outbid", "wob-k") == []  # not a refusal: no REFUSED line
    assert _why(_capacity(server, holder)) == (None, None)
