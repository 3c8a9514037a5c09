"""The spend guard through the API on the manual clock: the rolling 24 h window, commitment
against actual spend, the double check, the billing hold and its lifting."""

from __future__ import annotations

import pytest

from tests.conftest import Server, StartServer
from tests.e2e.support import (
    declare,
    make_account,
    make_cluster,
    make_island,
    ok,
    set_bid,
    submit_job,
    tick,
)


def test_the_window_starts_at_the_first_spend_not_at_midnight(start_server: StartServer) -> None:
    # one-hour ticks from 22:59: the first tick, and the first spend, is at 23:59
    server = start_server(
        "--clock",
        "manual",
        "--tick-seconds",
        "3600",
        env={"BURSTMARKET_CLOCK_START": "2026-03-01T22:59:00Z"},
    )
    make_island(server, "night", nodes=1, reserve=1.0)
    make_account(server, "night-acct", balance=10_000)
    c = make_cluster(server, "night-acct", "night", "vm", "night-c")
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 500}, headers=c))
    assert ok(server.client.get("/api/spend-limit", headers=c))["window_started_at"] is None
    ok(declare(server, c, 8, 2))

    assert tick(server, island="night")["time"] == "2026-03-01T23:59:00Z"
    first = ok(server.client.get("/api/spend-limit", headers=c))
    assert first["window_started_at"] == "2026-03-01T23:59:00Z"
    assert first["spent_usd"] == pytest.approx(8.0)  # 8 GPUs x 1.0 x 1 h

    # past midnight: the same window, the spend before midnight still counts
    assert tick(server, island="night")["time"] == "2026-03-02T00:59:00Z"
    after_midnight = ok(server.client.get("/api/spend-limit", headers=c))
    assert after_midnight["window_started_at"] == "2026-03-01T23:59:00Z"
    assert after_midnight["spent_usd"] == pytest.approx(16.0)

    # 24 h after the first spend a new window starts, at that spend
    tick(server, count=23, island="night")
    renewed = ok(server.client.get("/api/spend-limit", headers=c))
    assert renewed["window_started_at"] == "2026-03-02T23:59:00Z"
    assert renewed["spent_usd"] == pytest.approx(8.0)
    assert renewed["left_usd"] == pytest.approx(500 - 8 - renewed["committed_usd"])


def test_commitment_against_actual_spend(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "commit", nodes=2, reserve=1.0)
    make_account(server, "commit-acct", balance=10_000)
    c = make_cluster(server, "commit-acct", "commit", "vm", "commit-c")
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 100}, headers=c))
    ok(declare(server, c, 8, 4))
    tick(server, island="commit")
    # worst case committed at the grant: 4 USD x 8 GPUs x 1 h = 32; the first 5 minutes are
    # billed in advance at the clearing rate (the reserve, alone on the island)
    spend = ok(server.client.get("/api/spend-limit", headers=c))
    assert spend["spent_usd"] == pytest.approx(8 * 1.0 * 5 / 60, abs=1e-6)
    assert spend["committed_usd"] == pytest.approx(32 * 55 / 60, abs=1e-6)
    assert spend["left_usd"] == pytest.approx(100 - spend["spent_usd"] - spend["committed_usd"])
    tick(server, count=5, island="commit")
    later = ok(server.client.get("/api/spend-limit", headers=c))
    assert later["spent_usd"] == pytest.approx(8 * 1.0 * 30 / 60, abs=1e-6)
    assert later["committed_usd"] == pytest.approx(32 * 30 / 60, abs=1e-6)
    # scale-down releases what is left of the commitment and refunds the billed remainder
    ok(declare(server, c, 0, None))
    released = ok(server.client.get("/api/spend-limit", headers=c))
    assert released["committed_usd"] == 0
    assert released["spent_usd"] == pytest.approx(8 * 1.0 * 25 / 60, abs=1e-6)


def test_the_limit_is_checked_at_declare_and_again_at_the_tick(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "twice", nodes=4, reserve=1.0)
    make_account(server, "twice-acct", balance=10_000)
    c = make_cluster(server, "twice-acct", "twice", "vm", "twice-c")
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 50}, headers=c))

    # at declare: 2 nodes x 8 GPUs x 4 USD x 1 h = 64 > 50, refused
    refused = declare(server, c, 16, 4)
    assert refused.status_code == 402
    body = refused.json()
    assert body["error"] == "spend-limit"
    assert body["worst_case_usd"] == pytest.approx(64)
    assert body["left_usd"] == pytest.approx(50)
    ok(declare(server, c, 8, 4))  # 32 fits

    # at the tick: the limit lowered after the declare, the grant is not made
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 20}, headers=c))
    before = len([x for x in server.refused_lines() if "reason=spend-limit cluster=twice-c" in x])
    tick(server, count=2, island="twice")
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert capacity["held_gpus"] == 0
    assert capacity["pending_gpus"] == 8
    assert capacity["pending_reason"] == "spend-limit"
    after = len([x for x in server.refused_lines() if "reason=spend-limit cluster=twice-c" in x])
    assert after == before + 1  # one line when the tick starts refusing, not one per tick

    ok(server.client.put("/api/spend-limit", json={"usd_per_day": None}, headers=c))
    tick(server, island="twice")
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert capacity["held_gpus"] == 8
    assert capacity["pending_reason"] is None


