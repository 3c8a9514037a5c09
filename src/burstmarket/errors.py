"""One error tree: every refusal carries its code and HTTP status.

    MarketError
    ├── Invalid          422 invalid          malformed or out-of-range input (names the field)
    ├── OffGrid          422 off-grid         max_gpus not a multiple of gpus_per_node
    ├── BidTooLow        409 bid-too-low      a price the market can never meet
    ├── SpendLimit       402 spend-limit      the worst case does not fit the dollar limit
    ├── BillingHold      402 billing-hold     the account's balance is at or below zero
    ├── OnePerCluster    409 one-per-cluster  a second live block for one cluster
    ├── SoldOut          409 sold-out         a base load cell with no rate, or not fitting now
    ├── NotAvailable     409 not-available    more than the island's reservable inventory
    ├── BuyingClosed     409 buying-closed    buying base load is not open on the island
    ├── InsufficientBalance 402 insufficient-balance  the balance does not cover the deposit
    ├── Unauthorized     401 unauthorized     no or unknown token
    ├── Forbidden        403 forbidden        a token acting outside its own cluster
    ├── NotFound         404 not-found
    │   ├── UnknownIsland 404 unknown-island  market data of an island that does not exist
    │   └── NotTickedYet  404 not-ticked-yet  market data of an island that has not ticked yet
    ├── Conflict         409 conflict         the request does not fit the current state
    ├── MethodNotAllowed 405 method-not-allowed
    ├── ManualClockOnly  409 manual-clock-only  manual ticks on the real clock
    ├── TooLarge         413 too-large        a request body over the size limit
    ├── RateLimited      429 rate-limited     a token over its request rate (Retry-After)
    ├── TooManyConnections 429 too-many-connections  an address over its open connections
    ├── RequestTimeout   408 request-timeout  a request's headers not complete in time
    └── StoreUnavailable 503 store-unavailable  the store cannot write now (Retry-After)

The one handler in the API renders `{"error": code, "detail": ..., **figures}` and logs exactly one
line `REFUSED reason=<code> ...` per refusal. Figures and details are cut short (`echo`): an
error never repeats a huge input back to its sender or into the log.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

MAX_ECHO = 200
"""Characters of one figure (a string, or each item of a list) an error repeats back."""
MAX_ECHO_ITEMS = 20
MAX_DETAIL = 1000


def echo(value: Any, limit: int = MAX_ECHO) -> Any:
    """`value` as an error may repeat it: long strings and lists cut, with a mark."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}... ({len(value)} characters)"
    if isinstance(value, list | tuple):
        items = [echo(item) for item in value[:MAX_ECHO_ITEMS]]
        return [*items, f"... ({len(value)} items)"] if len(value) > MAX_ECHO_ITEMS else items
    return value


class MarketError(Exception):
    code: ClassVar[str] = "invalid"
    status: ClassVar[int] = 422

    def __init__(self, detail: str, **figures: Any) -> None:
        detail = echo(detail, MAX_DETAIL)
        super().__init__(detail)
        self.detail = detail
        self.figures = {key: echo(value) for key, value in figures.items()}

    def body(self) -> dict[str, Any]:
        return {"error": self.code, "detail": self.detail, **self.figures}

    def headers(self) -> dict[str, str]:
        """HTTP headers of the answer (Retry-After for the refusals that pass with time)."""
        wait = self.figures.get("retry_after_seconds")
        return {} if wait is None else {"Retry-After": str(math.ceil(wait))}


class Invalid(MarketError):
    code = "invalid"
    status = 422

    def __init__(self, field: str, detail: str, **figures: Any) -> None:
        super().__init__(f"{field}: {detail}", field=field, **figures)


class OffGrid(MarketError):
    code = "off-grid"
    status = 422


class BidTooLow(MarketError):
    code = "bid-too-low"
    status = 409


class SpendLimit(MarketError):
    code = "spend-limit"
    status = 402


class BillingHold(MarketError):
    code = "billing-hold"
    status = 402


class OnePerCluster(MarketError):
    code = "one-per-cluster"
    status = 409


class SoldOut(MarketError):
    code = "sold-out"
    status = 409


class NotAvailable(MarketError):
    code = "not-available"
    status = 409


class BuyingClosed(MarketError):
    code = "buying-closed"
    status = 409


class InsufficientBalance(MarketError):
    code = "insufficient-balance"
    status = 402


class Unauthorized(MarketError):
    code = "unauthorized"
    status = 401

    def headers(self) -> dict[str, str]:
        """The scheme the client must authenticate with (RFC 9110 asks it of every 401)."""
        return {"WWW-Authenticate": 'Bearer realm="burstmarket"'}


class Forbidden(MarketError):
    code = "forbidden"
    status = 403


class NotFound(MarketError):
    code = "not-found"
    status = 404


class UnknownIsland(NotFound):
    """Market data (REST or the feed) of an island the market does not have: a mistyped id."""

    code = "unknown-island"


class NotTickedYet(NotFound):
    """Market data of an island that exists but has no tick yet (it will once it ticks)."""

    code = "not-ticked-yet"


class Conflict(MarketError):
    code = "conflict"
    status = 409


class MethodNotAllowed(MarketError):
    code = "method-not-allowed"
    status = 405


class ManualClockOnly(MarketError):
    code = "manual-clock-only"
    status = 409


class TooLarge(MarketError):
    code = "too-large"
    status = 413


class RateLimited(MarketError):
    code = "rate-limited"
    status = 429

    def __init__(self, retry_after_seconds: int, **figures: Any) -> None:
        super().__init__(
            f"too many requests for this token; retry after {retry_after_seconds} s",
            retry_after_seconds=retry_after_seconds,
            **figures,
        )


class TooManyConnections(MarketError):
    """Refused at accept (connections.py): the peer's address holds its limit of open
    connections already."""

    code = "too-many-connections"
    status = 429

    def __init__(self, peer: str, limit: int) -> None:
        super().__init__(
            f"this address has {limit} connections open already, the most it may have; "
            "close one first",
            peer=peer,
            limit_connections=limit,
        )


class RequestTimeout(MarketError):
    """A request whose headers were not all sent within the header timeout (connections.py)."""

    code = "request-timeout"
    status = 408

    def __init__(self, peer: str | None, limit_seconds: float) -> None:
        super().__init__(
            f"the request's headers did not arrive within {limit_seconds:g} s",
            peer=peer,
            limit_seconds=limit_seconds,
        )


class StoreUnavailable(MarketError):
    """The store failed to read or write (a full disk, an I/O error): nothing was written;
    the same request may succeed once the fault is gone."""

    code = "store-unavailable"
    status = 503

    def __init__(self, fault: str, retry_after_seconds: int = 5) -> None:
        super().__init__(
            f"the store cannot write now ({fault}); nothing was changed, retry later",
            retry_after_seconds=retry_after_seconds,
        )
