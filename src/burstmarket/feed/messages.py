"""Feed messages, each encoded once and shared by every subscriber and request that needs it.

A `Row` is one tick of one channel (tick, time, data). Its `update` and `snapshot` websocket
frames and its REST bodies are encoded lazily, at most once each; the very same frame bytes are
written to every subscriber, so a tick costs one encoding per channel whatever the audience.
A row of a feed with a `Delta` (feeds/ladder.toml) that follows its channel's tick before
(`follow`) sends its `update` as the change since that tick; `update_json`, what the bus
carries, is always the whole row.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec

from burstmarket.errors import MarketError
from burstmarket.feed.catalog import Delta
from burstmarket.feed.wire import text_frame

_encoder = msgspec.json.Encoder()


def rfc3339(value: datetime) -> str:
    """UTC, `Z`-suffixed (docs/api.md: times are RFC 3339 UTC strings)."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def display(value: Any) -> Any:
    """Store values at the JSON edge, recursively: Decimals become floats (≤ 6 decimals), times
    RFC 3339 strings."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return rfc3339(value)
    if isinstance(value, list):
        return [display(item) for item in value]
    if isinstance(value, dict):
        return {key: display(item) for key, item in value.items()}
    return value


def message_frame(message: dict[str, Any]) -> bytes:
    """`message` as one websocket text frame, ready for any subscriber's transport."""
    return text_frame(_encoder.encode(message))


def reply_frame(kind: str, request_id: str | int | None, **fields: Any) -> bytes:
    """The answer to a client's frame, carrying the frame's `id` back when it had one."""
    message = {"type": kind, **fields}
    if request_id is not None:
        message["id"] = request_id
    return message_frame(message)


def error_frame(error: MarketError, request_id: str | int | None) -> bytes:
    return reply_frame("error", request_id, **error.body())


CACHE_CONTROL = b"public, no-cache"
"""Any cache may keep a latest-row answer but must revalidate it (`If-None-Match`) on every use:
the next tick may come at any moment, and the answer to a revalidation is a bodiless 304."""


class Prepared:
    """A complete `200 application/json` response built once, then handed as is to every request
    for it: litestar passes an ASGI app returned by a handler straight to the server, so a
    request costs two sends of prebuilt messages and no per-request encoding.

    Its `ETag` is a hash of the body (which names the tick, so every tick changes it); a request
    whose `If-None-Match` holds it is answered `304 Not Modified`, without the body."""

    __slots__ = ("_body", "_headers", "_revalidated", "body", "etag")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.etag = b'"%s"' % hashlib.blake2b(body, digest_size=12).hexdigest().encode()
        self._revalidated = [(b"etag", self.etag), (b"cache-control", CACHE_CONTROL)]
        self._headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *self._revalidated,
        ]
        self._body = {"type": "http.response.body", "body": body}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # fresh header lists: a middleware may add to them (CORS), and they are shared
        if self._known(scope):
            await send(
                {"type": "http.response.start", "status": 304, "headers": list(self._revalidated)}
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": list(self._headers)})
        await send(self._body)

    def _known(self, scope: Any) -> bool:
        """Whether the request's `If-None-Match` names this answer (weak comparison, RFC 9110)."""
        for name, value in scope["headers"]:
            if name == b"if-none-match":
                tags = {tag.strip().removeprefix(b"W/") for tag in value.split(b",")}
                if self.etag in tags or b"*" in tags:
                    return True
        return False


class _Update(msgspec.Struct):
    """What a row is rebuilt from: its `update` message as another process encoded it."""

    tick: int
    time: str
    data: dict[str, Any]


_update_decoder = msgspec.json.Decoder(_Update)


class Row:
    """One tick of one channel, with its encodings made on first use."""

    __slots__ = (
        "_follows",
        "_response",
        "_snapshot",
        "_trimmed",
        "_update",
        "_update_json",
        "_whole",
        "channel",
        "data",
        "island",
        "key",
        "tick",
        "time",
    )

    def __init__(
        self,
        channel: str,
        island: str,
        tick: int,
        time: datetime | str,
        data: dict[str, Any],
        key: str | None = None,
    ) -> None:
        self.channel = channel
        """The channel's name in its messages."""
        self.key = channel if key is None else key
        """The hub's name of the channel: the channel's, but for a cluster's own, which every
        cluster names `cluster` (feed/private.py)."""
        self.island = island
        self.tick = tick
        self.time = time if isinstance(time, str) else rfc3339(time)
        self.data = data
        self._update_json: bytes | None = None
        self._update: bytes | None = None
        self._whole: bytes | None = None
        self._snapshot: bytes | None = None
        self._response: Prepared | None = None
        self._trimmed: dict[tuple[str, int], Prepared] = {}
        self._follows: tuple[Delta, dict[str, Any]] | None = None

    @classmethod
    def from_update(cls, channel: str, island: str, update_json: bytes) -> Row:
        """The row whose `update` message is `update_json` (from the bus, feed/bus.py): the
        same bytes go out in its update frames, never encoded again."""
        message = _update_decoder.decode(update_json)
        row = cls(channel, island, message.tick, message.time, message.data)
        row._update_json = update_json
        return row

    def follow(self, delta: Delta, before: Row) -> None:
        """This row is the tick after `before` on its channel: its `update` frame carries only
        what changed since (`Delta.between`). Without it, the update carries the whole row."""
        if before.tick == self.tick - 1 and self._update is None:
            self._follows = (delta, before.data)

    def _message(self, kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "type": kind,
            "channel": self.channel,
            "tick": self.tick,
            "time": self.time,
            "data": self.data if data is None else data,
        }

    @property
    def update_json(self) -> bytes:
        """The `update` message, encoded once."""
        if self._update_json is None:
            self._update_json = _encoder.encode(self._message("update"))
        return self._update_json

    @property
    def whole(self) -> bytes:
        """The websocket `update` frame carrying the whole row."""
        if self._whole is None:
            self._whole = text_frame(self.update_json)
        return self._whole

    @property
    def update(self) -> bytes:
        """The websocket `update` frame: the change since the tick before if the row follows
        it (`follow`), else the whole row."""
        if self._update is None:
            if self._follows is None:
                self._update = self.whole
            else:
                delta, before = self._follows
                self._update = message_frame(
                    self._message("update", delta.between(before, self.data))
                )
                self._follows = None  # encoded: the tick before's data need not stay alive
        return self._update

    @property
    def snapshot(self) -> bytes:
        if self._snapshot is None:
            self._snapshot = message_frame(self._message("snapshot"))
        return self._snapshot

    def snapshot_for(self, request_id: str | int | None) -> bytes:
        """The snapshot answering a client's `snapshot` frame, with the frame's `id` if any."""
        if request_id is None:
            return self.snapshot
        return message_frame({**self._message("snapshot"), "id": request_id})

    def response(self, trim: tuple[str, int] | None = None) -> Prepared:
        """The REST answer `{island, tick, time, **data}`, optionally with one list cut short."""
        if trim is None:
            if self._response is None:
                self._response = Prepared(_encoder.encode(self._rest(self.data)))
            return self._response
        cached = self._trimmed.get(trim)
        if cached is None:
            field, count = trim
            cached = Prepared(
                _encoder.encode(self._rest({**self.data, field: self.data[field][:count]}))
            )
            # Bounded: one entry per distinct (param value) asked for during this tick.
            if len(self._trimmed) < 256:
                self._trimmed[trim] = cached
        return cached

    def _rest(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"island": self.island, "tick": self.tick, "time": self.time, **data}
