"""Slow clients and connections per address against the real server (connections.py): a
client dripping a request's headers is refused 408 after the header timeout, an idle one is
closed; the connection past an address's limit is refused 429 at accept, HTTP and websocket
alike, one REFUSED line each, and counted out again once one closes. The market's service and
a feed edge run the same protocols.

The connections held against a limit come from 127.0.0.2 (a loopback address of their own),
so the fixtures' own client on 127.0.0.1 never counts against it.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.conftest import RedisServer, Server, StartServer
from tests.e2e.support import DEADLINE_SECONDS, eventually

ELSEWHERE = "127.0.0.2"
"""The address the limited connections come from."""
LIMIT = 3
DRIP_SECONDS = 0.2

StartKind = Callable[..., Server]


@pytest.fixture(params=["serve", "feed"])
def start(request: pytest.FixtureRequest, start_server: StartServer) -> Iterator[StartKind]:
    """`burstmarket serve`, or a feed edge on a Redis of its own, with these flags."""
    if request.param == "serve":
        yield lambda *flags: start_server("--clock", "manual", *flags)
        return
    redis: RedisServer = request.getfixturevalue("redis_server")
    yield lambda *flags: start_server("--bus", redis.url, *flags, subcommand="feed")


def raw(server: Server, source: str = ELSEWHERE) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30, source_address=(source, 0))
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def refusal_of(answer: bytes) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) of a whole HTTP answer."""
    head, body = answer.split(b"\r\n\r\n", 1)
    return int(head.split()[1]), json.loads(body)


def drip_until_answered(
    sock: socket.socket, request_line: bytes, since: float | None = None
) -> tuple[bytes, float]:
    """Send a request line, then one header line every DRIP_SECONDS, never ending the headers,
    until the server answers (bounded): the answer and the seconds it took, counted from
    `since` (a `time.monotonic()`) if given, else from the request line."""
    sock.settimeout(DRIP_SECONDS)
    began = time.monotonic() if since is None else since
    sock.sendall(request_line)
    for n in range(int(DEADLINE_SECONDS / DRIP_SECONDS)):
        try:
            first = sock.recv(65536)
        except TimeoutError:
            sock.sendall(f"x-drip-{n}: a\r\n".encode())
            continue
        assert first, "closed without an answer"
        took = time.monotonic() - began
        sock.settimeout(30)
        return first + read_all(sock), took
    raise AssertionError("the server kept a client dripping its headers open")


def ws(server: Server, source: str = ELSEWHERE) -> ClientConnection:
    url = server.url.replace("http://", "ws://") + "/ws/market"
    return connect(url, sock=raw(server, source), open_timeout=30)


def ws_refused(server: Server) -> int:
    """The status a websocket handshake from ELSEWHERE is refused with."""
    with pytest.raises(InvalidStatus) as refused, ws(server):
        pass
    return refused.value.response.status_code


def healthz_status(server: Server, source: str = ELSEWHERE) -> tuple[int, dict[str, Any]]:
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30, source_address=(source, 0))
    try:
        connection.request("GET", "/healthz")
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def refused(server: Server, reason: str) -> list[str]:
    return [line for line in server.refused_lines() if line.startswith(f"REFUSED reason={reason} ")]


def test_a_client_dripping_its_headers_is_refused_408_after_the_header_timeout(
    start: StartKind,
) -> None:
    timeout = 1.0
    server = start("--header-timeout", str(timeout))
    # a first request dripped header by header, never ending its headers, timed from before
    # the connection: the server's timer cannot start earlier (on a busy host the connection
    # can be accepted well before this thread sends its first byte)
    connecting = time.monotonic()
    with raw(server) as sock:
        request = b"GET /healthz HTTP/1.1\r\nhost: x\r\n"
        answer, took = drip_until_answered(sock, request, since=connecting)
    status, body = refusal_of(answer)
    assert (status, body["error"], body["limit_seconds"]) == (408, "request-timeout", timeout)
    assert took >= timeout  # the timer never fires early: never closed before its time
    # a later request on a kept-alive connection has the same time for its headers
    with raw(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        answer, _ = drip_until_answered(sock, b"GET /healthz HTTP/1.1\r\n")
    assert refusal_of(answer)[0] == 408
    # a connection that never sends a byte is closed, with nothing to answer
    with raw(server) as sock:
        sock.settimeout(DEADLINE_SECONDS)
        assert read_all(sock) == b""
    # one line per refusal, written before the answer: none for the idle connection
    lines = refused(server, "request-timeout")
    assert len(lines) == 2, lines
    assert all(f"peer={ELSEWHERE} limit_seconds=1.0 " in line for line in lines)
    # a client that sends its request in time is answered as ever
    assert server.client.get("/healthz").status_code == 200


def test_an_http_connection_past_the_per_address_limit_is_refused_429(start: StartKind) -> None:
    server = start("--connections-per-address", str(LIMIT), "--header-timeout", "600")
    held = [raw(server) for _ in range(LIMIT)]  # open, not a byte sent yet
    try:
        assert healthz_status(server, ELSEWHERE) == (
            429,
            {
                "error": "too-many-connections",
                "detail": f"this address has {LIMIT} connections open already, the most it "
                "may have; close one first",
                "peer": ELSEWHERE,
                "limit_connections": LIMIT,
            },
        )
        lines = refused(server, "too-many-connections")
        assert len(lines) == 1, lines
        assert f"peer={ELSEWHERE} limit_connections={LIMIT} " in lines[0]
        # another address is not affected
        assert healthz_status(server, "127.0.0.1")[0] == 200
        # a held connection is answered as ever
        held[0].sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        assert read_all(held[0]).startswith(b"HTTP/1.1 200")
    finally:
        for sock in held:
            sock.close()
    # once they close, the address may connect again
    eventually(lambda: healthz_status(server)[0] == 200, "a connection admitted", server)


def test_a_websocket_past_the_per_address_limit_is_refused_429(start: StartKind) -> None:
    server = start("--connections-per-address", str(LIMIT), "--header-timeout", "600")
    with ExitStack() as held:
        # websockets and HTTP connections count together
        sockets = [held.enter_context(ws(server)) for _ in range(LIMIT - 1)]
        held.enter_context(raw(server))
        for client in sockets:
            client.send(json.dumps({"op": "ping", "id": 1}))
            assert json.loads(client.recv(30))["type"] == "pong"
        assert ws_refused(server) == 429
        assert healthz_status(server)[0] == 429
        lines = refused(server, "too-many-connections")
        assert len(lines) == 2, lines
        assert all(f"peer={ELSEWHERE} limit_connections={LIMIT} " in line for line in lines)
        # a websocket that closes is counted out: another may open
        sockets[0].close()
        held.enter_context(eventually(lambda: _ws_or_none(server), "a websocket admitted"))
        assert ws_refused(server) == 429


def _ws_or_none(server: Server) -> ClientConnection | None:
    try:
        return ws(server)
    except InvalidStatus:
        return None
