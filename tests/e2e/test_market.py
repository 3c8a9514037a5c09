"""The market through the real server: the local-local-global case, windows, scale-down,
billing, Kubernetes jobs. Time moves only by POST /api/admin/ticks (5-minute ticks)."""

from __future__ import annotations

import csv
import io
from datetime import datetime

import pytest

from tests.conftest import Server
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok, tick

TICK_HOURS = 300 / 3600


def test_local_local_global_through_the_api(shared_server: Server) -> None:
    """Two VM clusters at 6 beat a 2-node gang at 5 on a 2-node island: both pay the core
    price 5.0 (VCG alone would say 4.0), and the gang waits."""
    server = shared_server
    make_island(server, "llg", nodes=2, reserve=1.0)
    make_account(server, "llg-acct")
    a = make_cluster(server, "llg-acct", "llg", "vm", "llg-a")
    b = make_cluster(server, "llg-acct", "llg", "vm", "llg-b")
    k = make_cluster(server, "llg-acct", "llg", "k8s", "llg-k")
    ok(declare(server, a, 8, 6))
    ok(declare(server, b, 8, 6))
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 5}, headers=k))
    ok(server.client.post("/api/k8s/jobs", json={"name": "gang", "nodes": 2}, headers=k), 201)

    stats = tick(server, island="llg")

    assert stats["island"] == "llg"
    assert stats["tick"] == 1
    assert (stats["vwap"], stats["min"], stats["max"]) == (5.0, 5.0, 5.0)
    assert (stats["gpus"], stats["clusters"], stats["pending_gpus"]) == (16, 2, 16)
    for auth in (a, b):
        capacity = ok(server.client.get("/api/vm/capacity", headers=auth))
        assert capacity["held_gpus"] == 8
        assert capacity["rate"] == 5.0
        assert capacity["nodes"][0]["locked_price"] == 6.0
    job = ok(server.client.get("/api/k8s/jobs/gang", headers=k))
    assert job["state"] == "pending"
    assert job["node_ids"] == []


def test_a_window_holds_against_a_higher_bidder_until_it_lapses(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "win", nodes=1, reserve=1.0)
    make_account(server, "win-acct")
    low = make_cluster(server, "win-acct", "win", "vm", "win-low")
    high = make_cluster(server, "win-acct", "win", "vm", "win-high")
    ok(declare(server, low, 8, 3))
    tick(server)
    granted = ok(server.client.get("/api/vm/capacity", headers=low))
    assert granted["held_gpus"] == 8
    ok(declare(server, high, 8, 10))

    # 11 more ticks of 5 minutes: still inside the 1 h window, at the locked price as the cap
    for _ in range(11):
        stats = tick(server, island="win")
        held = ok(server.client.get("/api/vm/capacity", headers=low))
        assert held["held_gpus"] == 8
        assert held["rate"] == 3.0
        assert stats["pending_gpus"] == 8
    assert ok(server.client.get("/api/vm/capacity", headers=high))["held_gpus"] == 0

    # the 12th tick is one hour after the grant: the window has lapsed and the node competes
    tick(server)
    assert ok(server.client.get("/api/vm/capacity", headers=low))["held_gpus"] == 0
    winner = ok(server.client.get("/api/vm/capacity", headers=high))
    assert winner["held_gpus"] == 8
    assert winner["rate"] == 3.0  # second price: the displaced bid of 3


def test_scale_down_is_immediate_free_and_stops_billing(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "down", nodes=4, reserve=1.0)
    make_account(server, "down-acct", balance=100)
    c = make_cluster(server, "down-acct", "down", "vm", "down-c")
    ok(declare(server, c, 24, 2))
    tick(server, island="down")
    held = ok(server.client.get("/api/vm/capacity", headers=c))
    assert held["held_gpus"] == 24
    assert held["rate"] == 1.0  # alone on the island: the reserve
    nominated = held["nodes"][1]["id"]

    # lowering max_gpus works even with a price under the reserve, and goes at once
    after = ok(declare(server, c, 8, 0.5, release=[nominated]))
    assert after["held_gpus"] == 8
    assert nominated not in [n["id"] for n in after["nodes"]]
    assert after["bid_too_low"] is False  # nothing pending: the low price asks for nothing

    # the interval the tick billed in advance is refunded for the two released nodes
    rows = ok(server.client.get("/api/billing", params={"granularity": "1d"}, headers=c))
    assert sum(r["amount_usd"] for r in rows) == pytest.approx(8 * 1.0 * TICK_HOURS, abs=1e-6)

    ok(declare(server, c, 0, None))
    assert ok(server.client.get("/api/vm/capacity", headers=c))["held_gpus"] == 0
    tick(server, island="down")
    rows = ok(server.client.get("/api/billing", params={"granularity": "1d"}, headers=c))
    assert sum(r["amount_usd"] for r in rows) == pytest.approx(0.0, abs=1e-6)


