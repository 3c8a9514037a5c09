"""Verdicts and refusals the tick makes, through the real server on the manual clock (5-minute
ticks): a running job whose limit falls under the reserve is told so, a valid raise clears the
verdict at once, and every refusal the tick makes logs exactly one line
(docs/market.md "Refusals")."""

from __future__ import annotations

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
    submit_job,
    tick,
)


def test_a_running_job_whose_limit_falls_under_the_reserve_gets_the_verdict(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "vrun", nodes=1, reserve=1.0)
    make_account(server, "vrun-acct", balance=1000)
    k = make_cluster(server, "vrun-acct", "vrun", "k8s", "vrun-k")
    set_bid(server, k, 5)
    submit_job(server, k, "train", 1)
    tick(server, island="vrun")
    assert read_job(server, k, "train")["state"] == "running"

    make_island(server, "vrun", nodes=1, reserve=6.0)
    tick(server, island="vrun")
    job = read_job(server, k, "train")
    assert job["state"] == "running"  # inside its window: protected, at the lock
    assert job["bid_too_low"] is True
    assert job["events"][-1]["type"] == "BidTooLow"
    assert ok(server.client.get("/api/k8s/bid", headers=k))["bid_too_low"] is True
    assert len(refused_for(server, "bid-too-low", "vrun-k")) == 1
    tick(server, count=2, island="vrun")
    assert len(refused_for(server, "bid-too-low", "vrun-k")) == 1  # once, when it starts

    # a valid raise is seen at once, by the cluster's read and the job's
    set_bid(server, k, 7)
    assert ok(server.client.get("/api/k8s/bid", headers=k))["bid_too_low"] is False
    assert read_job(server, k, "train")["bid_too_low"] is False


def test_a_valid_bid_clears_a_pending_jobs_verdict_before_the_next_tick(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "vpend", nodes=1, reserve=1.0)
    make_account(server, "vpend-acct", balance=1000)
    k = make_cluster(server, "vpend-acct", "vpend", "k8s", "vpend-k")
    submit_job(server, k, "wait", 1)
    tick(server, island="vpend")  # no limit price: it bids nothing
    assert read_job(server, k, "wait")["bid_too_low"] is True
    assert len(refused_for(server, "bid-too-low", "vpend-k")) == 1
    bid = set_bid(server, k, 2)
    assert bid["bid_too_low"] is False
    assert ok(server.client.get("/api/k8s/bid", headers=k))["bid_too_low"] is False
    assert read_job(server, k, "wait")["bid_too_low"] is False
    tick(server, island="vpend")
    assert read_job(server, k, "wait")["state"] == "running"


def test_a_standing_vm_bid_overtaken_by_the_reserve_logs_one_line(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "vres", nodes=1, reserve=1.0)
    make_account(server, "vres-acct", balance=1000)
    holder = make_cluster(server, "vres-acct", "vres", "vm", "vres-holder")
    waiter = make_cluster(server, "vres-acct", "vres", "vm", "vres-waiter")
    ok(declare(server, holder, 8, 4))
    ok(declare(server, waiter, 8, 2))
    tick(server, island="vres")
    assert refused_for(server, "bid-too-low", "vres-waiter") == []
    make_island(server, "vres", nodes=1, reserve=3.0)
    tick(server, count=3, island="vres")
    (line,) = refused_for(server, "bid-too-low", "vres-waiter")
    assert "price_per_gpu_hour=2.0" in line
    assert "reserve_price=3.0" in line
    assert refused_for(server, "bid-too-low", "vres-holder") == []
    # back over the reserve, then under it again: a new verdict, a new line
    ok(declare(server, waiter, 8, 3.5))
    tick(server, island="vres")
    make_island(server, "vres", nodes=1, reserve=3.6)
    tick(server, island="vres")
    assert len(refused_for(server, "bid-too-low", "vres-waiter")) == 2


def test_every_renewal_refused_by_the_spend_limit_logs_a_line(shared_server: Server) -> None:
    """Two nodes at the reserve (8 USD per node-hour) under a limit of 28 USD a day: after the
    first hour (16 spent) one node renews and the other is released; after the second (24
    spent) the last one is released too, while the cluster is already spend-limited."""
    server = shared_server
    make_island(server, "vren", nodes=2, reserve=1.0)
    make_account(server, "vren-acct", balance=1000)
    c = make_cluster(server, "vren-acct", "vren", "vm", "vren-c")
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 28}, headers=c))
    ok(declare(server, c, 16, 1))
    tick(server, count=12, island="vren")
    assert ok(server.client.get("/api/vm/capacity", headers=c))["held_gpus"] == 16
    assert refused_for(server, "spend-limit", "vren-c") == []

    tick(server, island="vren")  # one hour: the commitments end, the next hour must fit
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert (capacity["held_gpus"], capacity["pending_reason"]) == (8, "spend-limit")
    (first,) = refused_for(server, "spend-limit", "vren-c")
    assert " node=" in first

    tick(server, count=11, island="vren")
    assert len(refused_for(server, "spend-limit", "vren-c")) == 1  # withheld demand: no new line
    tick(server, island="vren")  # two hours: the last node's next hour does not fit
    assert ok(server.client.get("/api/vm/capacity", headers=c))["held_gpus"] == 0
    assert len(refused_for(server, "spend-limit", "vren-c")) == 2
