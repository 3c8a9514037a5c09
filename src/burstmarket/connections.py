"""Limits on connections, below the app: a header timeout and open connections per address.

uvicorn has neither: a client may take as long as it likes to send a request's headers, and one
address may hold as many sockets as the process can open. So the service runs uvicorn with the
protocols here (server.py), which are uvicorn's own plus these two rules (docs/api.md "Slow
clients and connections per address"):

- **Header timeout.** A request's headers must be complete within `header_timeout` seconds:
  counted from the connection's opening for its first request, and from a later request's
  first byte (between requests uvicorn's keep-alive closes an idle connection). Past it, a
  request begun is answered 408 `request-timeout` and the connection closed; a connection that
  sent nothing at all is closed without an answer (there is no request to refuse).
- **Connections per address.** At most `per_address` connections of one peer address are open
  at once, HTTP and websocket alike (a websocket is the HTTP connection it was upgraded from,
  counted once). The next one is refused at accept: not counted, never parsed, answered 429
  `too-many-connections` as soon as its first bytes arrive, and closed.

Each refusal is one `REFUSED` line (market/refusals.py) and an answer in the contract's error
shape, written here: the app never sees these connections, so they have no access line.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import msgspec
import uvicorn
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from burstmarket.errors import MarketError, RequestTimeout, TooManyConnections
from burstmarket.feed.wire import FeedWebSocketProtocol
from burstmarket.market.refusals import log_refusal

LINGER_SECONDS = 1.0
"""How long a refused connection waits for the client's request before it is closed without
an answer, and how long it stays open after its answer, reading and dropping what the client
still sends: a socket closed with unread bytes is reset by the kernel, and the reset can
destroy the answer before the client has read it."""


class ConnectionLimits:
    """The two limits, and the open connections of each peer address."""

    def __init__(self, header_timeout: float, per_address: int) -> None:
        self.header_timeout = header_timeout
        self.per_address = per_address
        """0: no limit."""
        self._open: dict[str, int] = {}
        """Open connections by peer address (only addresses with one)."""
        self._counted: dict[asyncio.BaseTransport, str] = {}
        """The address each counted connection is counted under."""

    def admit(self, transport: asyncio.BaseTransport) -> TooManyConnections | None:
        """Count a new connection, or the refusal if its address holds its limit already (a
        refused connection is not counted). A socket without a peer address (a Unix socket)
        is not limited."""
        peer = peer_of(transport)
        if not peer or self.per_address <= 0:
            return None
        open_now = self._open.get(peer, 0)
        if open_now >= self.per_address:
            return TooManyConnections(peer, self.per_address)
        self._open[peer] = open_now + 1
        self._counted[transport] = peer
        return None

    def release(self, transport: asyncio.BaseTransport) -> None:
        """The connection has closed (called again, or for one not counted: nothing)."""
        peer = self._counted.pop(transport, None)
        if peer is None:
            return
        left = self._open[peer] - 1
        if left:
            self._open[peer] = left
        else:
            del self._open[peer]


def peer_of(transport: asyncio.BaseTransport) -> str | None:
    """The peer's IP address (without its port), None for a socket that has none."""
    name = transport.get_extra_info("peername")
    return name[0] if isinstance(name, tuple) and name else None


class LimitedConfig(uvicorn.Config):
    """uvicorn's Config running the protocols below, with the limits they apply."""

    def __init__(self, app: Any, limits: ConnectionLimits, **options: Any) -> None:
        super().__init__(app, http=LimitedHttpProtocol, ws=LimitedWebSocketProtocol, **options)
        self.limits = limits


def _limits(config: uvicorn.Config) -> ConnectionLimits:
    assert isinstance(config, LimitedConfig), "the limited protocols run under LimitedConfig"
    return config.limits


def answer(exc: MarketError, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """A whole HTTP answer refusing with `exc` (the body api/errors.py would render) that
    closes the connection."""
    body = msgspec.json.encode(exc.body())
    head = [STATUS_LINE[exc.status]]
    for name, value in [
        *default_headers,
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]:
        head.append(name + b": " + value + b"\r\n")
    return b"".join([*head, b"\r\n", body])


class LimitedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the header timeout and the per-address count."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = _limits(config)
        self.timer: asyncio.TimerHandle | None = None
        """The header timeout while a request's headers are awaited; once refused, the close."""
        self.begun = False
        """A request has begun arriving (before that, the connection is idle)."""
        self.refusal: MarketError | None = None
        self.answered = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(cast(asyncio.Transport, transport))
        refusal = self.limits.admit(transport)
        if refusal is not None:
            self.refuse(refusal)
        else:
            self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        self.limits.release(self.transport)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.refusal is None:
            super().data_received(data)
        elif not self.answered:
            self._answer()
        # else: what a refused client still sends is dropped

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.begun = True
        if self.timer is None:  # a later request on a kept-alive connection
            self._await_headers()

    def on_headers_complete(self) -> None:
        self._stop_timer()  # first: a websocket upgrade returns from the parser's callback
        super().on_headers_complete()

    def refuse(self, exc: MarketError) -> None:
        """Log the refusal now and answer it once the client has sent its request (or now,
        if it has begun): a client answered before it has written its request may fail on
        writing it, and never read the answer (websockets clients do). A client that sends
        nothing is closed after LINGER_SECONDS."""
        self._stop_timer()
        self.refusal = exc
        log_refusal(exc)
        if self.begun:
            self._answer()
        else:
            self.timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _answer(self) -> None:
        assert self.refusal is not None
        self._stop_timer()
        self.answered = True
        self.transport.write(answer(self.refusal, self.server_state.default_headers))
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the client reads the answer, then its end
        self.timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _await_headers(self) -> None:
        self.timer = self.loop.call_later(self.limits.header_timeout, self._headers_late)

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _headers_late(self) -> None:
        self.timer = None
        if self.transport.is_closing():
            return
        if not self.begun:
            self.transport.close()  # idle since it opened: nothing to answer
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # a request pipelined behind an answer still being written: refusing now would cut
            # into that answer, so its time runs on until the answer is out
            self._await_headers()
            return
        self.refuse(RequestTimeout(peer_of(self.transport), self.limits.header_timeout))


class LimitedWebSocketProtocol(FeedWebSocketProtocol):
    """The feed's websocket protocol (feed/wire.py), releasing its connection's count when it
    closes: after an upgrade the HTTP protocol no longer hears of the connection."""

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        _limits(self.config).release(self.transport)
