"""The feed's protocol as a subscriber meets it, over a real server and real websocket clients:
a subscribe takes the channels it can and refuses each other one; a mistyped island is told
apart from one that has not ticked; the ladder comes whole in the snapshot and as its changes
in the updates, and rebuilt from them it is the REST ladder at every tick; tick times on the
real clock are never ahead of the wall clock."""

from __future__ import annotations

import json
import math
import random
import time
from datetime import UTC, datetime
from typing import Any

from websockets.sync.client import ClientConnection, connect

from tests.conftest import Server, StartServer
from tests.e2e.feed_client import (
    apply_ladder,
    recv,
    recv_past_heartbeats,
    send,
    subscribe,
    ws_url,
)
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok, tick
from tests.e2e.test_ladder import ladder as rest_ladder

AHEAD_SECONDS = 60


def refused_since(server: Server, before: int) -> list[str]:
    return server.refused_lines()[before:]


def test_a_subscribe_joins_the_channels_it_can_and_refuses_each_other_one(
    start_server: StartServer,
) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "10")
    make_island(server, "good", nodes=2)
    tick(server, island="good")
    make_island(server, "idle", nodes=2)  # exists, has not ticked (every island ticks at once)
    before = len(server.refused_lines())
    channels = ["stats:good", "stats:nowhere", "weather:good", "stats:idle", "ladder:good"]
    with connect(ws_url(server)) as ws:
        send(ws, {"op": "subscribe", "channels": channels, "id": "mixed"})
        errors = [recv(ws) for _ in range(3)]
        assert [(e["type"], e["error"], e["channel"], e["id"]) for e in errors] == [
            ("error", "unknown-island", "stats:nowhere", "mixed"),
            ("error", "invalid", "weather:good", "mixed"),
            ("error", "not-ticked-yet", "stats:idle", "mixed"),
        ]
        assert (errors[0]["island"], errors[2]["island"], errors[1]["field"]) == (
            "nowhere",
            "idle",
            "channels",
        )
        joined = recv(ws)
        assert joined == {
            "type": "subscribed",
            "channels": ["stats:good", "ladder:good"],
            "id": "mixed",
        }
        snapshots = [recv(ws) for _ in range(2)]
        assert [(m["type"], m["channel"]) for m in snapshots] == [
            ("snapshot", "stats:good"),
            ("snapshot", "ladder:good"),
        ]
        tick(server, island="good")
        updates = {recv_past_heartbeats(ws)["channel"] for _ in range(2)}
        assert updates == {"stats:good", "ladder:good"}
    lines = refused_since(server, before)
    assert len(lines) == 3, lines
    for line, code, channel in zip(
        lines,
        ("unknown-island", "invalid", "not-ticked-yet"),
        ("stats:nowhere", "weather:good", "stats:idle"),
        strict=True,
    ):
        assert f"reason={code} " in line, line
        assert f"channel={channel} " in line, line


def test_a_mistyped_island_is_unknown_apart_from_one_that_has_not_ticked(
    start_server: StartServer,
) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "10")
    make_island(server, "idle", nodes=2)
    for path in ("/api/market/stats", "/api/market/ladder", "/api/market/series"):
        for island, code in (("idle", "not-ticked-yet"), ("idel", "unknown-island")):
            before = len(server.refused_lines())
            answer = server.client.get(path, params={"island": island})
            assert (answer.status_code, answer.json()["error"]) == (404, code), (path, island)
            assert answer.json()["island"] == island
            (line,) = refused_since(server, before)
            assert f"reason={code} " in line
    with connect(ws_url(server)) as ws:
        for island, code in (("idle", "not-ticked-yet"), ("idel", "unknown-island")):
            send(ws, {"op": "subscribe", "channels": [f"rates:{island}"]})
            error = recv(ws)
            assert (error["error"], error["island"]) == (code, island)


def next_update(ws: ClientConnection, channel: str) -> dict[str, Any]:
    message = recv_past_heartbeats(ws)
    assert (message["type"], message["channel"]) == ("update", channel), message
    return message


