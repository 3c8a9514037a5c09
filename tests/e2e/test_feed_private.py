"""A cluster's own feed channel through the real server: `auth` with the cluster's token, then
`cluster`: a snapshot, then one update per tick of its island with its holding, pending GPUs,
rate and the tick's events; each socket sees only its own cluster; every refusal is an error
with its code and one REFUSED line, and the socket goes on working (docs/api.md "The feed")."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import redis
from websockets.sync.client import ClientConnection, connect

from tests.conftest import RedisServer, Server, StartServer
from tests.e2e.feed_client import recv_past_heartbeats, send, ws_url
from tests.e2e.support import (
    declare,
    eventually,
    make_account,
    make_cluster,
    make_island,
    ok,
    tick,
)

ISLAND = "pv"
NAMES = ("pv-a", "pv-b", "pv-c")


def token_of(auth: dict[str, str]) -> str:
    return auth["Authorization"].removeprefix("Bearer ")


def market(server: Server) -> dict[str, dict[str, str]]:
    """4 nodes of 8 GPUs; A (VM) wants 2 nodes at 3.0, B (VM) 3 nodes at 2.0, C (Kubernetes)
    a job of 1 node at 2.5 and one of 4 nodes at 1.5: the first tick gives A 2, C 1 and B the
    last one."""
    make_island(server, ISLAND, nodes=4, reserve=1.0)
    make_account(server, "pv-acct", balance=100_000)
    auths = {
        name: make_cluster(server, "pv-acct", ISLAND, kind, name)
        for name, kind in zip(NAMES, ("vm", "vm", "k8s"), strict=True)
    }
    ok(declare(server, auths["pv-a"], 16, 3.0))
    ok(declare(server, auths["pv-b"], 24, 2.0))
    for job in (
        {"name": "train", "nodes": 1, "limit_price_per_gpu_hour": 2.5},
        {"name": "wide", "nodes": 4, "limit_price_per_gpu_hour": 1.5},
    ):
        ok(server.client.post("/api/k8s/jobs", json=job, headers=auths["pv-c"]), 201)
    return auths


def ask(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    send(ws, frame)
    return recv_past_heartbeats(ws)


def authed(ws: ClientConnection, auth: dict[str, str]) -> ClientConnection:
    """`ws`, authenticated as `auth`'s cluster and subscribed to `cluster`."""
    answer = ask(ws, {"op": "auth", "token": token_of(auth), "id": 1})
    assert answer["type"] == "authenticated", answer
    assert ask(ws, {"op": "subscribe", "channels": ["cluster"]}) == {
        "type": "subscribed",
        "channels": ["cluster"],
    }
    return ws


def waits(
    server: Server, auths: dict[str, dict[str, str]], rows: dict[str, dict[str, Any]]
) -> None:
    """Each row's pending cause and figures are those the tenant endpoints read of its tick."""
    for name in ("pv-a", "pv-b"):
        capacity = ok(server.client.get("/api/vm/capacity", headers=auths[name]))
        row = rows[name]["data"]
        assert (row["pending_reason"], row["pending_detail"]) == (
            capacity["pending_reason"],
            capacity["pending_detail"],
        )
    jobs = ok(server.client.get("/api/k8s/jobs", headers=auths["pv-c"]))
    waiting = [
        {key: job[key] for key in ("name", "nodes", "pending_reason", "pending_detail")}
        for job in jobs
        if job["state"] == "pending"
    ]
    assert rows["pv-c"]["data"]["pending_jobs"] == waiting
    assert [job["name"] for job in waiting] == ["wide"]
    assert waiting[0]["pending_reason"] is not None


def held_rate(row: dict[str, Any]) -> tuple[int, float]:
    return row["held_nodes"], row["rate"]


def events(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in message["data"]["events"] if e["type"] == kind]


