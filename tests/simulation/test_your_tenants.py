"""`serve --simulate` makes tenants of the person running it, which the simulation never
drives, and prints their tokens first; on the local demo the operator token too. A restart
brings the same tokens back, and a data dir from before they existed gains them."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from burstmarket.simulation.world import World
from tests.conftest import OPERATOR_TOKEN, Server, StartServer
from tests.e2e.support import bearer, eventually, ok
from tests.simulation.announced import Announced, Cluster, announced

YOURS = [
    ("you-ref-vm", "vm", "ref"),
    ("you-ref-k8s", "k8s", "ref"),
    ("you-edge-vm", "vm", "edge"),
    ("you-edge-k8s", "k8s", "edge"),
]
TICKS = 60
"""Ticks of each island the simulation runs while the test watches: ten minutes of market
time, in which every simulated VM tenant resizes about twice and jobs come and go."""
TOKEN_WORD = re.compile(r"(?<![\w-])[\w-]{43}(?![\w-])")
"""A word shaped like a token the service makes (`secrets.token_urlsafe(32)`)."""


def tick_of(server: Server, island: str) -> int:
    response = server.client.get("/api/market/stats", params={"island": island})
    return int(response.json()["tick"]) if response.status_code == 200 else 0


def access(server: Server) -> list[dict[str, str]]:
    """Every access line's fields (`method=… path=… status=… duration_ms=… cluster=…`)."""
    lines = server.messages("burstmarket.access")
    return [dict(field.partition("=")[::2] for field in line.split()) for line in lines]


def demo(start_server: StartServer, data_dir: Path | None = None) -> tuple[Server, Announced]:
    """`make run` as a test runs it: market time 300x, no operator token in the environment."""
    server = start_server("--simulate", "--speed", "300", operator_token=None, data_dir=data_dir)
    return server, announced(server)


def operator_token(said: Announced) -> str:
    assert said.operator is not None
    return said.operator.rsplit(" ", 1)[1]


