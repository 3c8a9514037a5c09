"""The feed's AsyncAPI 3.0 document, built from the feed catalog and the client frames' limits
(so it never drifts from them).

Every message lists every field it can carry and nothing else (`additionalProperties: false`),
the `error` message its codes and figures, and the channel its close codes (`x-close-codes`,
AsyncAPI having no field for them). `servers` names the host the document was asked from.
"""

from __future__ import annotations

from typing import Any

from burstmarket import __version__
from burstmarket.errors import Forbidden, Invalid, NotFound, Unauthorized
from burstmarket.feed.catalog import FeedSpec
from burstmarket.feed.hub import SLOW_CONSUMER
from burstmarket.feed.private import SCHEMA as CLUSTER_SCHEMA
from burstmarket.feed.protocol import (
    CLUSTER_CHANNEL,
    MAX_CHANNEL,
    MAX_CHANNELS,
    MAX_ID,
    MAX_ID_INT,
    MAX_TOKEN,
)

HEARTBEAT_SECONDS = 5.0

_TIME = {"type": "string", "format": "date-time", "description": "RFC 3339, UTC"}
_TICK = {"type": "integer", "minimum": 0}
_ID = {
    "description": "the client's request id, echoed on the answer to its frame",
    "oneOf": [
        {"type": "string", "maxLength": MAX_ID},
        {"type": "integer", "minimum": -MAX_ID_INT, "maximum": MAX_ID_INT},
    ],
}
_CHANNELS = {
    "type": "array",
    "items": {"type": "string", "maxLength": MAX_CHANNEL},
    "minItems": 1,
    "maxItems": MAX_CHANNELS,
}

ERROR_CODES = {
    Invalid.code: "a malformed frame or out-of-range value; `field` names it",
    NotFound.code: "a channel of an island that has not ticked (`island`)",
    Unauthorized.code: f"an unknown token, or `{CLUSTER_CHANNEL}` before `auth`",
    Forbidden.code: f"another cluster's channel (`{CLUSTER_CHANNEL}:<id>`), a second cluster "
    "on one socket, or `auth` on a feed edge",
}
"""The refusals the feed answers with (feed/service.py and feed/private.py raise no others)."""
EDGE_CODES = (Invalid.code, NotFound.code, Forbidden.code)
"""Those of a feed edge, which serves no cluster's channel."""

ERROR_FIGURES: dict[str, dict[str, Any]] = {
    "field": {
        "type": "string",
        "description": "the field at fault (`invalid`): `frame` when "
        "the frame is not a JSON object, else op, channels, from_tick or id",
    },
    "channel": {"type": "string", "description": "the unknown or forbidden channel"},
    "island": {"type": "string", "description": "the island the refusal is about"},
    "earliest_tick": {**_TICK, "description": "the oldest tick `from_tick` may name now"},
    "next_tick": {**_TICK, "description": "the tick after the island's latest"},
}
"""The figures an `error` message may carry beside `error` and `detail`."""


def close_codes(backlog: int, ping_seconds: float) -> dict[str, dict[str, str]]:
    """The codes the server closes a connection with (its close reason where it is fixed)."""
    return {
        str(SLOW_CONSUMER): {
            "reason": "slow-consumer",
            "description": (
                f"the client fell behind: {backlog} messages held for it and one more due, or "
                f"a keepalive ping (one every {ping_seconds:g} s) left unanswered for "
                f"{ping_seconds:g} s. One log line. It may resubscribe with `from_tick`."
            ),
        },
        "1002": {
            "description": "a frame that breaks the websocket protocol (the reason says "
            "how, e.g. `incorrect masking`)"
        },
        "1007": {"description": "a text frame that is not UTF-8"},
        "1009": {"description": "a client message over the size limit (1 MiB by default)"},
        "1012": {"description": "the service is shutting down or restarting"},
    }


def servers(host: str, secure: bool) -> dict[str, Any]:
    return {
        "market": {
            "host": host,
            "protocol": "wss" if secure else "ws",
            "description": "the service this document was served by",
        }
    }


def _obj(properties: dict[str, Any], *, optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "required": [name for name in properties if name not in optional],
    }


def _message(name: str, summary: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "title": name,
        "summary": summary,
        "contentType": "application/json",
        "payload": payload,
    }


def _reply(kind: str, summary: str, **fields: Any) -> dict[str, Any]:
    """An answer to a client frame: its fields, and the frame's `id` when it had one."""
    return _message(
        kind, summary, _obj({"type": {"const": kind}, **fields, "id": _ID}, optional=("id",))
    )


def _tick_message(kind: str, spec: FeedSpec, summary: str) -> dict[str, Any]:
    channel = {"type": "string", "pattern": "^" + spec.channel.replace("{island}", ".+") + "$"}
    return _message(f"{kind}_{spec.name}", summary, _tick(kind, channel, spec.schema))


