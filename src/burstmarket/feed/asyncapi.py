"""The feed's AsyncAPI 3.0 document, built from the feed catalog and the client frames' limits
(so it never drifts from them): the websocket's own channel (`market`: the client's frames,
the answers, heartbeats, close codes), and one channel per feed (`stats:{island}`, ...) with
its parameter and its snapshot and update messages.

Every message lists every field it can carry and nothing else (`additionalProperties: false`),
the `error` message its codes and figures, and the channel its close codes (`x-close-codes`,
AsyncAPI having no field for them). `servers` names the host the document was asked from.
"""

from __future__ import annotations

from typing import Any

from burstmarket import __version__
from burstmarket.errors import Forbidden, Invalid, NotTickedYet, Unauthorized, UnknownIsland
from burstmarket.feed.catalog import ISLAND_PLACEHOLDER, Delta, FeedSpec
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
ISLAND_PARAMETER = ISLAND_PLACEHOLDER.strip("{}")

Channel = tuple[str, dict[str, Any], dict[str, dict[str, Any]]]
"""A channel of the document: its name, the channel, and the operations on it by name."""

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
    UnknownIsland.code: "a channel of an island that does not exist (`island`)",
    NotTickedYet.code: "a channel of an island that has not ticked yet (`island`)",
    Unauthorized.code: f"an unknown token, or `{CLUSTER_CHANNEL}` before `auth`",
    Forbidden.code: f"another cluster's channel (`{CLUSTER_CHANNEL}:<id>`), a second cluster "
    "on one socket, or `auth` on a feed edge",
}
"""The refusals the feed answers with (feed/service.py and feed/private.py raise no others)."""
EDGE_CODES = (Invalid.code, UnknownIsland.code, Forbidden.code)
"""Those of a feed edge, which knows only the islands on the bus and serves no cluster's
channel."""

