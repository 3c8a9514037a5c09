"""`burstmarket serve` and `burstmarket feed`: the listening socket first, then the app (and
with it the market's store), then uvicorn.

The socket is bound before anything else starts, so a port that cannot be had stops the start
before the store opens or a simulation runs; the caller (cli.py) says why in one line.
"""

from __future__ import annotations

import errno
import socket
import sys
from collections.abc import Callable

import uvicorn
from litestar import Litestar

from burstmarket.api.access import AccessLog
from burstmarket.connections import ConnectionLimits, LimitedConfig
from burstmarket.settings import Settings

GIL_SWITCH_SECONDS = 0.001
"""The store's writer and the tick let go of the GIL around every DuckDB statement; taking it
back waited up to Python's default 5 ms behind a busy event loop, statement after statement.
At 1 ms, bench/bench_api.py at 500 PUT/s gave fewer requests over 50 ms in 3 of 4 paired runs."""

BACKLOG = 2048
"""Connections the kernel queues before the service accepts them (uvicorn's default)."""


class PortUnavailable(Exception):
    """The service's address cannot be listened on: one line for the operator."""


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port`, or PortUnavailable saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        why = exc.strerror or str(exc)
        if exc.errno == errno.EADDRINUSE:
            why = "the port is in use by another process"
        raise PortUnavailable(f"cannot listen on {host}:{port}: {why}") from None
    return sock


def serve(
    settings: Settings,
    app_for: Callable[[Settings], Litestar],
    started: Callable[[], None] = lambda: None,
) -> None:
    """Run the service until it is stopped: PortUnavailable if its address cannot be listened
    on, StoreOpenError if its data directory cannot be used, LeaseUnavailable if its islands'
    leases cannot be had; `started` is called once all are in hand, before the first request
    is served (the banner, the simulation). `app_for` builds the app: the market's, or a feed
    edge's (`create_edge_app`)."""
    sock = listen(settings.host, settings.port)
    try:
        app = app_for(settings)
        sys.setswitchinterval(GIL_SWITCH_SECONDS)
        started()
        # uvicorn's httptools and sans-I/O websocket protocols, with a header timeout and a
        # limit of open connections per address (connections.py)
        limits = ConnectionLimits(settings.header_timeout_seconds, settings.connections_per_address)
        config = LimitedConfig(
            AccessLog(app),
            limits,
            host=settings.host,
            port=settings.port,
            backlog=BACKLOG,
            log_config=None,  # cli.py configured logging for the process (logsafe.py)
            access_log=False,  # api/access.py writes the access lines
            timeout_graceful_shutdown=2,
            # the websocket protocol exposes the transport, so the feed writes each tick's
            # frame, built once, to every subscriber (feed/wire.py); no per-subscriber
            # compression.
            ws_per_message_deflate=False,
            ws_max_size=settings.max_body_bytes,  # a client's frame, like a request body
            # A ping unanswered for as long as the interval closes the client as a slow
            # consumer (feed/wire.py), so one that stops reading is gone within two intervals.
            ws_ping_interval=settings.feed_ping_seconds,
            ws_ping_timeout=settings.feed_ping_seconds,
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
