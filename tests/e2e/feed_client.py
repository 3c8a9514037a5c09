"""Websocket helpers for the end-to-end feed tests: a client library's connection, or a raw
socket (tests/feed/support.py) for a client that reads only when told to."""

from __future__ import annotations

import json
import time
from typing import Any

from websockets.sync.client import ClientConnection

from tests.conftest import Server
from tests.feed.support import RawClient


def ws_url(server: Server) -> str:
    return server.url.replace("http://", "ws://") + "/ws/market"


def recv(ws: ClientConnection, timeout: float = 30) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(ws.recv(timeout=timeout))
    return message


def recv_past_heartbeats(ws: ClientConnection, timeout: float = 30) -> dict[str, Any]:
    """The next message that is not a heartbeat: one comes after 5 s without any message, and
    on a busy host two steps of a test can be that far apart."""
    message = recv(ws, timeout)
    while message["type"] == "heartbeat":
        message = recv(ws, timeout)
    return message


def send(ws: ClientConnection, frame: Any) -> None:
    ws.send(frame if isinstance(frame, str | bytes) else json.dumps(frame))


def subscribe(ws: ClientConnection, channels: list[str], **extra: Any) -> None:
    send(ws, {"op": "subscribe", "channels": channels, **extra})
    assert recv(ws) == {"type": "subscribed", "channels": channels}


def apply_ladder(rungs: list[dict[str, Any]], message: dict[str, Any]) -> list[dict[str, Any]]:
    """A subscriber's ladder after a `ladder` message (docs/api.md "The feed"): whole when it
    carries `rungs` (a snapshot, a replay's first update), else the rungs it had less
    `removed`, with `changed` put in by node count."""
    data = message["data"]
    if "rungs" in data:
        return list(data["rungs"])
    kept = {rung["nodes"]: rung for rung in rungs if rung["nodes"] not in data["removed"]}
    kept.update((rung["nodes"], rung) for rung in data["changed"])
    return [kept[nodes] for nodes in sorted(kept)]


def ladders(messages: list[dict[str, Any]], channel: str) -> list[tuple[int, list[Any]]]:
    """(tick, the whole ladder) after each message of `channel` in `messages`, the first of
    them whole."""
    rungs: list[dict[str, Any]] = []
    found = []
    for message in messages:
        if message.get("channel") == channel:
            rungs = apply_ladder(rungs, message)
            found.append((message["tick"], rungs))
    return found


def port_of(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def read_until_close(client: RawClient) -> tuple[list[dict[str, Any]], int, bytes]:
    """Every text message a raw client has coming, then the close frame's (code, reason).
    Keepalive pings (opcode 9) in between are skipped."""
    messages = []
    opcode, payload = client.frame()
    while opcode in (0x1, 0x9):
        if opcode == 0x1:
            messages.append(json.loads(payload))
        opcode, payload = client.frame()
    assert opcode == 0x8, opcode
    return messages, int.from_bytes(payload[:2], "big"), payload[2:]


def slow_consumer_lines(server: Server) -> list[str]:
    return [line for line in server.log().splitlines() if "closing a slow consumer" in line]


def wait_for_line(server: Server, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not slow_consumer_lines(server):
        assert time.monotonic() < deadline, "no slow consumer was closed"
        time.sleep(0.05)
