"""Request bodies: msgspec Structs decoded strictly, turned into domain values in one place.

Bodies are decoded here rather than by the framework so that every malformed body (bad JSON,
a wrong type, an unknown or missing field, a price off the grid) becomes our `invalid` refusal
naming the field, never the framework's own error shape.

Every string and list a tenant or the operator sends has a length limit here (docs/api.md lists
them); one over it is refused `invalid` with the field and the `limit`.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, TypeVar

import msgspec

from burstmarket.errors import Invalid
from burstmarket.money import MoneyError, parse_amount, parse_price

Number = int | Decimal
"""Money as the JSON text spells it: msgspec reads a number into a Decimal digit for digit, so
2.99999999999999999999 stays that (and is refused for its decimals), never a float's 3.0."""
T = TypeVar("T")

MAX_NAME = 63
"""Names: jobs, accounts, clusters, islands (1-63 lowercase letters, digits or '-')."""
MAX_PRIORITY_CLASS = 253
"""A Kubernetes PriorityClass name is a DNS subdomain: at most 253 characters."""
MAX_NODE_ID = 128
MAX_RELEASE = 10_000
"""Node ids one declaration may release (an island has at most 100,000 nodes)."""
MAX_NODE_SPEC_BYTES = 4096
"""An island's node_spec, as JSON."""

Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME)]
PriorityClass = Annotated[str, msgspec.Meta(max_length=MAX_PRIORITY_CLASS)]
NodeId = Annotated[str, msgspec.Meta(max_length=MAX_NODE_ID)]

_FIELD = (
    re.compile(r"at `\$\.([A-Za-z_][A-Za-z0-9_]*)"),
    re.compile(r"field `([A-Za-z_][A-Za-z0-9_]*)`"),
)
_LIMIT = re.compile(r"(?:length|size) <= (\d+)")


class Body(msgspec.Struct, forbid_unknown_fields=True):
    pass


class Capacity(Body):
    max_gpus: int
    max_price_per_gpu_hour: Number | None = None
    release: Annotated[list[NodeId], msgspec.Meta(max_length=MAX_RELEASE)] = []


class Bid(Body):
    limit_price_per_gpu_hour: Number


class NewJob(Body):
    name: Name
    nodes: int
    priority_class: PriorityClass | None = None
    limit_price_per_gpu_hour: Number | None = None


class JobPatch(Body):
    limit_price_per_gpu_hour: Number | msgspec.UnsetType | None = msgspec.UNSET
    priority_class: PriorityClass | msgspec.UnsetType | None = msgspec.UNSET


class SpendLimitBody(Body):
    usd_per_day: Number | None


class NewAccount(Body):
    name: Name
    balance_usd: Number = 0


class Credit(Body):
    amount_usd: Number


class NewCluster(Body):
    account: Name
    island: Name
    kind: Annotated[str, msgspec.Meta(max_length=8)]
    name: Name


class IslandBody(Body):
    gpus_per_node: int | None = None
    nodes: int | None = None
    reserve_price: Number | None = None
    node_spec: Any = msgspec.UNSET
    base_load_cap: int | None = None


class BaseLoadBody(Body):
    nodes: int
    rate_per_gpu_hour: Number
    term_hours: int


class Ticks(Body):
    count: int = 1
    island: Name | None = None


def decode(raw: bytes, kind: type[T]) -> T:
    try:
        return msgspec.json.decode(raw or b"null", type=kind)
    except msgspec.ValidationError as exc:
        message = str(exc)
        limit = _LIMIT.search(message)
        figures = {} if limit is None else {"limit": int(limit.group(1))}
        for pattern in _FIELD:
            if found := pattern.search(message):
                raise Invalid(found.group(1), message, **figures) from None
        raise Invalid("body", message, **figures) from None
    except msgspec.DecodeError as exc:
        raise Invalid("body", f"malformed JSON: {exc}") from None


def node_spec(value: Any) -> Any:
    """An island's free-form node_spec, bounded in size."""
    size = len(msgspec.json.encode(value))
    if size > MAX_NODE_SPEC_BYTES:
        raise Invalid(
            "node_spec", f"is {size} bytes of JSON, over {MAX_NODE_SPEC_BYTES}",
            limit=MAX_NODE_SPEC_BYTES,
        )
    return value


def price(field: str, value: Number) -> int:
    """A price in USD per GPU-hour -> µUSD, refused (never rounded) off the grid or range."""
    try:
        return parse_price(value)
    except MoneyError as exc:
        raise Invalid(field, str(exc), value=value) from None


def optional_price(field: str, value: Number | None) -> int | None:
    return None if value is None else price(field, value)


def amount(field: str, value: Number) -> int:
    """A dollar amount -> µUSD (at most 6 decimals)."""
    try:
        return parse_amount(value)
    except MoneyError as exc:
        raise Invalid(field, str(exc), value=value) from None