def test_your_tenants_are_made_as_new_and_the_simulation_never_acts_for_them(
    start_server: StartServer,
) -> None:
    server, said = demo(start_server)
    assert [(c.name, c.kind, c.island) for c in said.yours] == YOURS
    sent: Counter[str] = Counter()

    def call(c: Cluster, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        """A request with one of your tokens, counted: all the access log may show of them."""
        sent[c.name] += 1
        return ok(server.client.request(method, path, json=body, headers=bearer(c.token)), status)

    # as the demo makes them: funded, no spend limit, nothing declared
    for c in said.yours:
        me = call(c, "GET", "/api/cluster")
        assert (me["id"], me["account"], me["island"], me["kind"]) == (
            c.name,
            "you",
            c.island,
            c.kind,
        )
        assert call(c, "GET", "/api/spend-limit")["usd_per_day"] is None
        if c.kind == "vm":
            capacity = call(c, "GET", "/api/vm/capacity")
            assert (capacity["max_gpus"], capacity["max_price_per_gpu_hour"]) == (0, None)
        else:
            assert call(c, "GET", "/api/k8s/bid")["limit_price_per_gpu_hour"] is None
            assert call(c, "GET", "/api/k8s/jobs") == []
            assert call(c, "GET", "/api/base-load") == {"live": None, "past": []}
    operator = bearer(operator_token(said))
    account = ok(server.client.get("/api/admin/accounts/you", headers=operator))
    assert account["balance_usd"] == 100_000
    assert sorted(account["clusters"]) == sorted(name for name, _, _ in YOURS)

    # what the test does itself, on three of them
    ref_vm, ref_k8s, edge_vm, edge_k8s = said.yours
    call(ref_vm, "PUT", "/api/vm/capacity", {"max_gpus": 16, "max_price_per_gpu_hour": 4})
    job = {"name": "mine", "nodes": 1, "limit_price_per_gpu_hour": 4}
    call(edge_k8s, "POST", "/api/k8s/jobs", job, 201)
    call(edge_vm, "PUT", "/api/spend-limit", {"usd_per_day": 50})
    simulated_writes = len(writes(server))

    # many ticks of both islands, the simulated tenants at work all along
    start = {island: tick_of(server, island) for island in ("ref", "edge")}
    eventually(
        lambda: all(tick_of(server, island) >= n + TICKS for island, n in start.items()),
        f"{TICKS} ticks of each island",
        server,
    )
    assert len(writes(server)) > simulated_writes + 20  # the simulation wrote its own clusters

    # each of yours as the test left it
    capacity = call(ref_vm, "GET", "/api/vm/capacity")
    assert (capacity["max_gpus"], capacity["max_price_per_gpu_hour"]) == (16, 4.0)
    assert call(ref_vm, "GET", "/api/spend-limit")["usd_per_day"] is None
    assert call(ref_k8s, "GET", "/api/k8s/jobs") == []
    assert call(ref_k8s, "GET", "/api/k8s/bid")["limit_price_per_gpu_hour"] is None
    assert call(ref_k8s, "GET", "/api/base-load") == {"live": None, "past": []}
    assert call(ref_k8s, "GET", "/api/spend-limit")["usd_per_day"] is None
    capacity = call(edge_vm, "GET", "/api/vm/capacity")
    assert (capacity["max_gpus"], capacity["max_price_per_gpu_hour"]) == (0, None)
    assert call(edge_vm, "GET", "/api/spend-limit")["usd_per_day"] == 50
    assert [j["name"] for j in call(edge_k8s, "GET", "/api/k8s/jobs")] == ["mine"]
    assert call(edge_k8s, "GET", "/api/k8s/bid")["limit_price_per_gpu_hour"] is None
    assert call(edge_k8s, "GET", "/api/base-load") == {"live": None, "past": []}
    assert call(edge_k8s, "GET", "/api/spend-limit")["usd_per_day"] is None

    # nothing but the test ever used their tokens, and the operator never touched their
    # account or clusters after making them (no credit, no packing, no block)
    def used() -> Counter[str]:
        return Counter(line["cluster"] for line in access(server) if line["cluster"] in sent)

    eventually(lambda: used() == sent, "the access lines of the test's own requests", server)
    ours = [line["path"] for line in access(server) if re.search(r"/you(-|/|$)", line["path"])]
    assert ours == ["/api/admin/accounts/you"]


def writes(server: Server) -> list[dict[str, str]]:
    """The access lines of simulated tenants' writes."""
    return [
        line
        for line in access(server)
        if line["method"] in ("PUT", "POST", "PATCH", "DELETE")
        and line["cluster"] != "-"
        and not line["cluster"].startswith("you-")
    ]


def test_the_operator_token_is_printed_on_the_local_demo_only(
    start_server: StartServer, tmp_path: Path
) -> None:
    # the local demo (--simulate, bound to loopback): the token it made, said to be for it only
    server, said = demo(start_server, tmp_path / "demo")
    assert said.operator is not None
    assert said.operator.startswith("operator token, for this local demo only")
    token = operator_token(said)
    assert f"OPERATOR_TOKEN={token}" in said.export.split()
    ok(server.client.get("/api/admin/accounts/you", headers=bearer(token)))
    assert accepted_as_operator(server) == [token]  # the check below finds a printed one
    server.stop()

    # a token set in the environment is named, never printed
    server = start_server("--simulate", "--speed", "300", data_dir=tmp_path / "env")
    said = announced(server)
    assert said.operator == "operator token: yours, from BURSTMARKET_OPERATOR_TOKEN"
    assert 'OPERATOR_TOKEN="$BURSTMARKET_OPERATOR_TOKEN"' in said.export.split()
    assert OPERATOR_TOKEN not in server.log()
    server.stop()

    # without --simulate (the faster clock alone) the token made for the process stays in it
    server = start_server("--speed", "300", operator_token=None, data_dir=tmp_path / "clock")
    eventually(lambda: tick_of(server, "ref") >= 5, "the clock ticking", server)
    assert "operator token" not in server.log()
    assert accepted_as_operator(server) == []


def accepted_as_operator(server: Server) -> list[str]:
    """Every token-shaped word of the server's output that the operator endpoints accept."""
    words = sorted(set(TOKEN_WORD.findall(server.log())))
    return [
        word
        for word in words
        if server.client.get("/api/admin/accounts/you", headers=bearer(word)).status_code
        in (200, 404)
    ]


async def simulated_only(server: Server) -> None:
    """What `serve --simulate` set up before your tenants existed: the islands, the simulated
    tenants (their tokens in simulation.json) and the base load offers."""
    async with httpx.AsyncClient(timeout=30) as http:
        await World(server.url, server.token, server.data_dir, http=http).setup()


def test_a_data_dir_from_before_gains_your_tenants_and_a_restart_brings_them_back(
    start_server: StartServer, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    state = data / "simulation.json"
    old = start_server("--clock", "manual", data_dir=data)
    asyncio.run(simulated_only(old))
    old.stop()
    tokens = json.loads(state.read_text())["tokens"]
    fd = os.open(state, os.O_WRONLY | os.O_TRUNC)  # the file as it was written then
    with os.fdopen(fd, "w") as out:
        json.dump({"tokens": tokens}, out, indent=1)

    server, said = demo(start_server, data)
    assert [(c.name, c.kind, c.island) for c in said.yours] == YOURS
    kept = json.loads(state.read_text())
    assert kept == {"tokens": tokens, "yours": {c.name: c.token for c in said.yours}}
    assert state.stat().st_mode & 0o777 == 0o600
    assert [tokens[c.name] for c in said.watch] == [c.token for c in said.watch]
    ref_vm = bearer(said.your("you-ref-vm").token)
    body = {"max_gpus": 8, "max_price_per_gpu_hour": 3}
    ok(server.client.put("/api/vm/capacity", json=body, headers=ref_vm))
    server.stop()

    again, said_again = demo(start_server, data)
    assert said_again.yours == said.yours
    assert said_again.watch == said.watch
    assert json.loads(state.read_text()) == kept
    capacity = ok(again.client.get("/api/vm/capacity", headers=ref_vm))
    assert (capacity["max_gpus"], capacity["max_price_per_gpu_hour"]) == (8, 3.0)