ERROR_FIGURES: dict[str, dict[str, Any]] = {
    "field": {
        "type": "string",
        "description": "the field at fault (`invalid`): `frame` when "
        "the frame is not a JSON object, else op, channels, from_tick or id",
    },
    "channel": {"type": "string", "description": "the channel refused (unknown, forbidden, ...)"},
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


def servers(host: str, path: str, secure: bool) -> dict[str, Any]:
    return {
        "market": {
            "host": host,
            "pathname": path,
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


def _feed_message(kind: str, spec: FeedSpec, summary: str, data: dict[str, Any]) -> dict[str, Any]:
    return _message(
        f"{kind}_{spec.name}",
        summary,
        _obj(
            {
                "type": {"const": kind},
                "channel": {
                    "type": "string",
                    "pattern": "^" + spec.channel.replace(ISLAND_PLACEHOLDER, ".+") + "$",
                },
                "tick": {**_TICK, "description": "gap-free per island"},
                "time": _TIME,
                "data": data,
                "id": {**_ID, "description": "on a snapshot answering a `snapshot` frame"},
            },
            optional=("id",),
        ),
    )


def _whole(spec: FeedSpec) -> dict[str, Any]:
    """A row's `data` as a whole: every key of the feed's row."""
    return {
        "type": "object",
        "properties": spec.schema,
        "required": list(spec.schema),
        "additionalProperties": False,
    }


def _changes(spec: FeedSpec, delta: Delta) -> dict[str, Any]:
    """A row's `data` as the change since the tick before (catalog.Delta)."""
    item = spec.schema[delta.field]["items"]
    others = {name: kind for name, kind in spec.schema.items() if name != delta.field}
    properties = {
        **others,
        "changed": {
            "type": "array",
            "items": item,
            "description": f"the items of `{delta.field}` new or changed since the tick "
            f"before, each whole, ordered by `{delta.key}`",
        },
        "removed": {
            "type": "array",
            "items": item["properties"][delta.key],
            "description": f"the `{delta.key}` of each item of `{delta.field}` gone since the "
            "tick before",
        },
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def feed_channel(spec: FeedSpec) -> Channel:
    """One feed's channel, `<feed>:{island}`, and the operation that sends its ticks."""
    update = _whole(spec)
    how = "One per tick"
    if spec.delta is not None:
        update = {"oneOf": [_changes(spec, spec.delta), update]}
        how = (
            f"One per tick, as the change since the tick before (`changed`, `removed` in place "
            f"of `{spec.delta.field}`); whole (with `{spec.delta.field}`) when the client may "
            "not have the tick before: the first update of a replay, the first after the "
            "service started"
        )
    channel = {
        "address": spec.channel,
        "title": spec.name,
        "description": f"{spec.description} Subscribed to on the `market` channel's socket.",
        "parameters": {ISLAND_PARAMETER: {"description": "an island's id"}},
        "messages": {
            "snapshot": _feed_message(
                "snapshot",
                spec,
                "The latest tick, whole: first on a subscribe without from_tick, and the "
                "answer to a `snapshot` frame.",
                _whole(spec),
            ),
            "update": _feed_message(
                "update",
                spec,
                f"{how}; with from_tick, the replayed ticks first, then live: each tick once, "
                "in order.",
                update,
            ),
        },
    }
    ref = f"#/channels/{spec.name}"
    operation = {
        "action": "send",
        "channel": {"$ref": ref},
        "messages": [{"$ref": f"{ref}/messages/{name}"} for name in ("snapshot", "update")],
    }
    return spec.name, channel, {f"{spec.name}Ticks": operation}


def cluster_channel() -> Channel:
    """The authenticated cluster's own channel, `cluster`, and the operation sending its ticks."""
    what = (
        "The authenticated cluster's own row of a tick of its island: what it holds, what "
        "waits and why, its rate, and what happened to it at the tick."
    )
    data = {"type": "object", "properties": CLUSTER_SCHEMA, "required": list(CLUSTER_SCHEMA)}

    def tick(kind: str, summary: str) -> dict[str, Any]:
        payload = {
            "type": {"const": kind},
            "channel": {"const": CLUSTER_CHANNEL},
            "tick": {**_TICK, "description": "gap-free per island"},
            "time": _TIME,
            "data": data,
        }
        return _message(f"{kind}_cluster", f"{what} {summary}", _obj(payload))

    channel = {
        "address": CLUSTER_CHANNEL,
        "title": "cluster",
        "description": "After `auth` with a cluster token, on the `market` channel's socket.",
        "messages": {
            "snapshot": tick(
                "snapshot",
                "The latest tick, first on a subscribe (the next tick's, if the island has "
                "not ticked since the service started).",
            ),
            "update": tick(
                "update", "One per tick of the cluster's island; not replayed (no from_tick)."
            ),
        },
    }
    ref = "#/channels/cluster"
    operation = {
        "action": "send",
        "channel": {"$ref": ref},
        "messages": [{"$ref": f"{ref}/messages/{name}"} for name in ("snapshot", "update")],
    }
    return "cluster", channel, {"clusterTicks": operation}


def market_channel(
    specs: tuple[FeedSpec, ...], path: str, *, backlog: int, ping_seconds: float, private: bool
) -> Channel:
    """The websocket itself: the client's frames, the server's answers and heartbeats, and the
    codes the server closes it with; the feeds' ticks are on their own channels."""
    client = {
        "subscribe": _message(
            "subscribe",
            "Join channels; each channel is joined or refused on its own",
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
        "snapshot": _message(
            "snapshot",
            "Ask for the latest tick of subscribed channels, whole",
            _obj({"op": {"const": "snapshot"}, "channels": _CHANNELS, "id": _ID}, optional=("id",)),
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
            f"A refused frame, or one channel of it; the connection stays open. {codes}.",
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
    if private:
        server["authenticated"] = _reply(
            "authenticated",
            f"The socket is the cluster's: it may subscribe `{CLUSTER_CHANNEL}`",
            cluster={"type": "string"},
        )
    channel = {
        "address": path,
        "title": "market",
        "description": "The one websocket: every feed's channel ("
        + ", ".join(f"`{spec.channel}`" for spec in specs)
        + ") is subscribed to and sent over it.",
        "servers": [{"$ref": "#/servers/market"}],
        "messages": {**client, **server},
        "x-close-codes": close_codes(backlog, ping_seconds),
    }
    ref = "#/channels/market"
    operations = {
        "clientSends": {
            "action": "receive",
            "channel": {"$ref": ref},
            "messages": [{"$ref": f"{ref}/messages/{name}"} for name in client],
        },
        "serverSends": {
            "action": "send",
            "channel": {"$ref": ref},
            "messages": [{"$ref": f"{ref}/messages/{name}"} for name in server],
        },
    }
    return "market", channel, operations


def document(
    specs: tuple[FeedSpec, ...],
    path: str,
    *,
    backlog: int,
    ping_seconds: float,
    private: bool = True,
) -> dict[str, Any]:
    """The document; its `servers` is filled in for each request (`servers()`). Each channel
    comes from a function of its own (`market_channel`, `feed_channel`, `cluster_channel`): a
    new channel is one more function and one more entry here. `private`: the server serves the
    clusters' own channel (a feed edge does not: it refuses `auth`)."""
    built = [
        market_channel(specs, path, backlog=backlog, ping_seconds=ping_seconds, private=private),
        *(feed_channel(spec) for spec in specs),
        *([cluster_channel()] if private else []),
    ]
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "burstmarket market feed",
            "version": __version__,
            "description": (
                "Public, read-only market data over one websocket (the `market` channel). "
                "Feeds: " + ", ".join(f"`{spec.channel}`" for spec in specs) + ", one "
                "channel each"
                + (
                    f"; after `auth` with a cluster token, its own `{CLUSTER_CHANNEL}`"
                    if private
                    else ""
                )
                + f". A subscriber that falls behind ({backlog} messages held, or a "
                f"keepalive ping unanswered for {ping_seconds:g} s) is closed with code 4008 "
                "`slow-consumer` and may resubscribe with `from_tick`."
            ),
        },
        "servers": {},
        "defaultContentType": "application/json",
        "channels": {name: channel for name, channel, _ in built},
        "operations": {key: op for _, _, ops in built for key, op in ops.items()},
    }
