"""The feed's AsyncAPI document against what the real server does: every message the server
sends validates against the document's schema of it (no field left out, none unlisted), a feed's
ticks against the schema of the channel they name (found by its address and parameter, as a
generated client finds it) and of no other, every message the document lists is sent, the
frames the server accepts validate and those it refuses for their shape do not, and the close
codes listed are the ones the server closes with."""

from __future__ import annotations

import os
import re
from typing import Any

import jsonschema_rs
import pytest
from websockets.exceptions import ConnectionClosedError
from websockets.sync.client import ClientConnection, connect

from tests.conftest import StartServer
from tests.e2e.feed_client import (
    port_of,
    read_until_close,
    recv,
    send,
    wait_for_line,
    ws_url,
)
from tests.e2e.support import make_account, make_cluster, make_island, ok, tick
from tests.feed.support import RawClient

CHANNELS = ["stats:doc", "ladder:doc", "rates:doc"]

ACCEPTED: list[dict[str, Any]] = [
    {"op": "subscribe", "channels": CHANNELS, "id": "all"},
    {"op": "ping", "id": 42},
    {"op": "ping"},
    {"op": "unsubscribe", "channels": ["rates:doc"], "id": -1},
    {"op": "unsubscribe", "channels": ["ladder:doc"]},
    {"op": "snapshot", "channels": ["stats:doc"], "id": "again"},
    {"op": "subscribe", "channels": ["stats:doc", "ladder:doc"], "from_tick": 2},
]
"""Frames the server answers without an error."""

REFUSED_FOR_SHAPE: list[Any] = [
    "not json",
    "[1, 2]",
    {"op": "dance", "id": 3},
    {"op": "ping", "id": 1.5},
    {"op": "ping", "id": "x" * 65},
    {"op": "ping", "id": 2**53},
    {"op": "ping", "extra": 1},
    {"op": "subscribe"},
    {"op": "subscribe", "channels": []},
    {"op": "subscribe", "channels": ["stats:doc"], "from_tick": -1},
    {"op": "subscribe", "channels": ["x" * 129]},
    {"op": "unsubscribe", "channels": "stats:doc"},
    {"op": "snapshot"},
    {"op": "snapshot", "channel": "stats:doc"},
    {"op": "auth"},
    {"op": "auth", "token": ""},
    {"op": "auth", "token": "t", "channels": ["cluster"]},
]
"""Frames refused for their shape alone: the document's schemas must refuse them too."""

REFUSED_FOR_STATE: list[dict[str, Any]] = [
    {"op": "subscribe", "channels": ["weather:doc"], "id": "w"},
    {"op": "subscribe", "channels": ["stats:atlantis"]},
    {"op": "subscribe", "channels": ["stats:later"]},
    {"op": "subscribe", "channels": ["stats:doc"], "from_tick": 10**6},
    {"op": "auth", "token": "not-a-token"},
    {"op": "subscribe", "channels": ["cluster:doc-b"]},
]
"""Well-formed frames refused for what they name (the error's figures: channel, island,
earliest_tick, next_tick)."""


def message_name(message: dict[str, Any]) -> str:
    """The name the document gives a message: a feed's `<type>_<feed>`, else its type."""
    kind = message["type"]
    if kind in ("snapshot", "update"):
        return f"{kind}_{message['channel'].split(':')[0]}"
    return str(kind)


def channel_of(document: dict[str, Any], name: str) -> str | None:
    """The document's channel whose address a feed channel's name fits, its parameters filled
    in (`stats:{island}` fits `stats:doc`), as a client generated from the document finds it."""
    found = [
        key
        for key, channel in document["channels"].items()
        if re.fullmatch(re.sub(r"\\\{(\w+)\\\}", "[^:]+", re.escape(channel["address"])), name)
    ]
    assert len(found) <= 1, found
    return found[0] if found else None


def gather(ws: ClientConnection, count: int) -> list[dict[str, Any]]:
    return [recv(ws) for _ in range(count)]


