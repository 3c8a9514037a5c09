"""Feed messages, each encoded once and shared by every subscriber and request that needs it.

A `Row` is one tick of one channel (tick, time, data). Its `update`, `snapshot` and REST bodies
are JSON-encoded lazily, at most once each; the websocket writers send the very same ASGI event
dict to every subscriber, so a tick costs one encoding per channel whatever the audience.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec

from burstmarket.errors import MarketError

_encoder = msgspec.json.Encoder()

SendEvent = dict[str, Any]
"""An ASGI `websocket.send` event, built once and handed to every subscriber's writer."""


def rfc3339(value: datetime) -> str:
    """UTC, `Z`-suffixed (API.md: times are RFC 3339 UTC strings)."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def display(value: Any) -> Any:
    """Store values at the JSON edge: Decimals become floats (≤ 6 decimals), recursively."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        return [display(item) for item in value]
    if isinstance(value, dict):
        return {key: display(item) for key, item in value.items()}
    return value


def encode(message: dict[str, Any]) -> str:
    return _encoder.encode(message).decode()


def send_event(message: dict[str, Any]) -> SendEvent:
    return {"type": "websocket.send", "text": encode(message)}


def error_event(error: MarketError) -> SendEvent:
    return send_event({"type": "error", **error.body()})


class Row:
    """One tick of one channel, with its encodings made on first use."""

    __slots__ = ("_body", "_snapshot", "_trimmed", "_update", "channel", "data", "island", "tick",
                 "time")

    def __init__(
        self, channel: str, island: str, tick: int, time: datetime, data: dict[str, Any]
    ) -> None:
        self.channel = channel
        self.island = island
        self.tick = tick
        self.time = rfc3339(time)
        self.data = data
        self._update: SendEvent | None = None
        self._snapshot: SendEvent | None = None
        self._body: bytes | None = None
        self._trimmed: dict[tuple[str, int], bytes] = {}

    def _message(self, kind: str) -> dict[str, Any]:
        return {
            "type": kind, "channel": self.channel, "tick": self.tick, "time": self.time,
            "data": self.data,
        }

    @property
    def update(self) -> SendEvent:
        if self._update is None:
            self._update = send_event(self._message("update"))
        return self._update

    @property
    def snapshot(self) -> SendEvent:
        if self._snapshot is None:
            self._snapshot = send_event(self._message("snapshot"))
        return self._snapshot

    def body(self, trim: tuple[str, int] | None = None) -> bytes:
        """The REST body `{island, tick, time, **data}`, optionally with one list cut short."""
        if trim is None:
            if self._body is None:
                self._body = _encoder.encode(self._rest(self.data))
            return self._body
        cached = self._trimmed.get(trim)
        if cached is None:
            field, count = trim
            cached = _encoder.encode(self._rest({**self.data, field: self.data[field][:count]}))
            # Bounded: one entry per distinct (param value) asked for during this tick.
            if len(self._trimmed) < 256:
                self._trimmed[trim] = cached
        return cached

    def _rest(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"island": self.island, "tick": self.tick, "time": self.time, **data}
