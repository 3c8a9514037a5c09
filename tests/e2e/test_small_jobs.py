"""Jobs smaller than one node on the block, through the real server (5-minute ticks, the idle
grace's length, unless said otherwise): packed by GPU count where the operator enabled packing,
several to a node; whole-node jobs take empty block nodes first; a small job opens an empty node
only when no whole-node job waits for it, or once it and the node have waited the idle grace; a
running small job is never moved; pods that together pass one node wait ReservedTooSmall;
without a live block a small job waits ReservedBusy, never bidding, never burst demand; at the
end of the term it is requeued at once as a new request."""

from __future__ import annotations

from typing import Any

from tests.conftest import Server
from tests.e2e.support import make_account, make_cluster, make_island, ok, read_job, tick


def _setup(
    server: Server, island: str, block_nodes: int | None, packing: bool = True, nodes: int = 4
) -> dict[str, str]:
    """An island with a Kubernetes cluster `<island>-k` (no limit price: it never wins the
    market), packing as given, and a block of `block_nodes` for 2 hours."""
    make_island(server, island, nodes=nodes, reserve=1.0)
    ok(
        server.client.put(
            f"/api/admin/islands/{island}", json={"base_load_cap": nodes}, headers=server.operator()
        )
    )
    make_account(server, f"{island}-acct", balance=10_000)
    k = make_cluster(server, f"{island}-acct", island, "k8s", f"{island}-k")
    path = f"/api/admin/clusters/{island}-k/base-load/packing"
    answer = ok(server.client.put(path, json={"enabled": packing}, headers=server.operator()))
    assert answer == {"cluster": f"{island}-k", "enabled": packing}
    if block_nodes is not None:
        _block(server, f"{island}-k", block_nodes)
    return k


def _block(server: Server, cluster: str, nodes: int, hours: int = 2) -> Any:
    body = {"nodes": nodes, "rate_per_gpu_hour": 2.0, "term_hours": hours}
    path = f"/api/admin/clusters/{cluster}/base-load"
    return ok(server.client.post(path, json=body, headers=server.operator()), 201)


def _small(server: Server, k: dict[str, str], name: str, pods: int, gpus: int) -> Any:
    body = {"name": name, "pods": pods, "gpus_per_pod": gpus}
    return ok(server.client.post("/api/k8s/jobs", json=body, headers=k), 201)


def _whole(server: Server, k: dict[str, str], name: str, nodes: int) -> Any:
    return ok(
        server.client.post("/api/k8s/jobs", json={"name": name, "nodes": nodes}, headers=k), 201
    )


def _jobs(server: Server, k: dict[str, str]) -> dict[str, Any]:
    return {j["name"]: j for j in ok(server.client.get("/api/k8s/jobs", headers=k))}


def _block_nodes(server: Server, island: str) -> list[str]:
    rows = ok(server.client.get(f"/api/admin/islands/{island}/nodes", headers=server.operator()))
    return [n["id"] for n in rows if n["state"] == "base_load"]


def test_small_jobs_share_a_block_node_by_gpu_count(shared_server: Server) -> None:
    server = shared_server
    k = _setup(server, "share", block_nodes=2)
    a = _small(server, k, "a", pods=2, gpus=2)
    assert (a["nodes"], a["pods"], a["gpus_per_pod"], a["state"]) == (0, 2, 2, "pending")
    _small(server, k, "b", pods=1, gpus=4)
    _small(server, k, "c", pods=1, gpus=2)
    stats = tick(server, island="share")
    jobs = _jobs(server, k)
    assert {j["state"] for j in jobs.values()} == {"running"}
    assert {j["reason"] for j in jobs.values()} == {None}
    # a (4 GPUs) and b (4 GPUs) fill one node; c opens the other (no whole-node job waits)
    assert jobs["a"]["node_ids"] == jobs["b"]["node_ids"]
    assert jobs["c"]["node_ids"] != jobs["a"]["node_ids"]
    assert sorted(jobs["a"]["node_ids"] + jobs["c"]["node_ids"]) == sorted(
        _block_nodes(server, "share")
    )
    assert "placed on the base load block" in jobs["a"]["events"][-1]["detail"]
    assert jobs["a"]["events"][-1]["type"] == "Provisioned"
    # never in the market: no market GPUs, nothing pending
    assert (stats["gpus"], stats["pending_gpus"]) == (0, 0)
    # a finishes: b keeps its place; c's node has room for d beside c
    ok(server.client.delete("/api/k8s/jobs/a", headers=k))
    _small(server, k, "d", pods=3, gpus=2)
    tick(server, island="share")
    jobs = _jobs(server, k)
    assert jobs["d"]["state"] == "running"
    assert jobs["d"]["node_ids"] == jobs["c"]["node_ids"]
    assert jobs["b"]["node_ids"] != jobs["c"]["node_ids"]