def test_billing_hold_reclaims_and_a_credit_lifts_it(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "hold", nodes=2, reserve=1.0)
    make_account(server, "hold-acct", balance=1)
    c = make_cluster(server, "hold-acct", "hold", "vm", "hold-c")
    ok(declare(server, c, 8, 3))
    tick(server, island="hold")  # 8 GPUs x 1.0 x 5 min = 0.666667 USD
    tick(server, island="hold")  # the balance goes under zero
    account = ok(server.client.get("/api/admin/accounts/hold-acct", headers=server.operator()))
    assert account["balance_usd"] == pytest.approx(1 - 2 * 8 / 12, abs=1e-6)
    assert ok(server.client.get("/api/vm/capacity", headers=c))["held_gpus"] == 8

    tick(server, island="hold")  # at or below zero: the hold reclaims the capacity
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert capacity["held_gpus"] == 0
    assert capacity["pending_reason"] == "billing-hold"
    refused = declare(server, c, 16, 3)
    assert refused.status_code == 402
    assert refused.json()["error"] == "billing-hold"
    ok(declare(server, c, 8, 3))  # keeping the same demand is not new demand

    credit = server.client.post(
        "/api/admin/accounts/hold-acct/credit", json={"amount_usd": 50}, headers=server.operator()
    )
    assert ok(credit)["billing_hold"] is False
    tick(server, island="hold")
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert capacity["held_gpus"] == 8
    assert capacity["pending_reason"] is None
    assert ok(declare(server, c, 0, None))["held_gpus"] == 0  # and scaling down always works


def test_a_raise_that_lifts_the_cap_commits_what_it_adds(shared_server: Server) -> None:
    """Raising a VM ceiling lifts the cap of the node held under its window (docs/market.md
    "Windows"), so the worst case of the rest of the window grows: it is committed at the
    raise, and a raise whose worst case does not fit the limit is refused."""
    server = shared_server
    make_island(server, "lift", nodes=1, reserve=1.0)
    make_account(server, "lift-acct", balance=10_000)
    c = make_cluster(server, "lift-acct", "lift", "vm", "lift-c")
    rival = make_cluster(server, "lift-acct", "lift", "vm", "lift-rival")
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 40}, headers=c))
    ok(declare(server, c, 8, 2))
    tick(server, island="lift")
    ok(declare(server, rival, 8, 5))
    committed = ok(server.client.get("/api/spend-limit", headers=c))["committed_usd"]
    assert committed == pytest.approx(2 * 8 * 55 / 60, abs=1e-6)

    ok(declare(server, c, 8, 4))  # 2 more per GPU-hour for the 55 minutes left: it fits
    raised = ok(server.client.get("/api/spend-limit", headers=c))
    assert raised["committed_usd"] == pytest.approx(4 * 8 * 55 / 60, abs=1e-6)

    before = len([x for x in server.refused_lines() if "reason=spend-limit cluster=lift-c" in x])
    refused = declare(server, c, 8, 6)  # 14.67 more; 40 - 0.67 spent - 29.33 left 10
    assert refused.status_code == 402
    assert refused.json()["error"] == "spend-limit"
    after = len([x for x in server.refused_lines() if "reason=spend-limit cluster=lift-c" in x])
    assert after == before + 1
    assert ok(server.client.get("/api/vm/capacity", headers=c))["max_price_per_gpu_hour"] == 4.0
    tick(server, island="lift")
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert capacity["rate"] == 4.0  # the rival's 5 shows through the lifted cap, up to 4


def test_a_kubernetes_raise_commits_what_it_adds_too(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "klift", nodes=1, reserve=1.0)
    make_account(server, "klift-acct", balance=10_000)
    k = make_cluster(server, "klift-acct", "klift", "k8s", "klift-k")
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 60}, headers=k))
    set_bid(server, k, 2)
    submit_job(server, k, "train", 1)
    tick(server, island="klift")  # 2 x 8 x 2 h = 32 committed, 0.67 spent
    set_bid(server, k, 3)
    committed = ok(server.client.get("/api/spend-limit", headers=k))["committed_usd"]
    assert committed == pytest.approx(3 * 8 * 115 / 60, abs=1e-6)
    refused = server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 4}, headers=k)
    assert refused.status_code == 402
    assert refused.json()["error"] == "spend-limit"
    assert ok(server.client.get("/api/k8s/bid", headers=k))["limit_price_per_gpu_hour"] == 3.0