def test_the_asyncapi_document_matches_what_the_server_sends(start_server: StartServer) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "10", "--feed-ping-seconds", "1")
    make_island(server, "doc", nodes=4)
    make_account(server, "doc-acct", balance=10_000)
    auth = make_cluster(server, "doc-acct", "doc", "vm", "doc-a")
    authenticate = {"op": "auth", "token": auth["Authorization"].removeprefix("Bearer ")}
    ok(
        server.client.put(
            "/api/vm/capacity", json={"max_gpus": 16, "max_price_per_gpu_hour": 3}, headers=auth
        )
    )
    tick(server)
    port = port_of(server)
    document = ok(server.client.get("/schema/asyncapi.json"))
    assert document["servers"]["market"] == {
        "host": f"127.0.0.1:{port}",
        "pathname": "/ws/market",
        "protocol": "ws",
        "description": "the service this document was served by",
    }
    channel = document["channels"]["market"]
    assert channel["servers"] == [{"$ref": "#/servers/market"}]
    feeds = [name for name in document["channels"] if name != "market"]
    assert feeds == ["ladder", "rates", "stats", "cluster"]
    schemas = {
        name: jsonschema_rs.Draft7Validator(message["payload"])
        for name, message in channel["messages"].items()
    }
    per_channel = {
        (feed, kind): jsonschema_rs.Draft7Validator(message["payload"])
        for feed in feeds
        for kind, message in document["channels"][feed]["messages"].items()
    }
    client_names = [
        ref["$ref"].rsplit("/", 1)[1] for ref in document["operations"]["clientSends"]["messages"]
    ]
    server_names = [
        ref["$ref"].rsplit("/", 1)[1] for ref in document["operations"]["serverSends"]["messages"]
    ]
    feed_names = [
        f"{kind}_{feed}"
        for feed in feeds
        for kind in (
            ref["$ref"].rsplit("/", 1)[1]
            for ref in document["operations"][f"{feed}Ticks"]["messages"]
        )
    ]

    def fits_client_schema(frame: Any) -> bool:
        return isinstance(frame, dict) and any(
            schemas[name].is_valid(frame) for name in client_names
        )

    received: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    with connect(ws_url(server)) as ws:
        send(ws, ACCEPTED[0])
        received += gather(ws, 1 + 3)  # subscribed, three snapshots
        tick(server)
        received += gather(ws, 3)  # three updates
        for frame in ACCEPTED[1:6]:
            send(ws, frame)
            received.append(recv(ws))
        send(ws, ACCEPTED[6])
        received += gather(ws, 1 + 2)  # subscribed, the replayed tick 2 of each (whole)
        send(ws, authenticate)
        received.append(recv(ws))  # authenticated
        send(ws, {"op": "subscribe", "channels": ["cluster"]})
        received += gather(ws, 1 + 1)  # subscribed, the cluster's snapshot
        tick(server)
        received += gather(ws, 3)  # the stats and ladder updates, the cluster's
        make_island(server, "later", nodes=2)  # exists, has not ticked
        for frame in REFUSED_FOR_SHAPE + REFUSED_FOR_STATE:
            send(ws, frame)
            errors.append(recv(ws))
        heartbeat = recv(ws, timeout=15)  # a connection silent for 5 s
    assert heartbeat["type"] == "heartbeat"
    assert "error" not in {m["type"] for m in received}
    assert {m["type"] for m in errors} == {"error"}
    received += [*errors, heartbeat]

    for frame in [*ACCEPTED, authenticate, *REFUSED_FOR_STATE]:
        assert fits_client_schema(frame), frame
    for frame in REFUSED_FOR_SHAPE:
        assert not fits_client_schema(frame), frame

    for message in received:
        name = message_name(message)
        if message["type"] in ("snapshot", "update"):
            feed = channel_of(document, message["channel"])
            assert feed is not None, message
            mine = per_channel[feed, message["type"]]
            problems = [str(error) for error in mine.iter_errors(message)]
            assert not problems, (message, problems)
            others = [f for f in feeds if f != feed]
            assert not any(per_channel[f, message["type"]].is_valid(message) for f in others)
            assert name in feed_names, name
            continue
        assert name in server_names, name
        problems = [str(error) for error in schemas[name].iter_errors(message)]
        assert not problems, (message, problems)
    # A ladder update came as its changes (live) and whole (the replay's first).
    ladder_updates = [m for m in received if message_name(m) == "update_ladder"]
    assert {"rungs" in m["data"] for m in ladder_updates} == {True, False}
    # Every listed message was sent, and every figure an error may carry was seen.
    assert {message_name(m) for m in received} == {*server_names, *feed_names}
    listed = set(channel["messages"]["error"]["payload"]["properties"])
    assert set().union(*(m.keys() for m in errors)) == listed
    codes = {
        one["const"]
        for one in channel["messages"]["error"]["payload"]["properties"]["error"]["oneOf"]
    }
    assert {m["error"] for m in errors} == codes

    closes: set[int] = set()
    # A client that stops reading: 4008 once its keepalive ping goes unanswered.
    silent = RawClient(port)
    silent.send_json({"op": "subscribe", "channels": ["stats:doc"]})
    wait_for_line(server)
    closes.add(read_until_close(silent)[1])
    silent.close()
    # A text frame that is not UTF-8; a frame the client did not mask.
    for first, payload in ((0x81, b"\xff\xfe"), (0x81, b"{}")):
        raw = RawClient(port)
        if payload == b"{}":
            raw.sock.sendall(bytes([first, len(payload)]) + payload)
        else:
            mask = os.urandom(4)
            masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
            raw.sock.sendall(bytes([first, 0x80 | len(payload)]) + mask + masked)
        closes.add(read_until_close(raw)[1])
        raw.close()
    # A message over the size limit: its header claims 2 MiB and only its first KiB is sent (the
    # server closes at the header; a client still writing the rest would meet a reset, not the
    # close frame)
    raw = RawClient(port)
    mask = os.urandom(4)
    start = bytes(byte ^ mask[i % 4] for i, byte in enumerate(b"x" * 1024))
    header = bytes([0x81, 0x80 | 127]) + (2 * 1024 * 1024).to_bytes(8, "big") + mask
    raw.sock.sendall(header + start)
    closes.add(read_until_close(raw)[1])
    raw.close()
    # The service stopping.
    with connect(ws_url(server)) as ws:
        server.stop()
        with pytest.raises(ConnectionClosedError) as stopped:
            ws.recv(timeout=30)
        assert stopped.value.rcvd is not None
        closes.add(stopped.value.rcvd.code)
    assert closes == {int(code) for code in channel["x-close-codes"]}
    assert channel["x-close-codes"]["4008"]["reason"] == "slow-consumer"
