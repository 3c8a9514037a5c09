"""The access log: one line per request as its answer goes out, and the request metrics.

It wraps the whole app, so requests no route matches are logged too. A line says the method,
the path (escaped and cut like every client value, logsafe.py; no query string), the status, the
duration and the cluster whose token the guard accepted, never a token. A websocket connection
gets its line when it ends, with status 101 if it was accepted and its whole duration.
"""

from __future__ import annotations

import logging
from time import perf_counter
from typing import Any

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from burstmarket import metrics
from burstmarket.logsafe import value

log = logging.getLogger("burstmarket.access")


class AccessLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started, path = perf_counter(), scope["path"]  # as sent: routing may rewrite it
        status = 500  # what the server answers if the app fails before it does
        logged = False

        async def sending(message: Message) -> None:
            nonlocal status, logged
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                # written before the answer's end leaves: a client that has its answer finds
                # the line in the log
                logged = True
                _answered(scope, path, status, perf_counter() - started)
            elif message["type"] == "websocket.accept":
                status = 101
            elif message["type"] == "websocket.close" and status == 500:
                status = 403  # closed before it was accepted: refused
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if not logged:
                _answered(scope, path, status, perf_counter() - started)


def _answered(scope: Any, path: str, status: int, seconds: float) -> None:
    method = scope.get("method", "GET")  # a websocket's handshake is a GET
    if scope["type"] == "http":
        metrics.on_answer(method, scope.get("path_template") or "unmatched", status, seconds)
    cluster = scope.get("state", {}).get("cluster")
    duration_ms = round(seconds * 1000, 3)
    log.info(
        "method=%s path=%s status=%d duration_ms=%s cluster=%s",
        method,
        value(path),
        status,
        duration_ms,
        value(cluster or "-"),
        extra={
            "fields": {
                "method": method,
                "path": path,
                "status": status,
                "duration_ms": duration_ms,
                "cluster": cluster,
            }
        },
    )
