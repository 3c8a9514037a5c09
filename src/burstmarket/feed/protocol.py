"""What a websocket client may send, parsed at the boundary into typed frames.

Anything else (not JSON, an unknown op, a stray field, a negative tick) becomes `Invalid` with the
offending field named; the connection answers with an `error` message and stays open.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from burstmarket.errors import Invalid

MAX_CHANNELS = 64
"""Channels one frame may name (a connection may send several frames)."""
MAX_CHANNEL = 128
"""Characters of a channel name (`<feed>:<island>`, an island name is at most 63)."""

Channel = Annotated[str, msgspec.Meta(max_length=MAX_CHANNEL)]
Channels = Annotated[list[Channel], msgspec.Meta(min_length=1, max_length=MAX_CHANNELS)]


class Subscribe(msgspec.Struct, tag_field="op", tag="subscribe", forbid_unknown_fields=True):
    channels: Channels
    from_tick: Annotated[int, msgspec.Meta(ge=0)] | None = None


class Unsubscribe(msgspec.Struct, tag_field="op", tag="unsubscribe", forbid_unknown_fields=True):
    channels: Channels


class Ping(msgspec.Struct, tag_field="op", tag="ping", forbid_unknown_fields=True):
    pass


ClientFrame = Subscribe | Unsubscribe | Ping

_decoder = msgspec.json.Decoder(ClientFrame)
_FIELD = re.compile(r"at `\$\.(\w+)")
_MISSING = re.compile(r"missing required field `(\w+)`")
_UNKNOWN = re.compile(r"unknown field `(\w+)`")


def parse_frame(data: str | bytes) -> ClientFrame:
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _FIELD.search(text) or _MISSING.search(text) or _UNKNOWN.search(text)
        raise Invalid(match.group(1) if match else "frame", text) from exc
    except msgspec.DecodeError as exc:
        raise Invalid("frame", f"not a JSON object: {exc}") from exc
