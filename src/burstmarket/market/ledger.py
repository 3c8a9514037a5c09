"""Ledger rows: exact integer amounts in ledger units (money.LEDGER_UNITS_PER_USD), append-only.

Positive units are owed by the account. `deposit` rows (credits) are negative; `charge` (a tick's
rate × GPUs × tick length), `refund` (a scale-down or operator cordon inside a billed interval,
negative), `hold` (a Kubernetes node's minimum hold or 5-minute increment) and `base_load` (a
base load block's 5-minute step, or its negative rest when the block is cancelled) are billed;
`commitment` and `release` are the spend guard's worst-case record, never billed and never in
the balance.
"""

from __future__ import annotations

from dataclasses import dataclass

from burstmarket.clock import NS_PER_MS
from burstmarket.market.model import Node

DEPOSIT = "deposit"
CHARGE = "charge"
REFUND = "refund"
HOLD = "hold"
BASE_LOAD = "base_load"
COMMITMENT = "commitment"
RELEASE = "release"
BILLED = (CHARGE, REFUND, HOLD, BASE_LOAD)
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


def refund_rest(
    at: int,
    account: str,
    cluster: str,
    island: str,
    node: str,
    rate: int,
    gpus: int,
    billed: tuple[int, int] | None,
) -> Entry | None:
    """The negative rest of the interval the last tick billed in advance for one node, from
    `at`: billing for the node stops at once."""
    if billed is None or billed[1] <= at:
        return None
    start = max(at, billed[0])
    span = billed[1] - start
    return Entry(
        at=at,
        account=account,
        kind=REFUND,
        units=-amount(rate, gpus, span),
        cluster=cluster,
        island=island,
        node=node,
        period_start=start,
        period_end=billed[1],
        gpus=-gpus,
        gpu_ms=-gpus * (span // NS_PER_MS),
        rate=rate,
    )


def stop_billing(
    at: int,
    account: str,
    cluster: str,
    n: Node,
    gpus: int,
    rate: int | None,
    billed: tuple[int, int] | None,
) -> list[Entry]:
    """Billing for node `n` stops at `at`: the rest of the interval billed in advance at `rate`
    is refunded and the node's spend-guard commitment released (its commitment fields clear)."""
    entries: list[Entry] = []
    if rate is not None:
        refund = refund_rest(at, account, cluster, n.island, n.id, rate, gpus, billed)
        if refund is not None:
            entries.append(refund)
    ends = n.commit_ends_at or 0
    if n.commit_price is not None and ends > at:
        entries.append(
            Entry(
                at=at,
                account=account,
                kind=RELEASE,
                units=-amount(n.commit_price, gpus, ends - at),
                cluster=cluster,
                island=n.island,
                node=n.id,
                gpus=gpus,
            )
        )
    n.commit_price = n.commit_ends_at = None
    return entries