def test_billing_sums_match_rate_times_gpus_times_time(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "bill", nodes=3, reserve=1.25)
    make_account(server, "bill-acct", balance=500)
    a = make_cluster(server, "bill-acct", "bill", "vm", "bill-a")
    b = make_cluster(server, "bill-acct", "bill", "vm", "bill-b")
    ok(declare(server, a, 16, 4.5))
    ok(declare(server, b, 16, 2.75))
    expected = {"bill-a": 0.0, "bill-b": 0.0}
    first = tick(server, island="bill")["time"]
    for done in range(7):
        if done:
            tick(server, island="bill")
        for name, auth in (("bill-a", a), ("bill-b", b)):
            capacity = ok(server.client.get("/api/vm/capacity", headers=auth))
            if capacity["rate"] is not None:
                expected[name] += capacity["rate"] * capacity["held_gpus"] * TICK_HOURS
    assert expected["bill-a"] > 0
    assert expected["bill-b"] > 0
    for name, auth in (("bill-a", a), ("bill-b", b)):
        for granularity in ("5m", "1h", "1d"):
            rows = ok(
                server.client.get("/api/billing", params={"granularity": granularity}, headers=auth)
            )
            assert all(r["kind"] == "market" for r in rows)
            total = sum(r["amount_usd"] for r in rows)
            assert total == pytest.approx(expected[name], abs=1e-5)
            exact = sum(r["amount_units"] for r in rows)
            assert total == pytest.approx(exact / 3.6e12, abs=1e-5)
        response = server.client.get(
            "/api/billing", params={"granularity": "5m", "format": "csv"}, headers=auth
        )
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/csv")
        table = list(csv.DictReader(io.StringIO(response.text)))
        # each tick's interval is spread over the 5-minute buckets it covers: 7 ticks of 5
        # minutes fill 7 buckets, or 8 when the ticks do not start on a bucket's edge
        aligned = datetime.fromisoformat(first).timestamp() % 300 == 0
        assert len(table) == (7 if aligned else 8)
        assert sum(float(r["amount_usd"]) for r in table) == pytest.approx(expected[name], abs=1e-5)
    account = ok(server.client.get("/api/admin/accounts/bill-acct", headers=server.operator()))
    assert account["balance_usd"] == pytest.approx(500 - sum(expected.values()), abs=1e-5)


def test_kubernetes_gang_lifecycle(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "kube", nodes=3, reserve=1.0)
    make_account(server, "kube-acct", balance=1000)
    k = make_cluster(server, "kube-acct", "kube", "k8s", "kube-k")
    vm = make_cluster(server, "kube-acct", "kube", "vm", "kube-vm")

    # no limit price: the job is accepted, bids nothing, and says why
    ok(server.client.post("/api/k8s/jobs", json={"name": "train", "nodes": 2}, headers=k), 201)
    tick(server, island="kube")
    job = ok(server.client.get("/api/k8s/jobs/train", headers=k))
    assert job["state"] == "pending"
    assert [e["type"] for e in job["events"]] == ["BidTooLow"]
    assert ok(server.client.get("/api/k8s/bid", headers=k))["bid_too_low"] is True

    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 4}, headers=k))
    tick(server, island="kube")
    job = ok(server.client.get("/api/k8s/jobs/train", headers=k))
    assert job["state"] == "running"
    assert len(job["node_ids"]) == 2
    assert job["events"][-1]["type"] == "Provisioned"
    assert job["rate"] == 1.0

    # a VM bid above the gang cannot take its nodes inside the 2 h window
    ok(declare(server, vm, 24, 9))
    tick(server, island="kube")
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["held_gpus"] == 8
    assert ok(server.client.get("/api/k8s/jobs/train", headers=k))["state"] == "running"

    # lowering the limit under the price held at gang start voids the window at once ...
    patched = server.client.patch(
        "/api/k8s/jobs/train", json={"limit_price_per_gpu_hour": 3}, headers=k
    )
    assert ok(patched)["events"][-1]["type"] == "WindowVoided"
    # ... so the next tick the higher VM bid reclaims the gang, which goes back to pending
    tick(server, island="kube")
    job = ok(server.client.get("/api/k8s/jobs/train", headers=k))
    assert job["state"] == "pending"
    # preempted, then waiting outbid (docs/market.md "Why it waits"): one event each
    assert [e["type"] for e in job["events"]][-2:] == ["Preempted", "Outbid"]
    assert job["node_ids"] == []
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["held_gpus"] == 24

    # reclaimed inside the first hour: the minimum hold is billed
    rows = ok(server.client.get("/api/billing", params={"granularity": "1d"}, headers=k))
    billed_hours = sum(r["gpu_hours"] for r in rows)
    assert billed_hours == pytest.approx(2 * 8 * 1.0, abs=1e-6)

    finished = ok(server.client.delete("/api/k8s/jobs/train", headers=k))
    assert finished["state"] == "finished"


def test_a_finished_job_leaves_idle_nodes_for_the_next_job(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "idle", nodes=2, reserve=1.0)
    make_account(server, "idle-acct", balance=1000)
    k = make_cluster(server, "idle-acct", "idle", "k8s", "idle-k")
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 2}, headers=k))
    ok(server.client.post("/api/k8s/jobs", json={"name": "one", "nodes": 2}, headers=k), 201)
    tick(server, island="idle")
    first = ok(server.client.get("/api/k8s/jobs/one", headers=k))
    ok(server.client.delete("/api/k8s/jobs/one", headers=k))
    ok(server.client.post("/api/k8s/jobs", json={"name": "two", "nodes": 2}, headers=k), 201)
    tick(server, island="idle")
    second = ok(server.client.get("/api/k8s/jobs/two", headers=k))
    assert second["state"] == "running"
    assert sorted(second["node_ids"]) == sorted(first["node_ids"])
    assert "idle nodes" in second["events"][-1]["detail"]

    # finished with nothing waiting: the nodes stay through the 1 h minimum hold, then go
    ok(server.client.delete("/api/k8s/jobs/two", headers=k))
    stats = tick(server, count=10, island="idle")
    assert stats["gpus"] == 16
    stats = tick(server, count=2, island="idle")
    assert stats["gpus"] == 0