def _tick(kind: str, channel: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    return _obj(
        {
            "type": {"const": kind},
            "channel": channel,
            "tick": {**_TICK, "description": "gap-free per island"},
            "time": _TIME,
            "data": {"type": "object", "properties": data, "required": list(data)},
        }
    )


def _cluster_messages() -> dict[str, dict[str, Any]]:
    """The answer to `auth` and the cluster's own channel's messages."""
    channel = {"const": CLUSTER_CHANNEL}
    what = (
        "The authenticated cluster's own row of a tick of its island: what it holds, what "
        "waits and why, its rate, and what happened to it at the tick."
    )
    return {
        "authenticated": _reply(
            "authenticated",
            f"The socket is the cluster's: it may subscribe `{CLUSTER_CHANNEL}`",
            cluster={"type": "string"},
        ),
        "snapshot_cluster": _message(
            "snapshot_cluster",
            f"{what} The latest tick, first on a subscribe (the next tick's, if the island "
            "has not ticked since the service started).",
            _tick("snapshot", channel, CLUSTER_SCHEMA),
        ),
        "update_cluster": _message(
            "update_cluster",
            f"{what} One per tick of the cluster's island; not replayed (no from_tick).",
            _tick("update", channel, CLUSTER_SCHEMA),
        ),
    }


def document(
    specs: tuple[FeedSpec, ...],
    path: str,
    *,
    backlog: int,
    ping_seconds: float,
    private: bool = True,
) -> dict[str, Any]:
    """The document; its `servers` is filled in for each request (`servers()`). `private`:
    the server serves the clusters' own channel (a feed edge does not: it refuses `auth`)."""
    client = {
        "subscribe": _message(
            "subscribe",
            "Join channels",
            _obj(
                {
                    "op": {"const": "subscribe"},
                    "channels": _CHANNELS,
                    "from_tick": {
                        **_TICK,
                        "description": (
                            "replay the ticks from_tick … latest as updates, then live, "
                            "with no snapshot; at most one hour back and at most the next tick"
                        ),
                    },
                    "id": _ID,
                },
                optional=("from_tick", "id"),
            ),
        ),
        "unsubscribe": _message(
            "unsubscribe",
            "Leave channels",
            _obj(
                {"op": {"const": "unsubscribe"}, "channels": _CHANNELS, "id": _ID}, optional=("id",)
            ),
        ),
        "ping": _message(
            "ping", "Ask for a pong", _obj({"op": {"const": "ping"}, "id": _ID}, optional=("id",))
        ),
        "auth": _message(
            "auth",
            "Authenticate the socket as a cluster, for its own channel"
            + ("" if private else " (a feed edge refuses it: `forbidden`)"),
            _obj(
                {
                    "op": {"const": "auth"},
                    "token": {"type": "string", "minLength": 1, "maxLength": MAX_TOKEN},
                    "id": _ID,
                },
                optional=("id",),
            ),
        ),
    }
    error_codes = {
        code: what for code, what in ERROR_CODES.items() if private or code in EDGE_CODES
    }
    codes = "; ".join(f"`{code}`: {what}" for code, what in error_codes.items())
    server = {
        "subscribed": _reply("subscribed", "Channels joined", channels=_CHANNELS),
        "unsubscribed": _reply("unsubscribed", "Channels left", channels=_CHANNELS),
        "pong": _reply("pong", "Answer to ping", time=_TIME),
        "error": _message(
            "error",
            f"A refused frame; the connection stays open. {codes}.",
            _obj(
                {
                    "type": {"const": "error"},
                    "error": {
                        "oneOf": [
                            {"const": code, "description": what}
                            for code, what in error_codes.items()
                        ]
                    },
                    "detail": {"type": "string", "description": "a sentence"},
                    **ERROR_FIGURES,
                    "id": _ID,
                },
                optional=(*ERROR_FIGURES, "id"),
            ),
        ),
        "heartbeat": _message(
            "heartbeat",
            f"Sent after {HEARTBEAT_SECONDS:g} s without any message; `time` is wall-clock time",
            _obj(
                {
                    "type": {"const": "heartbeat"},
                    "time": _TIME,
                    "ticks": {
                        "type": "object",
                        "additionalProperties": {"type": "integer"},
                        "description": "latest tick of every island",
                    },
                }
            ),
        ),
    }
    for spec in specs:
        server[f"snapshot_{spec.name}"] = _tick_message(
            "snapshot",
            spec,
            f"{spec.description} The latest tick, first on a subscribe without from_tick.",
        )
        server[f"update_{spec.name}"] = _tick_message(
            "update",
            spec,
            f"{spec.description} One per tick; with from_tick, the replayed "
            "ticks first, then live: each tick once, in order.",
        )
    if private:
        server.update(_cluster_messages())
    ref = "#/channels/market/messages/"
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "burstmarket market feed",
            "version": __version__,
            "description": (
                "Public, read-only market data over one websocket. Channels: "
                + ", ".join(f"`{spec.channel}`" for spec in specs)
                + (
                    f"; after `auth` with a cluster token, its own `{CLUSTER_CHANNEL}`"
                    if private
                    else ""
                )
                + f". A subscriber that falls behind ({backlog} messages held, or a keepalive "
                f"ping unanswered for {ping_seconds:g} s) is closed with code 4008 "
                "`slow-consumer` and may resubscribe with `from_tick`."
            ),
        },
        "servers": {},
        "defaultContentType": "application/json",
        "channels": {
            "market": {
                "address": path,
                "servers": [{"$ref": "#/servers/market"}],
                "messages": {**client, **server},
                "x-close-codes": close_codes(backlog, ping_seconds),
            }
        },
        "operations": {
            "clientSends": {
                "action": "receive",
                "channel": {"$ref": "#/channels/market"},
                "messages": [{"$ref": ref + name} for name in client],
            },
            "serverSends": {
                "action": "send",
                "channel": {"$ref": "#/channels/market"},
                "messages": [{"$ref": ref + name} for name in server],
            },
        },
    }
