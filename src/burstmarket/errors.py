"""One error tree: every refusal carries its code and HTTP status.

    MarketError
    ├── Invalid          422 invalid          malformed or out-of-range input (names the field)
    ├── OffGrid          422 off-grid         max_gpus not a multiple of gpus_per_node
    ├── BidTooLow        409 bid-too-low      a price the market can never meet
    ├── SpendLimit       402 spend-limit      the worst case does not fit the dollar limit
    ├── BillingHold      402 billing-hold     the account's balance is at or below zero
    ├── OnePerCluster    409 one-per-cluster  a second live block for one cluster
    ├── Unauthorized     401 unauthorized     no or unknown token
    ├── Forbidden        403 forbidden        a token acting outside its own cluster
    ├── NotFound         404 not-found
    └── Conflict         409 conflict         the request does not fit the current state

The one handler in the API renders `{"error": code, "detail": ..., **figures}` and logs exactly one
line `REFUSED reason=<code> ...` per refusal.
"""

from __future__ import annotations

from typing import Any, ClassVar


class MarketError(Exception):
    code: ClassVar[str] = "invalid"
    status: ClassVar[int] = 422

    def __init__(self, detail: str, **figures: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.figures = figures

    def body(self) -> dict[str, Any]:
        return {"error": self.code, "detail": self.detail, **self.figures}

    def log_line(self) -> str:
        parts = [f"REFUSED reason={self.code}"]
        parts += [f"{key}={value}" for key, value in self.figures.items()]
        parts.append(f"detail={self.detail!r}")
        return " ".join(parts)


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


class Unauthorized(MarketError):
    code = "unauthorized"
    status = 401


class Forbidden(MarketError):
    code = "forbidden"
    status = 403


class NotFound(MarketError):
    code = "not-found"
    status = 404


class Conflict(MarketError):
    code = "conflict"
    status = 409


class MethodNotAllowed(MarketError):
    code = "method-not-allowed"
    status = 405


class ManualClockOnly(MarketError):
    code = "manual-clock-only"
    status = 409
