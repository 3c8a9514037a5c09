"""Websocket frames built once and written straight to each connection's transport.

Server-to-client frames are unmasked (RFC 6455 §5.1), so a message's frame is the same bytes for
every subscriber: the feed frames each message once and writes those bytes to every
subscriber's transport, with no per-subscriber coroutine, re-encoding or compression.
`FeedWebSocketProtocol` is uvicorn's sans-I/O websocket protocol plus one ASGI scope extension,
`burstmarket.wire`, that hands the application the connection's transport and the protocol's
flow-control event; `burstmarket serve` runs uvicorn with it and without permessage-deflate (an
uncompressed frame would be valid under it too, RFC 7692 §6, but compressing per subscriber is
the cost this avoids). After the accept, every frame the feed sends goes through the transport,
never the ASGI send, so frames keep their order.

A peer that leaves uvicorn's keepalive ping unanswered for the ping timeout has stopped reading
(or is that far behind): uvicorn would close it with 1011 and say nothing; here the wire's
`on_stall` is called instead, and the feed closes it as a slow consumer (4008, one log line).

A text frame that is not UTF-8 is closed 1007 as uvicorn closes it, but logged as what it is,
a client's refusal (one REFUSED line), not as uvicorn's ERROR with a traceback.

The subclass leans on a few attributes of uvicorn's protocol (`scope`, `transport`, `writable`,
`close_sent`, `pong_timer`, `frames`, `curr_msg_data_type`, `conn`) and its
`handle_parser_exception`; tests/feed and tests/e2e run it for real.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Close, Frame, Opcode
from websockets.http11 import Request

from burstmarket.errors import Invalid
from burstmarket.market.refusals import log_refusal

EXTENSION = "burstmarket.wire"


def text_frame(payload: bytes) -> bytes:
    """One complete, unfragmented, unmasked text frame carrying `payload` (UTF-8 JSON)."""
    return Frame(Opcode.TEXT, payload).serialize(mask=False, extensions=[])


def close_frame(code: int, reason: str) -> bytes:
    return Frame(Opcode.CLOSE, Close(code, reason).serialize()).serialize(mask=False, extensions=[])


@dataclass(slots=True)
class Wire:
    """One websocket connection's way out, below ASGI."""

    transport: asyncio.WriteTransport
    writable: asyncio.Event
    """The protocol's flow control: cleared when the transport holds more than its high-water
    mark of unsent bytes, set again once it drains below its low-water mark or is lost."""
    ping_timeout: float | None
    on_stall: Callable[[], None] | None = None
    """Set by whoever serves the connection: called when a keepalive ping has gone unanswered
    for `ping_timeout` seconds. Unset, the connection is closed 1011 as uvicorn does."""


def wire_of(scope: Any) -> Wire | None:
    """The connection's wire, if the server runs `FeedWebSocketProtocol`."""
    extension = scope.get("extensions", {}).get(EXTENSION)
    return None if extension is None else extension["wire"]


class FeedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's `websockets-sansio` protocol, exposing its wire in the ASGI scope."""

    wire: Wire | None = None

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        # On an accepted upgrade the scope now exists and the app's task is created but has not
        # run yet, so the app sees the extension from its first line.
        if not self.close_sent:
            self.wire = Wire(self.transport, self.writable, self.ping_timeout)
            self.scope["extensions"][EXTENSION] = {"wire": self.wire}

    def send_receive_event_to_app(self) -> None:
        if self.curr_msg_data_type == "text" and not self.close_sent and not _utf8(self.frames):
            self.frames = []
            log_refusal(Invalid("frame", "a text frame must be UTF-8"))
            self.conn.send_close(1007)
            self.handle_parser_exception()  # uvicorn's close: the app hears 1007, the socket ends
            return
        super().send_receive_event_to_app()

    def keepalive_timeout(self) -> None:
        on_stall = None if self.wire is None else self.wire.on_stall
        if on_stall is None or self.close_sent or self.transport.is_closing():
            super().keepalive_timeout()
            return
        self.pong_timer = None
        on_stall()


def _utf8(frames: list[bytes]) -> bool:
    """Whether a text message's frames are UTF-8 (decoded again by uvicorn: a message is at
    most 1 MiB, and decoding it takes well under a millisecond)."""
    try:
        (frames[0] if len(frames) == 1 else b"".join(frames)).decode()
    except UnicodeDecodeError:
        return False
    return True