def test_each_cluster_reads_its_own_ticks_and_nobody_elses(start_server: StartServer) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    auths = market(server)
    # Subscribed before the island's first tick: that tick's row is the snapshot.
    stack = ExitStack()
    sockets = {
        name: authed(stack.enter_context(connect(ws_url(server))), auth)
        for name, auth in auths.items()
    }
    tick(server)
    first = {name: recv_past_heartbeats(ws) for name, ws in sockets.items()}
    for name, message in first.items():
        assert message["type"] == "snapshot", message
        assert (message["channel"], message["tick"]) == ("cluster", 1)
        assert (message["data"]["cluster"], message["data"]["island"]) == (name, ISLAND)
    a, b, c = (first[name]["data"] for name in NAMES)
    assert (a["held_nodes"], a["held_gpus"], a["pending_gpus"]) == (2, 16, 0)
    assert (b["held_nodes"], b["held_gpus"], b["pending_gpus"]) == (1, 8, 16)
    for name, row in (("pv-a", a), ("pv-b", b)):  # what the tenant API reads of the same tick
        capacity = ok(server.client.get("/api/vm/capacity", headers=auths[name]))
        assert row["rate"] == capacity["rate"] is not None
        assert row["node_ids"] == [n["id"] for n in capacity["nodes"]]
        assert (row["held_gpus"], row["pending_gpus"]) == (
            capacity["held_gpus"],
            capacity["pending_gpus"],
        )
    assert (c["held_nodes"], c["pending_gpus"]) == (1, 32)
    waits(server, auths, first)
    for row in (a, b, c):  # the tick's receipt: why it pays its rate, the parts adding up
        receipt = row["receipt"]
        assert (receipt["tick"], receipt["nodes"], receipt["rate"]) == (1, *held_rate(row))
        assert sum(receipt["parts_units"].values()) == receipt["amount_units"] > 0
    assert [e["nodes"] for e in events(first["pv-a"], "Granted")] == [a["node_ids"]]
    assert [e["nodes"] for e in events(first["pv-b"], "Granted")] == [b["node_ids"]]
    assert [e["job"] for e in events(first["pv-c"], "Provisioned")] == ["train"]
    assert set(a["node_ids"]).isdisjoint(b["node_ids"] + c["node_ids"])

    # B outbids A; the windows hold A's nodes for the hour, so B waits one more tick.
    ok(declare(server, auths["pv-b"], 24, 4.0))
    tick(server)
    second = {name: recv_past_heartbeats(ws) for name, ws in sockets.items()}
    assert {(m["type"], m["tick"]) for m in second.values()} == {("update", 2)}
    assert second["pv-a"]["data"]["events"] == []
    assert second["pv-b"]["data"]["pending_gpus"] == 16
    waits(server, auths, second)
    # The hour is over: A's two nodes go to B, and each reads its side of it.
    tick(server)
    third = {name: recv_past_heartbeats(ws) for name, ws in sockets.items()}
    assert {(m["type"], m["tick"]) for m in third.values()} == {("update", 3)}
    a3, b3 = third["pv-a"]["data"], third["pv-b"]["data"]
    assert (a3["held_nodes"], a3["pending_gpus"], a3["rate"], a3["receipt"]) == (0, 16, None, None)
    assert (b3["receipt"]["nodes"], b3["receipt"]["rate"]) == held_rate(b3)
    assert [e["nodes"] for e in events(third["pv-a"], "Reclaimed")] == [a["node_ids"]]
    assert (b3["held_nodes"], b3["pending_gpus"]) == (3, 0)
    assert [sorted(e["nodes"]) for e in events(third["pv-b"], "Granted")] == [sorted(a["node_ids"])]

    # A socket opened now gets the latest tick at once; every socket heard only its own.
    with connect(ws_url(server)) as late:
        snapshot = recv_past_heartbeats(authed(late, auths["pv-b"]))
    assert (snapshot["type"], snapshot["tick"], snapshot["data"]) == ("snapshot", 3, b3)
    for name, messages in zip(
        NAMES, zip(first.values(), second.values(), third.values(), strict=True), strict=True
    ):
        others = [other for other in NAMES if other != name]
        for message in messages:
            assert message["data"]["cluster"] == name
            text = str(message)
            assert not any(other in text for other in others), (name, message)
    stack.close()


def refused_once(server: Server, ws: ClientConnection, frame: dict[str, Any], code: str) -> None:
    """`frame` is refused `code`, with exactly one REFUSED line for it."""
    before = len(server.refused_lines())
    answer = ask(ws, frame)
    assert (answer["type"], answer["error"]) == ("error", code), answer
    lines = server.refused_lines()[before:]
    assert [line for line in lines if f"reason={code} " in line] == lines
    assert len(lines) == 1, lines


