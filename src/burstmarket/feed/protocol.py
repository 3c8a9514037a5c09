"""What a websocket client may send, parsed at the boundary into typed frames.

Anything else (not JSON, an unknown op, a stray field, a negative tick, nesting deeper than
nesting.py allows) becomes `Invalid` with the offending field named; the connection answers
with an `error` message and stays open.

Every frame may carry an `id` the client chose (a short string or an integer); the answer to
the frame (`subscribed`, `unsubscribed`, `pong`, `authenticated`, `snapshot` or `error`)
carries it back.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from burstmarket.errors import Invalid
from burstmarket.nesting import check_nesting, nested_too_deep

MAX_CHANNELS = 64
"""Channels one frame may name (a connection may send several frames)."""
MAX_CHANNEL = 128
"""Characters of a channel name (`<feed>:<island>`, an island name is at most 63)."""

MAX_TOKEN = 256
"""Characters of a cluster token in an `auth` frame."""
CLUSTER_CHANNEL = "cluster"
"""The private channel: the authenticated cluster's own (docs/api.md "The feed")."""

MAX_ID = 64
"""Characters of a string request id."""
MAX_ID_INT = 2**53 - 1
"""Largest integer request id (either sign): exact in every JSON client, JavaScript's too."""

Channel = Annotated[str, msgspec.Meta(max_length=MAX_CHANNEL)]
Channels = Annotated[list[Channel], msgspec.Meta(min_length=1, max_length=MAX_CHANNELS)]
RequestId = (
    Annotated[str, msgspec.Meta(max_length=MAX_ID)]
    | Annotated[int, msgspec.Meta(ge=-MAX_ID_INT, le=MAX_ID_INT)]
)


class _Frame(msgspec.Struct, tag_field="op", forbid_unknown_fields=True):
    id: RequestId | None = None


class Subscribe(_Frame, tag="subscribe", kw_only=True):
    channels: Channels
    from_tick: Annotated[int, msgspec.Meta(ge=0)] | None = None


class Unsubscribe(_Frame, tag="unsubscribe", kw_only=True):
    channels: Channels


class Snapshot(_Frame, tag="snapshot", kw_only=True):
    """The latest tick of channels the connection is subscribed to, whole (a client that
    lost track of a ladder's changes rebuilds it from this)."""

    channels: Channels


class Ping(_Frame, tag="ping"):
    pass


class Auth(_Frame, tag="auth", kw_only=True):
    """Authenticate the socket as a cluster (its token), for its `cluster` channel."""

    token: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TOKEN)]


ClientFrame = Subscribe | Unsubscribe | Snapshot | Ping | Auth


class _Id(msgspec.Struct):
    """Just the id of a frame refused for something else, to answer it with."""

    id: RequestId | None = None


_decoder = msgspec.json.Decoder(ClientFrame)
_id_decoder = msgspec.json.Decoder(_Id)
_FIELD = re.compile(r"at `\$\.(\w+)")
_MISSING = re.compile(r"missing required field `(\w+)`")
_UNKNOWN = re.compile(r"unknown field `(\w+)`")


def parse_frame(data: str | bytes) -> ClientFrame:
    check_nesting(data, "frame")
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _FIELD.search(text) or _MISSING.search(text) or _UNKNOWN.search(text)
        raise Invalid(match.group(1) if match else "frame", text) from exc
    except msgspec.DecodeError as exc:
        raise Invalid("frame", f"not a JSON object: {exc}") from exc


def request_id(data: str | bytes) -> str | int | None:
    """The id of a refused frame, if it carries a valid one (else its error goes without)."""
    if nested_too_deep(data):  # its other fields are skipped, and skipping recurses too
        return None
    try:
        return _id_decoder.decode(data).id
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
