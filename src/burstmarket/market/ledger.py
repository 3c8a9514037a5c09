"""Ledger rows: exact integer amounts in ledger units (money.LEDGER_UNITS_PER_USD), append-only.

Positive units are owed by the account. `deposit` rows (credits) are negative; `charge` (a tick's
rate × GPUs × tick length), `refund` (a scale-down inside a billed interval, negative) and
`hold` (a Kubernetes node's minimum hold or 5-minute increment) are billed; `commitment` and
`release` are the spend guard's worst-case record, never billed and never in the balance.
"""

from __future__ import annotations

from dataclasses import dataclass

from burstmarket.clock import NS_PER_MS

DEPOSIT = "deposit"
CHARGE = "charge"
REFUND = "refund"
HOLD = "hold"
COMMITMENT = "commitment"
RELEASE = "release"
BILLED = (CHARGE, REFUND, HOLD)
BALANCE = (DEPOSIT, *BILLED)


@dataclass(frozen=True, slots=True)
class Entry:
    at: int
    account: str
    kind: str
    units: int
    cluster: str | None = None
    island: str | None = None
    tick: int | None = None
    node: str | None = None
    period_start: int | None = None
    period_end: int | None = None
    gpus: int = 0
    gpu_ms: int = 0
    rate: int | None = None


def amount(rate: int, gpus: int, span_ns: int) -> int:
    """Ledger units for `gpus` GPUs at `rate` µUSD per GPU-hour over `span_ns` (whole ms)."""
    return rate * gpus * (span_ns // NS_PER_MS)
