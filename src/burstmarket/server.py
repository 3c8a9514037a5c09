"""`burstmarket serve`: logging set up once, the app, uvicorn."""

from __future__ import annotations

import logging
import os
import sys

import uvicorn

from burstmarket.api.app import create_app
from burstmarket.feed.wire import FeedWebSocketProtocol
from burstmarket.logsafe import one_line
from burstmarket.settings import Settings
from burstmarket.store import PRIVATE_UMASK


class LogFormat(logging.Formatter):
    """Refusal lines stand alone (they begin with `REFUSED reason=`, greppable); the rest carry
    time, level and logger. Every message is one line, whatever text it carries (logsafe.py);
    a traceback's lines are indented, so none of them can pass for a line of its own."""

    def format(self, record: logging.LogRecord) -> str:
        message = one_line(record.getMessage())
        if record.name == "burstmarket.refused":
            return message
        line = f"{self.formatTime(record)} {record.levelname} {record.name}: {message}"
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            line += "".join(f"\n  | {one_line(text)}" for text in trace.splitlines())
        return line


def configure_logging() -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(LogFormat())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


GIL_SWITCH_SECONDS = 0.001
"""The store's writer and the tick let go of the GIL around every DuckDB statement; taking it
back waited up to Python's default 5 ms behind a busy event loop, statement after statement.
At 1 ms, bench/bench_api.py at 500 PUT/s gave fewer requests over 50 ms in 3 of 4 paired runs."""


def serve(settings: Settings) -> None:
    """Run the service; StoreOpenError if its data directory cannot be used (cli.py says so in
    one line)."""
    configure_logging()
    os.umask(PRIVATE_UMASK)
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    app = create_app(settings)
    logging.getLogger(__name__).info(
        "burstmarket serving on http://%s:%d (clock %s, tick %.3f s, data %s)",
        settings.host,
        settings.port,
        settings.clock,
        settings.tick_seconds,
        settings.data_dir,
    )
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=2,
        # uvicorn's sans-I/O websockets, exposing the transport so the feed writes each tick's
        # frame, built once, to every subscriber; no per-subscriber compression.
        ws=FeedWebSocketProtocol,
        ws_per_message_deflate=False,
        ws_max_size=settings.max_body_bytes,  # a client's frame, like a request body
        # A ping unanswered for as long as the interval closes the client as a slow consumer
        # (feed/wire.py), so one that stops reading is gone within two intervals.
        ws_ping_interval=settings.feed_ping_seconds,
        ws_ping_timeout=settings.feed_ping_seconds,
    )
