"""A request body's figures, as the desks take them from the contract's Structs (contract.py):
money to integer µUSD, refused `invalid` naming the field (never rounded, money.py); an
island's free-form node_spec bounded in size; a time to market nanoseconds.

The routes hand each desk the Struct as decoded (api/bodies.py); a desk's first step reads its
figures here, before it looks at the market, so a malformed figure is refused before anything
else is asked. A field left out of a change is `msgspec.UNSET` and stays so."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import msgspec

from burstmarket.clock import NS_PER_MS, from_datetime, parse_time
from burstmarket.contract import MAX_NODE_SPEC_BYTES
from burstmarket.errors import Invalid
from burstmarket.money import MoneyError, parse_amount, parse_price

NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
"""Names: jobs, accounts, clusters, islands (docs/api.md "Limits")."""


def name(field: str, value: str, **figures: Any) -> str:
    if not NAME.match(value):
        raise Invalid(field, "must be 1-63 lowercase letters, digits or '-'", **figures)
    return value


def price(field: str, value: Decimal) -> int:
    """A price in USD per GPU-hour -> µUSD, refused (never rounded) off the grid or range."""
    try:
        return parse_price(value)
    except MoneyError as exc:
        raise Invalid(field, str(exc), value=value) from None


def optional_price(field: str, value: Decimal | None) -> int | None:
    return None if value is None else price(field, value)


def amount(field: str, value: Decimal) -> int:
    """A dollar amount -> µUSD (at most 6 decimals)."""
    try:
        return parse_amount(value)
    except MoneyError as exc:
        raise Invalid(field, str(exc), value=value) from None


def node_spec(value: Any) -> Any:
    """An island's free-form node_spec, bounded in size."""
    size = len(msgspec.json.encode(value))
    if size > MAX_NODE_SPEC_BYTES:
        raise Invalid(
            "node_spec",
            f"is {size} bytes of JSON, over {MAX_NODE_SPEC_BYTES}",
            limit=MAX_NODE_SPEC_BYTES,
        )
    return value


def instant(field: str, value: str) -> int:
    """An RFC 3339 time -> market nanoseconds, cut to the whole millisecond market times are."""
    ns = from_datetime(parse_time(field, value))
    return ns - ns % NS_PER_MS
