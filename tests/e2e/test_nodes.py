"""Operator node actions through the real server: cordon stops billing at once and earns a
replacement that inherits the window ahead of bids; dark inside a window is replaced too;
uncordon returns the node as idle capacity. Time moves only by POST /api/admin/ticks."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.conftest import Server, StartServer
from tests.e2e.support import (
    CLOCK_START,
    at,
    declare,
    make_account,
    make_cluster,
    make_island,
    ok,
    read_job,
    set_bid,
    submit_job,
    tick,
    ticks,
    when,
)

TICK_HOURS = 300 / 3600


def _nodes(server: Server, island: str) -> dict[str, Any]:
    rows = ok(server.client.get(f"/api/admin/islands/{island}/nodes", headers=server.operator()))
    return {n["id"]: n for n in rows}


def _act(server: Server, island: str, node: str, action: str) -> Any:
    path = f"/api/admin/islands/{island}/nodes/{node}/{action}"
    return ok(server.client.post(path, headers=server.operator()))


def _billed(server: Server, auth: dict[str, str]) -> list[Any]:
    return ok(server.client.get("/api/billing", params={"granularity": "1d"}, headers=auth))


def test_cordon_stops_billing_and_a_replacement_inherits_the_window_ahead_of_bids(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "cord", nodes=3, reserve=1.0)
    make_account(server, "cord-acct", balance=1000)
    k = make_cluster(server, "cord-acct", "cord", "k8s", "cord-k")
    vm = make_cluster(server, "cord-acct", "cord", "vm", "cord-vm")
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 4}, headers=k))
    ok(server.client.post("/api/k8s/jobs", json={"name": "train", "nodes": 2}, headers=k), 201)
    tick(server, island="cord")
    job = ok(server.client.get("/api/k8s/jobs/train", headers=k))
    assert job["state"] == "running"
    lost, kept = sorted(job["node_ids"])
    window = _nodes(server, "cord")[lost]["window_ends_at"]
    assert window is not None

    cordoned = _act(server, "cord", lost, "cordon")
    assert cordoned["state"] == "cordoned"
    assert cordoned["cluster"] == "cord-k"  # it stays with the cluster, unbilled
    assert cordoned["replacement_owed_until"] == window
    # billing for the node stops at once: the interval billed in advance is refunded for it
    assert sum(r["gpu_hours"] for r in _billed(server, k)) == pytest.approx(8 * TICK_HOURS)
    job = ok(server.client.get("/api/k8s/jobs/train", headers=k))
    assert job["node_ids"] == [kept]  # the job reads short by one node
    assert job["events"][-1]["type"] == "NodeCordoned"

    # a VM bid far above the job's limit does not get the free node: the replacement does
    ok(declare(server, vm, 8, 50))
    stats = tick(server, island="cord")
    job = ok(server.client.get("/api/k8s/jobs/train", headers=k))
    assert job["state"] == "running"
    assert len(job["node_ids"]) == 2
    (replacement,) = set(job["node_ids"]) - {kept}
    assert replacement != lost
    assert job["events"][-1]["type"] == "NodeReplaced"
    nodes = _nodes(server, "cord")
    assert nodes[replacement]["window_ends_at"] == window
    assert nodes[replacement]["locked_price"] == 4.0
    assert nodes[lost]["state"] == "cordoned"
    assert nodes[lost]["replacement_owed_until"] is None
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["held_gpus"] == 0
    assert stats["gpus"] == 16  # the cordoned node is neither held in the market nor billed
    assert stats["pending_gpus"] == 8
    # two ticks of 16 GPUs, less the cordoned node's refunded interval
    assert sum(r["gpu_hours"] for r in _billed(server, k)) == pytest.approx(3 * 8 * TICK_HOURS)


def test_uncordon_returns_the_node_as_idle_capacity_a_job_can_take(server: Server) -> None:
    """10-second ticks: the 5-minute idle grace is 30 ticks."""
    make_island(server, "unc", nodes=3, reserve=1.0)
    make_account(server, "unc-acct", balance=1000)
    k = make_cluster(server, "unc-acct", "unc", "k8s", "unc-k")
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 2}, headers=k))
    ok(server.client.post("/api/k8s/jobs", json={"name": "one", "nodes": 1}, headers=k), 201)
    tick(server, island="unc")
    (node,) = ok(server.client.get("/api/k8s/jobs/one", headers=k))["node_ids"]
    _act(server, "unc", node, "cordon")
    tick(server, island="unc")
    job = ok(server.client.get("/api/k8s/jobs/one", headers=k))
    assert node not in job["node_ids"]
    assert len(job["node_ids"]) == 1

    back = _act(server, "unc", node, "uncordon")
    assert (back["state"], back["cluster"], back["job"]) == ("held", "unc-k", None)
    # a job that fits takes the idle node instead of bidding
    ok(server.client.post("/api/k8s/jobs", json={"name": "two", "nodes": 1}, headers=k), 201)
    stats = tick(server, island="unc")
    two = ok(server.client.get("/api/k8s/jobs/two", headers=k))
    assert two["state"] == "running"
    assert two["node_ids"] == [node]
    assert "idle nodes" in two["events"][-1]["detail"]
    assert stats["gpus"] == 16

    # with nothing to run it is released after the idle grace (and the hold its replacement
    # took over); the cordoned node was never billed for a minimum hold
    ok(server.client.delete("/api/k8s/jobs/two", headers=k))
    _act(server, "unc", node, "cordon")
    _act(server, "unc", node, "uncordon")
    tick(server, count=29, island="unc")
    assert _nodes(server, "unc")[node]["state"] == "held"
    tick(server, island="unc")
    assert _nodes(server, "unc")[node]["state"] == "free"


def test_a_dark_node_inside_its_window_is_replaced_for_the_rest_of_it(
    shared_server: Server,
) -> None:
    server = shared_server
    make_island(server, "dark", nodes=2, reserve=1.0)
    make_account(server, "dark-acct", balance=1000)
    vm = make_cluster(server, "dark-acct", "dark", "vm", "dark-vm")
    ok(declare(server, vm, 8, 3))
    tick(server, island="dark")
    (held,) = ok(server.client.get("/api/vm/capacity", headers=vm))["nodes"]
    tick(server, count=2, island="dark")  # provisioning time counts against the window

    dark = _act(server, "dark", held["id"], "dark")
    assert dark["state"] == "dark"
    assert dark["replacement_owed_until"] == held["window_ends_at"]
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["held_gpus"] == 0

    stats = tick(server, island="dark")
    capacity = ok(server.client.get("/api/vm/capacity", headers=vm))
    (replacement,) = capacity["nodes"]
    assert replacement["id"] != held["id"]
    assert replacement["window_ends_at"] == held["window_ends_at"]
    assert replacement["locked_price"] == 3.0
    assert capacity["held_gpus"] == 8
    assert capacity["pending_gpus"] == 0
    assert stats["gpus"] == 8  # node count conserved: one node held, one out of service

    # cleared: the cluster already holds what it declared, so the node goes back to the island
    back = _act(server, "dark", held["id"], "uncordon")
    assert (back["state"], back["cluster"]) == ("free", None)


def test_node_actions_refuse_unknown_nodes_and_need_the_operator(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "act", nodes=1, reserve=1.0)
    before = len(server.refused_lines())
    missing = server.client.post(
        "/api/admin/islands/act/nodes/act-n0099/cordon", headers=server.operator()
    )
    assert missing.status_code == 404
    assert missing.json()["error"] == "not-found"
    anonymous = server.client.post("/api/admin/islands/act/nodes/act-n0000/cordon")
    assert anonymous.status_code in (401, 403)
    assert len(server.refused_lines()) == before + 2
    # a free node can be taken out of service and back
    assert _act(server, "act", "act-n0000", "cordon")["state"] == "cordoned"
    assert tick(server, island="act")["gpus"] == 0
    assert _act(server, "act", "act-n0000", "uncordon")["state"] == "free"


def test_the_new_operator_paths_are_in_the_openapi_document(shared_server: Server) -> None:
    paths = ok(shared_server.client.get("/schema/openapi.json"))["paths"]
    for action in ("cordon", "uncordon", "dark"):
        assert f"/api/admin/islands/{{island_id}}/nodes/{{node_id}}/{action}" in paths
    assert "/api/admin/islands/{island_id}/nodes" in paths
    assert "post" in paths["/api/admin/clusters/{cluster_id}/base-load"]


def test_a_replacement_that_reclaims_a_node_is_billed_from_its_first_tick(
    shared_server: Server,
) -> None:
    """kg's job holds n0 under a 2 h window, a VM at 5.0 holds n1 under 1 h; n0 goes dark.
    When the VM's window lapses, the replacement takes n1 ahead of the VM's bid: from that very
    tick kg holds it, pays for it, and the statistics count it."""
    server = shared_server
    make_island(server, "recl", nodes=2, reserve=1.0)
    make_account(server, "recl-acct", balance=1000)
    k = make_cluster(server, "recl-acct", "recl", "k8s", "recl-k")
    vm = make_cluster(server, "recl-acct", "recl", "vm", "recl-vm")
    set_bid(server, k, 2)
    submit_job(server, k, "train", 1)
    ok(declare(server, vm, 8, 5))
    tick(server, island="recl")
    (lost,) = read_job(server, k, "train")["node_ids"]
    tick(server, count=2, island="recl")
    _act(server, "recl", lost, "dark")
    billed_before = sum(r["gpu_hours"] for r in _billed(server, k))
    stats = tick(server, count=9, island="recl")  # the VM's window runs 12 ticks
    assert stats["gpus"] == 8  # the VM alone; kg is owed a replacement, nowhere to put it
    assert read_job(server, k, "train")["node_ids"] == []

    stats = tick(server, island="recl")  # one hour after the grant: the VM's window lapses
    job = read_job(server, k, "train")
    (replacement,) = job["node_ids"]
    assert replacement != lost
    assert job["events"][-1]["type"] == "NodeReplaced"
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["held_gpus"] == 0
    assert (stats["gpus"], stats["clusters"]) == (8, 1)  # held from this tick, and counted
    assert job["rate"] == 2.0  # the VM it displaced would pay 5: the window's cap, 2
    billed = sum(r["gpu_hours"] for r in _billed(server, k))
    assert billed == pytest.approx(billed_before + 8 * TICK_HOURS)


def test_a_dark_idle_node_is_owed_a_replacement_only_until_its_grace_ends(
    shared_server: Server,
) -> None:
    """The job finishes 70 minutes in (past the 1 h hold: a 5-minute idle grace is left) and
    the idle node goes dark: a replacement is owed until the grace would have ended, not for
    the rest of the window, so a node freed later goes to the market, not to an idle right."""
    server = shared_server
    make_island(server, "dkid", nodes=2, reserve=1.0)
    make_account(server, "dkid-acct", balance=1000)
    k = make_cluster(server, "dkid-acct", "dkid", "k8s", "dkid-k")
    holder = make_cluster(server, "dkid-acct", "dkid", "vm", "dkid-holder")
    waiter = make_cluster(server, "dkid-acct", "dkid", "vm", "dkid-waiter")
    set_bid(server, k, 2)
    submit_job(server, k, "train", 1)
    ok(declare(server, holder, 8, 5))
    first = tick(server, island="dkid")
    ok(declare(server, waiter, 8, 3))
    (node,) = read_job(server, k, "train")["node_ids"]
    tick(server, count=14, island="dkid")  # 70 minutes
    ok(server.client.delete("/api/k8s/jobs/train", headers=k))  # idle, grace to 75 minutes
    dark = _act(server, "dkid", node, "dark")
    grace_end = datetime.fromisoformat(first["time"]) + timedelta(minutes=75)
    assert datetime.fromisoformat(dark["replacement_owed_until"]) == grace_end
    assert grace_end < datetime.fromisoformat(dark["window_ends_at"])

    tick(server, island="dkid")  # 75 minutes: the grace is over, so is the right
    assert _nodes(server, "dkid")[node]["replacement_owed_until"] is None
    ok(declare(server, holder, 0, None))  # a node comes free
    tick(server, island="dkid")
    assert ok(server.client.get("/api/vm/capacity", headers=waiter))["held_gpus"] == 8
    held = [n for n in _nodes(server, "dkid").values() if n["cluster"] == "dkid-k"]
    assert [n["id"] for n in held] == [node]  # only the dark node itself, unbilled


def test_an_uncordoned_node_competes_and_events_never_contradict_in_one_tick(
    server: Server,
) -> None:
    """The uncordoned node comes back as idle capacity outside any window (its replacement
    took the window): a waiting job placed on it bids at its own price, and a higher bid takes
    the node at once. The job was never running: no Provisioned, no Preempted. (10-second
    ticks: the node is still inside its 5-minute idle grace.)"""
    make_island(server, "unc2", nodes=3, reserve=1.0)
    make_account(server, "unc2-acct", balance=1000)
    k = make_cluster(server, "unc2-acct", "unc2", "k8s", "unc2-k")
    vm = make_cluster(server, "unc2-acct", "unc2", "vm", "unc2-vm")
    set_bid(server, k, 2)
    submit_job(server, k, "one", 1)
    tick(server, island="unc2")
    (node,) = read_job(server, k, "one")["node_ids"]
    _act(server, "unc2", node, "cordon")
    ok(declare(server, vm, 16, 9))
    tick(server, island="unc2")  # the replacement and the VM share the two other nodes
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["held_gpus"] == 8

    back = _act(server, "unc2", node, "uncordon")
    assert (back["state"], back["cluster"], back["window_ends_at"]) == ("held", "unc2-k", None)
    submit_job(server, k, "two", 1)
    tick(server, island="unc2")
    two = read_job(server, k, "two")
    assert two["state"] == "pending"
    assert [e["type"] for e in two["events"]] == ["Outbid"]  # waiting, never Provisioned
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["held_gpus"] == 16
    assert _nodes(server, "unc2")[node]["cluster"] == "unc2-vm"
    for job in ok(server.client.get("/api/k8s/jobs", headers=k)):
        by_time: dict[str, set[str]] = {}
        for event in job["events"]:
            by_time.setdefault(event["at"], set()).add(event["type"])
        assert all(not {"Provisioned", "Preempted"} <= kinds for kinds in by_time.values())


def test_an_uncordoned_idle_node_is_billed_from_its_return_to_its_release_and_no_further(
    start_server: StartServer,
) -> None:
    """10-second ticks from 00:00:00. The job's node is granted at 00:00:10 and cordoned at
    00:31:00; its replacement takes the window and the hold. Back at 00:41:10 as idle capacity,
    it is released after the idle grace, at 00:46:10, and billed exactly those 300 s: its
    5-minute increments count from its return, not from a grant whose hour went to the
    replacement."""
    server = start_server(env={"BURSTMARKET_CLOCK_START": CLOCK_START})
    make_island(server, "ret", nodes=2, reserve=1.0)
    make_account(server, "ret-acct", balance=1000)
    k = make_cluster(server, "ret-acct", "ret", "k8s", "ret-k")
    set_bid(server, k, 2)
    submit_job(server, k, "jz", 1)
    tick(server, island="ret")
    (node,) = read_job(server, k, "jz")["node_ids"]
    assert when(_nodes(server, "ret")[node]["granted_at"]) == at("00:00:10")
    assert when(ticks(server, 185, "ret")["time"]) == at("00:31:00")
    _act(server, "ret", node, "cordon")
    tick(server, island="ret")
    (replacement,) = read_job(server, k, "jz")["node_ids"]
    assert replacement != node
    assert when(ticks(server, 60, "ret")["time"]) == at("00:41:10")
    back = _act(server, "ret", node, "uncordon")
    assert (back["state"], back["job"]) == ("held", None)
    ticks(server, 29, "ret")
    assert _nodes(server, "ret")[node]["state"] == "held"
    last = tick(server, island="ret")
    assert when(last["time"]) == at("00:46:10")
    assert _nodes(server, "ret")[node]["state"] == "free"

    def billed_gpu_ms(since: datetime) -> int:
        """The cluster's market billing from `since` on, in GPU-ms: one cluster on an island
        with room pays the reserve, 1.0 (10^6 µUSD per GPU-hour)."""
        params = {"granularity": "1d", "start": since.isoformat()}
        rows = ok(server.client.get("/api/billing", params=params, headers=k))
        units = sum(int(r["amount_units"]) for r in rows if r["kind"] == "market")
        assert units % 1_000_000 == 0
        return units // 1_000_000

    # from the uncordon: the returned node's 300 s and the replacement's 310 s (up to the end
    # of the interval the last tick billed in advance), 8 GPUs each
    assert billed_gpu_ms(at("00:41:10")) == 8 * (300 + 310) * 1000
    # past that interval nothing: no increment billed beyond the release
    assert billed_gpu_ms(at("00:46:20")) == 0
