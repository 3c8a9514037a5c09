"""`serve --simulate`: simulated tenants trade through the HTTP API and every feed moves."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Server, StartServer
from tests.e2e.support import bearer, eventually, ok
from tests.simulation.announced import announced


def stats(server: Server, island: str) -> dict[str, Any] | None:
    response = server.client.get("/api/market/stats", params={"island": island})
    return response.json() if response.status_code == 200 else None


def test_simulated_tenants_make_a_moving_market_on_two_islands(
    start_server: StartServer,
) -> None:
    # market time 300x faster than real time (10-s ticks back to back); no operator token is
    # set, so the process makes its own
    server = start_server("--simulate", "--speed", "300", operator_token=None)
    assert f"dashboard {server.url}/" in server.log()
    assert f"console {server.url}/console" in server.log()
    assert "market time 300x real time: the manual clock, which the simulation ticks" in (
        server.log()
    )
    eventually(
        lambda: {"ref", "edge"} <= {i["id"] for i in ok(server.client.get("/api/islands"))},
        "two islands",
        server,
    )
    vwaps: dict[str, set[float]] = {"ref": set(), "edge": set()}

    def moving() -> bool:
        for island, seen in vwaps.items():
            now = stats(server, island)
            if now is not None and now["vwap"] is not None:
                seen.add(now["vwap"])
        return all(len(seen) >= 3 for seen in vwaps.values())

    eventually(moving, "the vwap of both islands taking three values", server)
    # every tenant is a real cluster with its own token, held by the simulation's state file
    tokens = json.loads((server.data_dir / "simulation.json").read_text())["tokens"]
    kinds = {name.rsplit("-", 1)[1] for name in tokens}
    assert kinds == {"vm", "k8s"}
    assert (server.data_dir / "simulation.json").stat().st_mode & 0o777 == 0o600
    # a VM and a Kubernetes simulated tenant to watch or sign in as, with their tokens
    printed = announced(server).watch
    assert [c.kind for c in printed] == ["vm", "k8s"]
    assert printed[1].name.endswith("-base-k8s")  # the tenant whose page shows a block
    for cluster in printed:
        assert tokens[cluster.name] == cluster.token
        me = ok(server.client.get("/api/cluster", headers=bearer(cluster.token)))
        assert (me["id"], me["kind"]) == (cluster.name, cluster.kind)
    k8s = next(token for name, token in tokens.items() if name.endswith("-k8s"))
    jobs = eventually(
        lambda: ok(server.client.get("/api/k8s/jobs", headers=bearer(k8s))), "jobs", server
    )
    assert {job["state"] for job in jobs} <= {"pending", "running", "finished"}
    # one tenant buys a base load block on its own and runs jobs smaller than a node on it
    base = bearer(next(token for name, token in tokens.items() if name.endswith("-base-k8s")))
    block = eventually(
        lambda: ok(server.client.get("/api/base-load", headers=base))["live"], "a block", server
    )
    assert (block["origin"], block["gpus"]) == ("purchase", 16)

    def small_running() -> list[Any]:
        jobs = ok(server.client.get("/api/k8s/jobs", headers=base))
        return [j for j in jobs if j["gpus_per_pod"] is not None and j["state"] == "running"]

    running = eventually(small_running, "a job smaller than a node running on the block", server)
    assert all(j["pods"] * j["gpus_per_pod"] <= 8 and len(j["node_ids"]) == 1 for j in running)
    # the operator endpoints stay closed to anyone without the process's own token
    refused = server.client.post("/api/admin/ticks", json={"count": 1})
    assert refused.status_code in (401, 403)