def test_refusals_keep_the_socket_open(start_server: StartServer) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    auths = market(server)
    tick(server)
    with connect(ws_url(server)) as ws:
        refused_once(server, ws, {"op": "subscribe", "channels": ["cluster"]}, "unauthorized")
        refused_once(server, ws, {"op": "auth", "token": "not-a-token"}, "unauthorized")
        refused_once(server, ws, {"op": "subscribe", "channels": ["cluster:pv-b"]}, "forbidden")
        assert ask(ws, {"op": "ping", "id": 7})["type"] == "pong"
        assert ask(ws, {"op": "auth", "token": token_of(auths["pv-a"])}) == {
            "type": "authenticated",
            "cluster": "pv-a",
        }
        # Authenticated, another cluster's channel, a second cluster, a replay: still refused.
        refused_once(server, ws, {"op": "subscribe", "channels": ["cluster:pv-b"]}, "forbidden")
        assert "cluster=pv-a " in server.refused_lines()[-1]
        refused_once(server, ws, {"op": "auth", "token": token_of(auths["pv-b"])}, "forbidden")
        frame = {"op": "subscribe", "channels": ["cluster"], "from_tick": 1}
        refused_once(server, ws, frame, "invalid")
        # Channel by channel: a refused channel beside a public one, the public one joined.
        frame = {"op": "subscribe", "channels": [f"stats:{ISLAND}", "cluster:pv-b"]}
        refused_once(server, ws, frame, "forbidden")
        assert recv_past_heartbeats(ws) == {"type": "subscribed", "channels": [f"stats:{ISLAND}"]}
        assert recv_past_heartbeats(ws)["channel"] == f"stats:{ISLAND}"  # its snapshot
        answer = ask(ws, {"op": "unsubscribe", "channels": [f"stats:{ISLAND}"]})
        assert answer == {"type": "unsubscribed", "channels": [f"stats:{ISLAND}"]}
        # The socket still works: its own channel, then the next tick.
        answer = ask(ws, {"op": "subscribe", "channels": ["cluster"]})
        assert answer == {"type": "subscribed", "channels": ["cluster"]}
        snapshot = recv_past_heartbeats(ws)
        assert (snapshot["type"], snapshot["tick"]) == ("snapshot", 1)
        assert snapshot["data"]["cluster"] == "pv-a"
        tick(server)
        update = recv_past_heartbeats(ws)
        assert (update["type"], update["channel"], update["tick"]) == ("update", "cluster", 2)
        assert update["data"]["cluster"] == "pv-a"
        answer = ask(ws, {"op": "unsubscribe", "channels": ["cluster"]})
        assert answer == {"type": "unsubscribed", "channels": ["cluster"]}
        tick(server)
        assert ask(ws, {"op": "ping"})["type"] == "pong"  # no update came before it


def test_a_feed_edge_refuses_the_cluster_channel_and_the_bus_carries_no_private_row(
    start_server: StartServer, redis_server: RedisServer
) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "1800", "--bus", redis_server.url)
    auths = market(server)
    edge = start_server("--bus", redis_server.url, subcommand="feed")
    with connect(ws_url(server)) as own:  # the market itself serves it, bus or not
        authed(own, auths["pv-a"])
        tick(server)
        snapshot = recv_past_heartbeats(own)
        assert (snapshot["type"], snapshot["data"]["cluster"]) == ("snapshot", "pv-a")
    eventually(
        lambda: edge.client.get("/api/market/stats", params={"island": ISLAND}).status_code == 200,
        "the edge has the island",
        edge,
    )
    with connect(ws_url(edge)) as ws:
        refused_once(edge, ws, {"op": "auth", "token": token_of(auths["pv-a"])}, "forbidden")
        refused_once(edge, ws, {"op": "subscribe", "channels": ["cluster"]}, "forbidden")
        assert "market's own /ws/market" in ask(ws, {"op": "auth", "token": "x"})["detail"]
        answer = ask(ws, {"op": "subscribe", "channels": [f"stats:{ISLAND}"]})
        assert answer == {"type": "subscribed", "channels": [f"stats:{ISLAND}"]}
    document = ok(edge.client.get("/schema/asyncapi.json"))
    messages = document["channels"]["market"]["messages"]
    assert "auth" in messages
    assert not {"authenticated", "snapshot_cluster", "update_cluster"} & messages.keys()
    bus = redis.Redis.from_url(redis_server.url)
    try:
        channels = {name.decode() for name in bus.smembers("burstmarket:feed")}
        streams = {key.decode() for key in bus.scan_iter("burstmarket:feed:*")}
    finally:
        bus.close()
    assert f"stats:{ISLAND}" in channels  # every island's public feeds, and nothing else
    assert {channel.split(":")[0] for channel in channels} == {"ladder", "rates", "stats"}
    assert streams == {f"burstmarket:feed:{channel}" for channel in channels}