def test_whole_node_jobs_take_an_empty_block_node_first(shared_server: Server) -> None:
    server = shared_server
    k = _setup(server, "first", block_nodes=2)
    _small(server, k, "x", pods=1, gpus=4)
    tick(server, island="first")
    # y is older than w, but y (6 GPUs) does not fit beside x: the empty node goes to w
    _small(server, k, "y", pods=1, gpus=6)
    _whole(server, k, "w", 1)
    tick(server, island="first")
    jobs = _jobs(server, k)
    assert jobs["w"]["state"] == "running"
    assert jobs["y"]["state"] == "pending"
    assert jobs["y"]["reason"] == "ReservedBusy"
    assert jobs["y"]["events"][-1]["type"] == "ReservedBusy"
    assert set(jobs["w"]["node_ids"]) | set(jobs["x"]["node_ids"]) == set(
        _block_nodes(server, "first")
    )


def test_a_small_job_opens_an_empty_node_only_when_no_whole_node_job_waits_for_it(
    server: Server,
) -> None:
    """10-second ticks, a 5-minute idle grace. `big` (3 nodes) does not fit the 2-node block and
    cannot win the market (no price): the block's empty nodes count toward it. A small job waits
    for them until the node has sat empty for the grace and the job has waited as long."""
    k = _setup(server, "awaited", block_nodes=2)
    _whole(server, k, "big", 3)
    _small(server, k, "s", pods=1, gpus=6)  # at T0
    tick(server, island="awaited")  # T0 + 10 s: the block's nodes join it, empty from now
    jobs = _jobs(server, k)
    assert (jobs["big"]["state"], jobs["s"]["state"]) == ("pending", "pending")
    assert jobs["s"]["reason"] == "ReservedBusy"
    tick(server, count=19, island="awaited")
    _small(server, k, "s2", pods=1, gpus=4)  # at T0 + 200 s; cannot share with s (6 + 4 > 8)
    tick(server, count=10, island="awaited")  # T0 + 300 s: the nodes have been empty 290 s
    assert read_job(server, k, "s")["state"] == "pending"
    tick(server, island="awaited")  # T0 + 310 s: empty 300 s, and s waited 310 s
    jobs = _jobs(server, k)
    assert jobs["s"]["state"] == "running"
    assert jobs["s2"]["state"] == "pending"  # it has waited 110 s
    tick(server, count=18, island="awaited")  # T0 + 490 s
    assert read_job(server, k, "s2")["state"] == "pending"
    tick(server, island="awaited")  # T0 + 500 s: s2 has waited the grace
    jobs = _jobs(server, k)
    assert jobs["s2"]["state"] == "running"
    assert jobs["big"]["state"] == "pending"
    assert sorted(jobs["s"]["node_ids"] + jobs["s2"]["node_ids"]) == sorted(
        _block_nodes(server, "awaited")
    )

    # without a whole-node job waiting, a small job opens an empty node at once
    k2 = _setup(server, "open", block_nodes=2)
    tick(server, island="open")
    _small(server, k2, "s", pods=1, gpus=6)
    tick(server, island="open")
    assert read_job(server, k2, "s")["state"] == "running"


def test_a_running_small_job_is_never_moved(shared_server: Server) -> None:
    server = shared_server
    k = _setup(server, "stay", block_nodes=2)
    _small(server, k, "a", pods=1, gpus=4)
    _small(server, k, "b", pods=1, gpus=4)
    _small(server, k, "c", pods=1, gpus=4)
    tick(server, island="stay")
    jobs = _jobs(server, k)
    assert jobs["a"]["node_ids"] == jobs["b"]["node_ids"] != jobs["c"]["node_ids"]
    ok(server.client.delete("/api/k8s/jobs/b", headers=k))
    # a and c now sit on two half-empty nodes: moving c beside a would free a node for w, but
    # the market never moves a running small job; w waits
    _whole(server, k, "w", 1)
    for _ in range(3):
        tick(server, island="stay")
        now = _jobs(server, k)
        assert now["a"]["node_ids"] == jobs["a"]["node_ids"]
        assert now["c"]["node_ids"] == jobs["c"]["node_ids"]
        assert now["w"]["state"] == "pending"


