"""Base load blocks through the real server: created by the operator within the island's cap,
one live block per cluster, billed in 5-minute steps over the term, never in market statistics,
delivered on a full island by taking idle nodes then the cheapest busy ones, and stepped down
into the market under a fresh window at the end. 5-minute ticks."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Server, StartServer
from tests.e2e.support import (
    CLOCK_START,
    at,
    billed_by_kind,
    declare,
    make_account,
    make_cluster,
    make_island,
    ok,
    read_job,
    set_bid,
    submit_job,
    tick,
    when,
)


def _nodes(server: Server, island: str) -> dict[str, Any]:
    rows = ok(server.client.get(f"/api/admin/islands/{island}/nodes", headers=server.operator()))
    return {n["id"]: n for n in rows}


def _block(server: Server, cluster: str, nodes: int, rate: float, term_hours: int) -> Any:
    body = {"nodes": nodes, "rate_per_gpu_hour": rate, "term_hours": term_hours}
    return server.client.post(
        f"/api/admin/clusters/{cluster}/base-load", json=body, headers=server.operator()
    )


def _cap(server: Server, island: str, cap: int) -> None:
    body = {"base_load_cap": cap}
    ok(server.client.put(f"/api/admin/islands/{island}", json=body, headers=server.operator()))


def test_a_block_bills_every_5_minutes_over_its_term_outside_market_stats_then_steps_down(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "bl", nodes=4, reserve=1.0)
    _cap(server, "bl", 2)
    make_account(server, "bl-acct", balance=1000)
    k = make_cluster(server, "bl-acct", "bl", "k8s", "bl-k")
    make_cluster(server, "bl-acct", "bl", "k8s", "bl-other")

    block = ok(_block(server, "bl-k", 2, 3.0, 1), 201)
    assert (block["state"], block["nodes"], block["gpus"]) == ("live", 2, 16)
    assert block["price_usd"] == pytest.approx(48.0)

    # above the island's reservable cap: refused, naming the field
    before = len(server.refused_lines())
    over = _block(server, "bl-other", 1, 3.0, 1)
    assert over.status_code == 422
    assert (over.json()["error"], over.json()["field"]) == ("invalid", "nodes")
    # a second live block for one cluster: one-per-cluster, with exactly one REFUSED line
    second = _block(server, "bl-k", 1, 3.0, 1)
    assert second.status_code == 409
    assert second.json()["error"] == "one-per-cluster"
    lines = server.refused_lines()[before:]
    assert len(lines) == 2
    assert len([line for line in lines if "reason=one-per-cluster" in line]) == 1

    # a job with no limit price at all runs on the block: no bid, no market
    ok(server.client.post("/api/k8s/jobs", json={"name": "steady", "nodes": 1}, headers=k), 201)
    stats = tick(server, island="bl")
    job = ok(server.client.get("/api/k8s/jobs/steady", headers=k))
    assert job["state"] == "running"
    assert "base load block" in job["events"][-1]["detail"]
    (on_block,) = job["node_ids"]
    nodes = _nodes(server, "bl")
    assert [n["state"] for n in nodes.values()].count("base_load") == 2
    assert nodes[on_block]["block"] == block["id"]
    assert (stats["gpus"], stats["clusters"], stats["pending_gpus"]) == (0, 0, 0)
    assert stats["vwap"] is None
    public = ok(server.client.get("/api/market/stats", params={"island": "bl"}))
    assert (public["gpus"], public["clusters"]) == (0, 0)

    # the term is one hour: 12 steps of 5 minutes, each 2 nodes x 8 GPUs x 3.0 x 1/12 h
    for _ in range(10):
        assert tick(server, island="bl")["gpus"] == 0
    rows = ok(server.client.get("/api/billing", params={"granularity": "5m"}, headers=k))
    # spread over the 5-minute buckets the hour covers (13 when it starts inside one)
    starts = datetime.fromisoformat(block["starts_at"]).timestamp()
    assert len(rows) == (12 if starts % 300 == 0 else 13)
    assert {r["kind"] for r in rows} == {"base_load"}
    assert sum(Decimal(str(r["amount_usd"])) for r in rows) == Decimal("48")
    assert sum(Decimal(str(r["gpu_hours"])) for r in rows) == Decimal("16")
    assert all(r["amount_usd"] <= 4.0 for r in rows)

    # end of term: the nodes step down into the market under a fresh 2 h window, locked at
    # the lowest clearing rate (no limit price declared); billing of the block stops
    stats = tick(server, island="bl")
    (ended,) = ok(
        server.client.get("/api/admin/clusters/bl-k/base-load", headers=server.operator())
    )
    assert ended["state"] == "ended"
    stepped = _nodes(server, "bl")[on_block]
    assert (stepped["state"], stepped["cluster"], stepped["job"]) == ("held", "bl-k", "steady")
    assert stepped["locked_price"] == 1.0
    assert stepped["granted_at"] == ended["ends_at"]
    assert ok(server.client.get("/api/k8s/jobs/steady", headers=k))["state"] == "running"
    assert stats["gpus"] == 16  # the idle node is inside its idle grace
    stats = tick(server, island="bl")
    assert stats["gpus"] == 8  # the idle one went back after the grace; the busy one stays
    rows = ok(server.client.get("/api/billing", params={"granularity": "1d"}, headers=k))
    by_kind = billed_by_kind(rows)
    assert float(by_kind["base_load"]) == pytest.approx(48.0)
    assert by_kind["market"] > 0
    # the cluster may hold a new block now
    ok(_block(server, "bl-k", 1, 3.0, 1), 201)


def test_a_block_on_a_full_island_takes_idle_nodes_then_the_cheapest_busy_ones(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "full", nodes=4, reserve=1.0)
    _cap(server, "full", 2)
    make_account(server, "full-acct", balance=1000)
    idle = make_cluster(server, "full-acct", "full", "k8s", "full-idle")
    cheap = make_cluster(server, "full-acct", "full", "k8s", "full-cheap")
    mid = make_cluster(server, "full-acct", "full", "k8s", "full-mid")
    vm = make_cluster(server, "full-acct", "full", "vm", "full-vm")
    make_cluster(server, "full-acct", "full", "k8s", "full-block")
    for auth, price in ((idle, 5), (cheap, 2), (mid, 3)):
        ok(
            server.client.put(
                "/api/k8s/bid", json={"limit_price_per_gpu_hour": price}, headers=auth
            )
        )
        ok(server.client.post("/api/k8s/jobs", json={"name": "job", "nodes": 1}, headers=auth), 201)
    ok(declare(server, vm, 8, 4))
    stats = tick(server, island="full")
    assert stats["gpus"] == 32  # the island is full, every node inside its window
    ok(server.client.delete("/api/k8s/jobs/job", headers=idle))  # idle, on the dearest bid

    block = ok(_block(server, "full-block", 2, 2.5, 4), 201)
    tick(server, island="full")

    held = {n["cluster"]: n for n in _nodes(server, "full").values() if n["state"] == "held"}
    assert set(held) == {"full-mid", "full-vm"}
    taken = [n for n in _nodes(server, "full").values() if n["state"] == "base_load"]
    assert {n["block"] for n in taken} == {block["id"]}
    assert len(taken) == 2
    preempted = ok(server.client.get("/api/k8s/jobs/job", headers=cheap))
    assert preempted["state"] == "pending"
    # preempted, then waiting outbid (docs/market.md "Why it waits"): one event each
    assert [e["type"] for e in preempted["events"]][-2:] == ["Preempted", "Outbid"]
    assert "base load" in preempted["events"][-2]["detail"]
    assert ok(server.client.get("/api/k8s/jobs/job", headers=mid))["state"] == "running"
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["held_gpus"] == 8


def test_block_placement_follows_priority_class_and_a_large_job_bids_for_the_rest(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "prio", nodes=4, reserve=1.0)
    _cap(server, "prio", 2)
    make_account(server, "prio-acct", balance=1000)
    k = make_cluster(server, "prio-acct", "prio", "k8s", "prio-k")
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 2}, headers=k))
    jobs = [
        {"name": "old-low", "nodes": 1, "priority_class": "low"},
        {"name": "big", "nodes": 3, "priority_class": "high"},
        {"name": "new-high", "nodes": 1, "priority_class": "high"},
    ]
    for body in jobs:
        ok(server.client.post("/api/k8s/jobs", json=body, headers=k), 201)
    ok(_block(server, "prio-k", 2, 2.0, 2), 201)
    stats = tick(server, island="prio")

    # big does not fit the block and does not hold back the smaller jobs: new-high first (its
    # class), then old-low; nothing is left on the block for big, and the market's 2 free
    # nodes cannot hold its 3, so it waits
    view = {j["name"]: j for j in ok(server.client.get("/api/k8s/jobs", headers=k))}
    assert view["new-high"]["state"] == "running"
    assert view["old-low"]["state"] == "running"
    assert view["big"]["state"] == "pending"
    assert stats["gpus"] == 0
    assert stats["pending_gpus"] == 24

    # old-low finishes: its block node counts toward big, which bids for the other 2 only
    ok(server.client.delete("/api/k8s/jobs/old-low", headers=k))
    stats = tick(server, island="prio")
    big = ok(server.client.get("/api/k8s/jobs/big", headers=k))
    assert big["state"] == "running"
    assert len(big["node_ids"]) == 3
    states = _nodes(server, "prio")
    assert sorted(states[n]["state"] for n in big["node_ids"]) == ["base_load", "held", "held"]
    assert stats["gpus"] == 16  # only the market part is in the statistics


def test_block_work_needs_no_balance_during_a_billing_hold(shared_server: Server) -> None:
    """An account at or below zero loses its market capacity, but its live block still runs its
    jobs: a job the block can hold is accepted and placed on it; only a job larger than the
    block, whose rest would bid on the market, is refused billing-hold."""
    server = shared_server
    make_island(server, "hold", nodes=4, reserve=1.0)
    _cap(server, "hold", 2)
    make_account(server, "hold-acct", balance=50)
    k = make_cluster(server, "hold-acct", "hold", "k8s", "hold-k")
    ok(_block(server, "hold-k", 2, 2.0, 4), 201)
    tick(server, island="hold")
    body = {"amount_usd": -100}
    path = "/api/admin/accounts/hold-acct/credit"
    assert ok(server.client.post(path, json=body, headers=server.operator()))["billing_hold"]

    ok(server.client.post("/api/k8s/jobs", json={"name": "fits", "nodes": 2}, headers=k), 201)
    tick(server, island="hold")
    job = ok(server.client.get("/api/k8s/jobs/fits", headers=k))
    assert job["state"] == "running"
    assert sorted(_nodes(server, "hold")[n]["state"] for n in job["node_ids"]) == [
        "base_load",
        "base_load",
    ]
    before = len(server.refused_lines())
    beyond = server.client.post("/api/k8s/jobs", json={"name": "big", "nodes": 3}, headers=k)
    assert beyond.status_code == 402
    assert beyond.json()["error"] == "billing-hold"
    assert [line for line in server.refused_lines()[before:] if "billing-hold" in line] != []


def test_a_step_down_with_no_price_bills_the_lowest_clearing_rate_until_its_window_closes(
    shared_server: Server,
) -> None:
    """At the end of the term two VM bids (5 and 4) hold the two market nodes over a 2-node
    gang at 3: the core prices them 3.5 and 2.5. The block's node, running a job with no price,
    steps down locked at the lowest of those, 2.5, and bills exactly that each tick of its
    window: even when the gang leaves and the auction would ask it for the reserve."""
    server = shared_server
    make_island(server, "lock", nodes=3, reserve=1.0)
    _cap(server, "lock", 1)
    make_account(server, "lock-acct", balance=10_000)
    k = make_cluster(server, "lock-acct", "lock", "k8s", "lock-k")
    a = make_cluster(server, "lock-acct", "lock", "vm", "lock-a")
    b = make_cluster(server, "lock-acct", "lock", "vm", "lock-b")
    gang = make_cluster(server, "lock-acct", "lock", "k8s", "lock-gang")
    ok(_block(server, "lock-k", 1, 2.0, 2), 201)
    ok(server.client.post("/api/k8s/jobs", json={"name": "steady", "nodes": 1}, headers=k), 201)
    ok(declare(server, a, 8, 5))
    ok(declare(server, b, 8, 4))
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 3}, headers=gang))
    ok(server.client.post("/api/k8s/jobs", json={"name": "pair", "nodes": 2}, headers=gang), 201)
    tick(server, count=23, island="lock")  # the term's last step; the VM windows lapsed
    stats = tick(server, island="lock")  # the end of the term
    (node,) = ok(server.client.get("/api/k8s/jobs/steady", headers=k))["node_ids"]
    stepped = _nodes(server, "lock")[node]
    assert (stepped["state"], stepped["locked_price"]) == ("held", 2.5)
    assert (stats["min"], stats["max"]) == (2.5, 3.5)

    def billed(stats: Any) -> int:
        """What the block's cluster was billed in the market for the tick's interval."""
        start = datetime.fromisoformat(stats["time"])
        params = {
            "granularity": "5m",
            "start": start.isoformat(),
            "end": (start + timedelta(minutes=5)).isoformat(),
        }
        rows = ok(server.client.get("/api/billing", params=params, headers=k))
        return sum(int(r["amount_units"]) for r in rows if r["kind"] == "market")

    interval_at = 8 * 300_000  # GPUs x ms: one 5-minute tick of one node
    assert billed(stats) == 2_500_000 * interval_at
    # the gang leaves: the auction prices the VM nodes at the reserve now, but the stepped-down
    # node bills its lock until its window closes
    ok(server.client.delete("/api/k8s/jobs/pair", headers=gang))
    for _ in range(3):
        stats = tick(server, island="lock")
        assert (stats["min"], stats["max"]) == (1.0, 2.5)
        assert billed(stats) == 2_500_000 * interval_at


def test_a_step_down_whose_declared_price_can_never_clear_locks_the_lowest_clearing_rate(
    shared_server: Server,
) -> None:
    """The cluster declared 1.2, then the operator raised the reserve to 2.0: a price too low to
    ever clear. At the end of the term the block's node is locked at the lowest rate the market
    clears at in that tick (two VM bids of 5 and 4 for one node: 4), never at the declared
    1.2 nor at the reserve, and bills that lock."""
    server = shared_server
    make_island(server, "under", nodes=2, reserve=1.0)
    _cap(server, "under", 1)
    make_account(server, "under-acct", balance=10_000)
    k = make_cluster(server, "under-acct", "under", "k8s", "under-k")
    a = make_cluster(server, "under-acct", "under", "vm", "under-a")
    b = make_cluster(server, "under-acct", "under", "vm", "under-b")
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 1.2}, headers=k))
    ok(_block(server, "under-k", 1, 2.0, 2), 201)
    ok(server.client.post("/api/k8s/jobs", json={"name": "steady", "nodes": 1}, headers=k), 201)
    ok(declare(server, a, 8, 5))
    ok(declare(server, b, 8, 4))
    tick(server, island="under")
    body = {"reserve_price": 2.0}
    ok(server.client.put("/api/admin/islands/under", json=body, headers=server.operator()))
    tick(server, count=22, island="under")  # the term's last step; the VM window lapsed
    stats = tick(server, island="under")  # the end of the term
    (node,) = ok(server.client.get("/api/k8s/jobs/steady", headers=k))["node_ids"]
    stepped = _nodes(server, "under")[node]
    assert (stepped["state"], stepped["cluster"], stepped["locked_price"]) == (
        "held",
        "under-k",
        4.0,
    )
    assert (stats["min"], stats["max"], stats["reserve_price"]) == (4.0, 4.0, 2.0)
    start = datetime.fromisoformat(stats["time"])
    params = {
        "granularity": "5m",
        "start": start.isoformat(),
        "end": (start + timedelta(minutes=5)).isoformat(),
    }
    rows = ok(server.client.get("/api/billing", params=params, headers=k))
    market = sum(int(r["amount_units"]) for r in rows if r["kind"] == "market")
    assert market == 4_000_000 * 8 * 300_000  # the lock x 8 GPUs x the tick's 5 minutes


def test_a_block_folds_its_own_running_job_and_leaves_another_tenants_protected_node(
    start_server: StartServer,
) -> None:
    """The island is full: a's job jz on one node, b's VM on the other (granted 00:00:10,
    window to 01:00:10). At 00:01:00 the operator makes a 1-node block for a. The block comes
    from a's own running work: jz folds in where it stands, and b's node is not reclaimed inside
    its window nor granted again (10-second ticks)."""
    server = start_server(env={"BURSTMARKET_CLOCK_START": CLOCK_START})
    make_island(server, "fold", nodes=2, reserve=1.0)
    _cap(server, "fold", 1)
    make_account(server, "fold-acct", balance=1000)
    a = make_cluster(server, "fold-acct", "fold", "k8s", "fold-a")
    b = make_cluster(server, "fold-acct", "fold", "vm", "fold-b")
    set_bid(server, a, 2)
    submit_job(server, a, "jz", 1)
    ok(declare(server, b, 8, 3))
    tick(server, island="fold")
    (theirs,) = ok(server.client.get("/api/vm/capacity", headers=b))["nodes"]
    assert (when(theirs["granted_at"]), when(theirs["window_ends_at"])) == (
        at("00:00:10"),
        at("01:00:10"),
    )
    (ours,) = read_job(server, a, "jz")["node_ids"]
    assert when(tick(server, count=5, island="fold")["time"]) == at("00:01:00")

    block = ok(_block(server, "fold-a", 1, 2.0, 2), 201)
    tick(server, island="fold")
    jz = read_job(server, a, "jz")
    assert (jz["state"], jz["node_ids"]) == ("running", [ours])
    assert jz["events"][-1]["type"] == "FoldedIntoBlock"
    nodes = _nodes(server, "fold")
    assert (nodes[ours]["state"], nodes[ours]["block"]) == ("base_load", block["id"])
    after = nodes[theirs["id"]]
    assert (after["state"], after["cluster"]) == ("held", "fold-b")
    assert (when(after["granted_at"]), when(after["window_ends_at"])) == (
        at("00:00:10"),
        at("01:00:10"),
    )


def test_a_block_is_cancelled_a_day_after_the_tick_that_took_the_balance_to_zero(
    start_server: StartServer,
) -> None:
    """Hourly ticks (a day is 24 of them). The operator's 1-node block at 1.0 (8 USD an hour)
    starts at 01:00 and bills its first 5-minute step; the 10 USD of credit do not cover the
    steps the tick at 02:00 bills (those starting before 03:00), so that tick takes the balance
    below zero. A day of it cancels the block at 02:00 the next day, exactly, not a tick
    later: billed 25 h of steps, 200 USD (a tick later would bill 8 USD more)."""
    server = start_server(
        "--clock", "manual", "--tick-seconds", "3600", env={"BURSTMARKET_CLOCK_START": CLOCK_START}
    )
    make_island(server, "day", nodes=1, reserve=1.0)
    _cap(server, "day", 1)
    make_account(server, "day-acct", balance=10)
    make_cluster(server, "day-acct", "day", "k8s", "day-k")
    assert when(tick(server, island="day")["time"]) == at("01:00:00")
    block = ok(_block(server, "day-k", 1, 1.0, 48), 201)
    assert when(block["starts_at"]) == at("01:00:00")
    path = "/api/admin/accounts/day-acct"
    assert not ok(server.client.get(path, headers=server.operator()))["billing_hold"]
    assert when(tick(server, island="day")["time"]) == at("02:00:00")
    assert ok(server.client.get(path, headers=server.operator()))["billing_hold"]

    assert when(tick(server, count=24, island="day")["time"]) == at("02:00:00", day=1)
    (cancelled,) = ok(
        server.client.get("/api/admin/clusters/day-k/base-load", headers=server.operator())
    )
    assert cancelled["state"] == "cancelled"
    assert when(cancelled["ended_at"]) == at("02:00:00", day=1)
    assert when(cancelled["billed_until"]) == at("02:00:00", day=1)
    assert Decimal(str(cancelled["billed_usd"])) == Decimal("200")  # 25 h of 8 GPUs at 1.0