def test_the_ladder_rebuilt_from_its_snapshot_and_changes_is_the_rest_ladder_every_tick(
    start_server: StartServer,
) -> None:
    # 10-minute ticks: a VM grant's 1-hour window holds its nodes six ticks, so rungs go from
    # contestable to held (`contestable_at`, `reason`) and back, and appear and go.
    server = start_server("--clock", "manual", "--tick-seconds", "600")
    make_island(server, "lad", nodes=6, reserve=1.0)
    make_account(server, "lad-acct", balance=1_000_000)
    clusters = [make_cluster(server, "lad-acct", "lad", "vm", f"lad-{n}") for n in range(3)]
    draw = random.Random(27)
    nodes = ok(server.client.get("/api/admin/islands/lad/nodes", headers=server.operator()))
    channel = "ladder:lad"
    tick(server, island="lad")
    whole_sizes: list[int] = []
    change_sizes: list[int] = []
    with connect(ws_url(server)) as ws, connect(ws_url(server)) as late:
        subscribe(ws, [channel])
        snapshot = recv(ws)
        assert snapshot["type"] == "snapshot"
        ladder = snapshot["data"]["rungs"]
        assert ladder == rest_ladder(server, "lad")["rungs"]
        seen_removed = seen_unchanged = False
        for number in range(30):
            auth = clusters[number % 3]
            ok(declare(server, auth, 8 * draw.randint(0, 4), draw.choice([1.5, 2.0, 2.5, 3.0])))
            if number in (15, 25):  # a node out of service has no rung: the ladder shortens
                action = "cordon" if number == 15 else "uncordon"
                path = f"/api/admin/islands/lad/nodes/{nodes[0]['id']}/{action}"
                ok(server.client.post(path, headers=server.operator()))
            tick(server, island="lad")
            raw = ws.recv(timeout=30)
            update = json.loads(raw)
            while update["type"] == "heartbeat":
                raw = ws.recv(timeout=30)
                update = json.loads(raw)
            assert (update["type"], update["channel"]) == ("update", channel)
            assert "rungs" not in update["data"], "a live update follows the tick before"
            change_sizes.append(len(raw))
            ladder = apply_ladder(ladder, update)
            rest = rest_ladder(server, "lad")
            assert rest["tick"] == update["tick"]
            assert ladder == rest["rungs"], update["tick"]
            assert update["data"]["reserve_price"] == rest["reserve_price"]
            whole = {**update, "data": {"reserve_price": rest["reserve_price"], "rungs": ladder}}
            whole_sizes.append(len(json.dumps(whole, separators=(",", ":"))))
            seen_removed |= bool(update["data"]["removed"])
            seen_unchanged |= len(update["data"]["changed"]) < len(rest["rungs"])
            if number == 10:
                # A subscriber coming back with from_tick: its first update is whole, the
                # next ones are changes, and they rebuild the same ladder.
                send(
                    late,
                    {"op": "subscribe", "channels": [channel], "from_tick": update["tick"] - 3},
                )
                assert recv_past_heartbeats(late)["type"] == "subscribed"
                first = next_update(late, channel)
                assert "rungs" in first["data"]
                rebuilt = first["data"]["rungs"]
                for _ in range(3):
                    rebuilt = apply_ladder(rebuilt, next_update(late, channel))
                assert rebuilt == ladder
            if number > 10:
                rebuilt = apply_ladder(rebuilt, next_update(late, channel))
                assert rebuilt == ladder
            if number == 20:
                # On request, the whole ladder again, answering the frame's id.
                send(ws, {"op": "snapshot", "channels": [channel], "id": "again"})
                again = recv_past_heartbeats(ws)
                assert (again["type"], again["id"], again["tick"]) == (
                    "snapshot",
                    "again",
                    update["tick"],
                )
                assert again["data"]["rungs"] == ladder
        held = [rung for rung in ladder if rung["contestable_at"] is not None]
        assert all(rung["reason"] == "windows-hold" for rung in held)
    assert seen_removed
    assert seen_unchanged
    print(
        f"ladder updates: {sum(change_sizes) / len(change_sizes):.0f} bytes on average as changes, "
        f"the whole ladder {sum(whole_sizes) / len(whole_sizes):.0f} bytes"
    )


def test_a_snapshot_of_a_channel_not_subscribed_is_refused_and_the_socket_stays(
    start_server: StartServer,
) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "10")
    make_island(server, "snap", nodes=2)
    tick(server, island="snap")
    before = len(server.refused_lines())
    with connect(ws_url(server)) as ws:
        subscribe(ws, ["stats:snap"])
        assert recv(ws)["type"] == "snapshot"
        send(ws, {"op": "snapshot", "channels": ["ladder:snap", "stats:snap"], "id": 5})
        error = recv(ws)
        assert (error["error"], error["field"], error["channel"], error["id"]) == (
            "invalid",
            "channels",
            "ladder:snap",
            5,
        )
        again = recv(ws)
        assert (again["type"], again["channel"], again["id"]) == ("snapshot", "stats:snap", 5)
    assert len(refused_since(server, before)) == 1


def test_tick_times_on_the_real_clock_are_never_ahead_of_the_wall_clock(
    start_server: StartServer,
) -> None:
    # A store whose last tick is ahead of the wall clock: 10-second ticks on the manual clock,
    # as many as put it a minute ahead (a restart on a busy host takes up to half of that).
    first = start_server("--clock", "manual", "--tick-seconds", "10")
    stamp = datetime.fromisoformat(tick(first)["time"])
    count = math.ceil((time.time() + AHEAD_SECONDS - stamp.timestamp()) / 10)
    ahead = datetime.fromisoformat(tick(first, count=count)["time"])
    first.stop()
    server = start_server("--clock", "real", "--tick-seconds", "0.25", data_dir=first.data_dir)
    assert ahead.timestamp() > time.time(), "the store is still ahead of the wall clock"
    stamps: list[tuple[datetime, float]] = []
    with connect(ws_url(server)) as ws:
        subscribe(ws, ["stats:ref"])
        deadline = time.monotonic() + 3 * AHEAD_SECONDS
        while len(stamps) < 12 and time.monotonic() < deadline:
            message = recv(ws, timeout=3 * AHEAD_SECONDS)
            if message["type"] == "update":
                stamps.append((datetime.fromisoformat(message["time"]), time.time()))
    assert len(stamps) == 12
    for stamp, received in stamps:
        assert stamp.timestamp() <= received, (stamp, datetime.fromtimestamp(received, UTC))
    assert [line for line in server.log().splitlines() if "ahead of the wall clock" in line]