def test_pods_each_under_a_node_that_together_pass_one_wait_reserved_too_small(
    shared_server: Server,
) -> None:
    server = shared_server
    k = _setup(server, "toosmall", block_nodes=2)
    _small(server, k, "wide", pods=3, gpus=4)
    for _ in range(3):
        tick(server, island="toosmall")
    job = read_job(server, k, "wide")
    assert (job["state"], job["reason"], job["node_ids"]) == ("pending", "ReservedTooSmall", [])
    told = [e for e in job["events"] if e["type"] == "ReservedTooSmall"]
    assert len(told) == 1  # once, when it started, not every tick
    assert "whole-node pods or with fewer pods" in told[0]["detail"]


def test_without_a_live_block_a_small_job_waits_reserved_busy_and_never_bids(
    shared_server: Server,
) -> None:
    server = shared_server
    k = _setup(server, "noblock", block_nodes=None)
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 5}, headers=k))
    since = len(server.refused_lines())
    _small(server, k, "wait", pods=2, gpus=2)
    stats = tick(server, island="noblock")
    job = read_job(server, k, "wait")
    assert (job["state"], job["reason"], job["bid_too_low"]) == ("pending", "ReservedBusy", False)
    assert "no live base load block" in job["events"][-1]["detail"]
    # not burst demand: the market holds and waits for nothing, and nothing was refused
    assert (stats["gpus"], stats["pending_gpus"]) == (0, 0)
    assert server.refused_lines()[since:] == []
    _block(server, "noblock-k", 1)
    tick(server, island="noblock")
    job = read_job(server, k, "wait")
    assert (job["state"], job["reason"]) == ("running", None)
    assert job["node_ids"] == _block_nodes(server, "noblock")


def test_without_packing_a_small_job_waits_packing_disabled(shared_server: Server) -> None:
    server = shared_server
    k = _setup(server, "nopack", block_nodes=1, packing=False)
    _small(server, k, "p", pods=1, gpus=2)
    tick(server, island="nopack")
    job = read_job(server, k, "p")
    assert (job["state"], job["reason"]) == ("pending", "PackingDisabled")
    path = "/api/admin/clusters/nopack-k/base-load/packing"
    ok(server.client.put(path, json={"enabled": True}, headers=server.operator()))
    tick(server, island="nopack")
    assert read_job(server, k, "p")["state"] == "running"


def test_at_the_end_of_the_term_a_small_job_is_requeued_at_once_and_waits_reserved_busy(
    shared_server: Server,
) -> None:
    server = shared_server
    k = _setup(server, "term", block_nodes=None)
    block = _block(server, "term-k", 1, hours=1)
    _small(server, k, "s", pods=1, gpus=2)
    tick(server, island="term")
    (node,) = read_job(server, k, "s")["node_ids"]
    tick(server, count=10, island="term")  # the hour's last step
    assert read_job(server, k, "s")["state"] == "running"
    stats = tick(server, island="term")  # the end of the term
    job = read_job(server, k, "s")
    assert (job["state"], job["reason"], job["node_ids"]) == ("pending", "ReservedBusy", [])
    kinds = [e["type"] for e in job["events"]]
    assert kinds[-2:] == ["Requeued", "ReservedBusy"]
    assert job["events"][-2]["at"] == block["ends_at"]  # at the end date, as a new request
    # its node stepped down idle, alone: the job never went to a market node
    nodes = ok(server.client.get("/api/admin/islands/term/nodes", headers=server.operator()))
    stepped = next(n for n in nodes if n["id"] == node)
    assert (stepped["state"], stepped["job"]) == ("held", None)
    assert stats["pending_gpus"] == 0
    tick(server, count=2, island="term")
    assert read_job(server, k, "s")["state"] == "pending"
    # a new block: it runs again
    _block(server, "term-k", 1)
    tick(server, island="term")
    assert read_job(server, k, "s")["state"] == "running"


def test_a_small_job_is_checked_as_it_is_submitted(shared_server: Server) -> None:
    server = shared_server
    k = _setup(server, "shape", block_nodes=None)
    path = "/api/k8s/jobs"
    for body, field in (
        ({"name": "a", "pods": 1, "gpus_per_pod": 9}, "gpus_per_pod"),
        ({"name": "a", "pods": 0, "gpus_per_pod": 2}, "pods"),
        ({"name": "a", "pods": 1}, "gpus_per_pod"),
        ({"name": "a", "nodes": 1, "pods": 1, "gpus_per_pod": 2}, "nodes"),
        ({"name": "a"}, "nodes"),
    ):
        answer = server.client.post(path, json=body, headers=k)
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == field
    # pods of a whole node's GPUs are a job of whole nodes
    whole = ok(
        server.client.post(path, json={"name": "w", "pods": 2, "gpus_per_pod": 8}, headers=k), 201
    )
    assert (whole["nodes"], whole["pods"], whole["gpus_per_pod"]) == (2, None, None)
