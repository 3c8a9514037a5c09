"""Ledger rows: exact integer amounts in ledger units (money.LEDGER_UNITS_PER_USD), append-only.

Positive units are owed by the account. `deposit` rows (credits) are negative; `charge` (a tick's
rate × GPUs × tick length, and held time since the last billed moment), `refund` (a scale-down or
operator cordon inside a billed interval, negative), `hold` (a Kubernetes node's minimum hold or
5-minute increment) and `base_load` (a base load block's 5-minute step, or its negative rest
when the block is cancelled, changed or shortened) are billed;
`commitment` and `release` are the spend guard's worst-case record, never billed and never in
the balance.

A base load purchase the balance does not cover whole (docs/market.md "Buying"): a
`security_deposit` (positive) takes the deposit from the balance and a `receivable` (positive)
records what is owed by wire; a `wire` (negative) is credit that arrived by wire, settling the
receivable; `deposit_return` (negative) gives the deposit back to the balance once the
receivable is paid or the block stops; a negative `receivable` closes what was unpaid when a
cancellation stopped the block. Receivables are a record, never in the balance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from burstmarket.clock import NS_PER_MS
from burstmarket.market.model import Cluster, Node
from burstmarket.states import LedgerKind

DEPOSIT: Final = "deposit"
CHARGE: Final = "charge"
REFUND: Final = "refund"
HOLD: Final = "hold"
BASE_LOAD: Final = "base_load"
COMMITMENT: Final = "commitment"
RELEASE: Final = "release"
SECURITY_DEPOSIT: Final = "security_deposit"
DEPOSIT_RETURN: Final = "deposit_return"
RECEIVABLE: Final = "receivable"
WIRE: Final = "wire"
BILLED = (CHARGE, REFUND, HOLD, BASE_LOAD)
BALANCE = (DEPOSIT, *BILLED, SECURITY_DEPOSIT, DEPOSIT_RETURN, WIRE)
"""The kinds the credit balance is the (negated) sum of."""
SPENT = (CHARGE, REFUND, HOLD)
"""The kinds a cluster's spend window sums: its market billing (base load is bought apart)."""


@dataclass(frozen=True, slots=True)
class Entry:
    at: int
    account: str
    kind: LedgerKind
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
    block: str | None = None
    """The block a base load row bills; the purchase a deposit, receivable or wire is for."""


def amount(rate: int, gpus: int, span_ns: int) -> int:
    """Ledger units for `gpus` GPUs at `rate` µUSD per GPU-hour over `span_ns` (whole ms)."""
    return rate * gpus * (span_ns // NS_PER_MS)


def period_entry(
    kind: LedgerKind,
    at: int,
    account: str,
    cluster: str,
    island: str,
    start: int,
    end: int,
    gpus: int,
    rate: int,
    *,
    tick: int | None = None,
    node: str | None = None,
    block: str | None = None,
) -> Entry:
    """A billed row: `gpus` GPUs (negative: undone) at `rate` over [start, end)."""
    ms = (end - start) // NS_PER_MS
    return Entry(
        at=at,
        account=account,
        kind=kind,
        units=rate * gpus * ms,
        cluster=cluster,
        island=island,
        tick=tick,
        node=node,
        period_start=start,
        period_end=end,
        gpus=gpus,
        gpu_ms=gpus * ms,
        rate=rate,
        block=block,
    )


@dataclass(frozen=True, slots=True)
class PurchaseMoney:
    """A base load purchase's money besides its billing, in ledger units: the security deposit
    still held, and what is still owed of its receivable (by wire)."""

    deposit_held: int = 0
    owed: int = 0


@dataclass(frozen=True, slots=True)
class Billed:
    """How far an island's market billing has gone: its last tick billed [start, end) in
    advance, at each cluster's rate. Held time before `floor`, when the service started, is never
    billed: time the service was not running is nobody's (docs/market.md "Billing")."""

    start: int
    end: int
    floor: int = 0


def stop_billing(
    at: int,
    account: str,
    cluster: str,
    n: Node,
    gpus: int,
    rate: int | None,
    billed_so_far: Billed | None,
) -> list[Entry]:
    """Billing for node `n` stops at `at`, exactly: the part of the interval billed in advance
    after `at` is refunded, held time not billed yet up to `at` is charged (at `rate`, the
    cluster's rate in force, else the node's locked price), and the node's spend-guard
    commitment is released (its billing and commitment fields clear)."""
    entries: list[Entry] = []

    def row(kind: LedgerKind, start: int, end: int, count: int, price: int) -> Entry:
        island = n.island
        return period_entry(kind, at, account, cluster, island, start, end, count, price, node=n.id)

    since: int | None = n.billed_until
    if since is None and billed_so_far is not None:
        since = billed_so_far.end
        if rate is not None and at < since:
            entries.append(row(REFUND, max(at, billed_so_far.start), since, -gpus, rate))
    if since is not None:
        since = max(since, billed_so_far.floor if billed_so_far is not None else 0)
        price = rate if rate is not None else n.locked_price
        if price is not None and at > since:
            entries.append(row(CHARGE, since, at, gpus, price))
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
    n.commit_price = n.commit_ends_at = n.billed_until = None
    return entries


def scale_down(
    c: Cluster, gpus: int, nodes: list[Node], at: int, rate: int | None, billed: Billed | None
) -> list[Entry]:
    """`nodes` (of `gpus` GPUs each) go back to their island at `at`, freed here, and their
    billing stops at once, exactly at `at` (`stop_billing`, `rate` the cluster's rate in
    force). The ledger rows."""
    entries: list[Entry] = []
    for n in nodes:
        entries += stop_billing(at, c.account, c.id, n, gpus, rate, billed)
        n.free()
    return entries
