"""A base load purchase's money besides its billing (docs/market.md "Buying"): the security
deposit taken when the balance does not cover the whole price, the receivable owed by wire by the
next business day, the wires that settle it, and the deposit given back.

All of it is ledger rows (market/ledger.py), keyed by the purchase (the block bought): the
deposit is taken from the balance (`security_deposit`) and given back (`deposit_return`) once
the receivable is paid in full or the block stops; the receivable is a record beside the
balance (`receivable`), and a wire is credit (`wire`) applied to the account's open receivables,
the earliest due first, any rest plain credit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from burstmarket.clock import from_datetime, to_datetime
from burstmarket.market.ledger import (
    DEPOSIT_RETURN,
    RECEIVABLE,
    SECURITY_DEPOSIT,
    WIRE,
    Entry,
    PurchaseMoney,
)
from burstmarket.money import LEDGER_UNITS_PER_USD
from burstmarket.states import LedgerKind
from burstmarket.store.rows import Cursor, fetch

DEPOSIT_CAP = 10_000 * LEDGER_UNITS_PER_USD
"""The security deposit is the block's price up to 10,000 USD."""


def deposit_for(price: int, balance: int) -> int:
    """The security deposit a purchase of `price` needs from an account with `balance` (ledger
    units): none when the balance covers the whole price, else the price up to the cap."""
    return 0 if balance >= price else min(price, DEPOSIT_CAP)


def due_by(at: int) -> int:
    """When a receivable opened at `at` is due: the end of the next business day (UTC, Monday
    to Friday; a purchase on a Friday or a weekend is due at the end of Monday). The time
    returned is the midnight that ends that day: paid before it is on time."""
    day = to_datetime(at).astimezone(UTC).date() + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return from_datetime(datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1))


def purchase_money(cur: Cursor, purchases: list[str]) -> dict[str, PurchaseMoney]:
    """The deposit held and the receivable owed of each of `purchases` (those with neither are
    left out)."""
    if not purchases:
        return {}
    rows = fetch(cur, "purchase_money", purchases=purchases)
    return {r["purchase"]: PurchaseMoney(int(r["deposit_held"]), int(r["owed"])) for r in rows}


def bought(
    at: int, account: str, cluster: str, island: str, purchase: str, deposit: int, owed: int
) -> list[Entry]:
    """The rows of a purchase the balance does not cover whole: the deposit taken from the
    balance, the rest owed by wire (none when the balance covers the price)."""
    taken: list[tuple[LedgerKind, int]] = [(SECURITY_DEPOSIT, deposit), (RECEIVABLE, owed)]
    return [
        Entry(at, account, kind, units, cluster, island, block=purchase)
        for kind, units in taken
        if units
    ]


@dataclass(frozen=True, slots=True)
class Receivable:
    """What a purchase still owes by wire, and when it is due."""

    purchase: str
    cluster: str
    owed: int
    """Ledger units."""
    due: int
    deposit_held: int


def open_receivables(cur: Cursor, account: str) -> list[Receivable]:
    """The account's receivables with something still owed, the earliest due first."""
    return [
        Receivable(r["purchase"], r["cluster"], int(r["owed"]), r["owed_by"], int(r["deposit"]))
        for r in fetch(cur, "open_receivables", account=account)
    ]


def wired(at: int, account: str, amount: int, owing: list[Receivable]) -> list[Entry]:
    """A wire of `amount` ledger units: credit, applied to `owing` (the earliest due first);
    a receivable it pays in full gives its deposit back. What no receivable takes is plain
    credit."""
    rows: list[Entry] = []
    left = amount
    for r in owing:
        if left <= 0:
            break
        paid = min(left, r.owed)
        left -= paid
        rows.append(Entry(at, account, WIRE, -paid, r.cluster, block=r.purchase))
        if paid == r.owed and r.deposit_held:
            rows.append(
                Entry(at, account, DEPOSIT_RETURN, -r.deposit_held, r.cluster, block=r.purchase)
            )
    if left > 0:
        rows.append(Entry(at=at, account=account, kind=WIRE, units=-left))
    return rows
