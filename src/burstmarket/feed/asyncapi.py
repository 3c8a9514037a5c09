"""The feed's AsyncAPI 3.0 document, built from the feed catalog (so it never drifts from it)."""

from __future__ import annotations

from typing import Any

from burstmarket import __version__
from burstmarket.feed.catalog import FeedSpec
from burstmarket.feed.protocol import MAX_CHANNELS

HEARTBEAT_SECONDS = 5.0

_TIME = {"type": "string", "format": "date-time", "description": "RFC 3339, UTC"}


def _obj(properties: dict[str, Any], *, required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties,
            "required": list(properties) if required is None else required}


def _message(name: str, summary: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "title": name, "summary": summary, "contentType": "application/json",
            "payload": payload}


def _tick_message(kind: str, spec: FeedSpec, summary: str) -> dict[str, Any]:
    data = _obj(spec.schema)
    payload = _obj({
        "type": {"const": kind},
        "channel": {"type": "string",
                    "pattern": "^" + spec.channel.replace("{island}", ".+") + "$"},
        "tick": {"type": "integer", "description": "gap-free per island"},
        "time": _TIME,
        "data": data,
    })
    return _message(f"{kind}_{spec.name}", summary, payload)


def document(specs: tuple[FeedSpec, ...], path: str) -> dict[str, Any]:
    channels_list = {"type": "array", "items": {"type": "string"}, "minItems": 1,
                     "maxItems": MAX_CHANNELS}
    client = {
        "subscribe": _message("subscribe", "Join channels; `from_tick` replays first", _obj(
            {"op": {"const": "subscribe"}, "channels": channels_list,
             "from_tick": {"type": "integer", "minimum": 0}},
            required=["op", "channels"],
        )),
        "unsubscribe": _message("unsubscribe", "Leave channels", _obj(
            {"op": {"const": "unsubscribe"}, "channels": channels_list})),
        "ping": _message("ping", "Ask for a pong", _obj({"op": {"const": "ping"}})),
    }
    server = {
        "subscribed": _message("subscribed", "Channels joined", _obj(
            {"type": {"const": "subscribed"}, "channels": channels_list})),
        "unsubscribed": _message("unsubscribed", "Channels left", _obj(
            {"type": {"const": "unsubscribed"}, "channels": channels_list})),
        "pong": _message("pong", "Answer to ping", _obj({"type": {"const": "pong"},
                                                         "time": _TIME})),
        "error": _message("error", "A refused frame; the connection stays open", _obj(
            {"type": {"const": "error"}, "error": {"type": "string"},
             "detail": {"type": "string"}},
        )),
        "heartbeat": _message(
            "heartbeat",
            f"Sent after {HEARTBEAT_SECONDS:g} s without any message; `time` is wall-clock time",
            _obj({"type": {"const": "heartbeat"}, "time": _TIME,
                  "ticks": {"type": "object", "additionalProperties": {"type": "integer"},
                            "description": "latest tick of every island"}}),
        ),
    }
    for spec in specs:
        server[f"snapshot_{spec.name}"] = _tick_message(
            "snapshot", spec, f"{spec.description} Latest tick, first on every subscribe.")
        server[f"update_{spec.name}"] = _tick_message(
            "update", spec, f"{spec.description} One per tick, replayed ticks first.")
    ref = "#/channels/market/messages/"
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "burstmarket market feed",
            "version": __version__,
            "description": (
                "Public, read-only market data over one websocket. Channels: "
                + ", ".join(f"`{spec.channel}`" for spec in specs)
                + ". A subscriber that falls behind by a bounded backlog is closed with code "
                "4008 `slow-consumer` and may resubscribe with `from_tick`."
            ),
        },
        "defaultContentType": "application/json",
        "channels": {"market": {"address": path, "messages": {**client, **server}}},
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
