"""Accounts: made with an opening credit, credited (or corrected), paid by wire; read with the
balance and what they owe by wire for base load (market/purchases.py)."""

from __future__ import annotations

from burstmarket.clock import to_datetime
from burstmarket.contract import AccountView, Credit, NewAccount, ReceivableView, Wire
from burstmarket.errors import Conflict, Invalid
from burstmarket.market.desks.inputs import amount, name
from burstmarket.market.ledger import DEPOSIT, Entry
from burstmarket.market.lookups import check_account
from burstmarket.market.market import Market
from burstmarket.market.purchases import Receivable, open_receivables, wired
from burstmarket.market.tables import LEDGER
from burstmarket.money import LEDGER_UNITS_PER_MICRO, units_to_usd, usd
from burstmarket.store.rows import Cursor, fetch, fetch_one, run


class AccountsDesk:
    def __init__(self, market: Market) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures

    def create(self, new: NewAccount) -> AccountView:
        balance = amount("balance_usd", new.balance_usd)
        name("name", new.name)
        with self._lock:
            with self._db.write() as cur:
                if fetch_one(cur, "account", name=new.name) is not None:
                    raise Conflict(f"account {new.name!r} exists", account=new.name)
                now = self._clock.now_ns()
                run(cur, "insert_account", name=new.name, created_at=now)
                entries = _deposit(cur, new.name, balance, now)
            self._figures.fold(entries)
        return self.account(new.name)

    def credit(self, account: str, credit: Credit) -> AccountView:
        """Add (or, negative, correct) credit: a new ledger row, never an edit."""
        micros = amount("amount_usd", credit.amount_usd)
        if micros == 0:
            raise Invalid("amount_usd", "must not be 0")
        with self._lock:
            with self._db.write() as cur:
                check_account(cur, account)
                entries = _deposit(cur, account, micros, self._clock.now_ns())
            self._figures.fold(entries)
        return self.account(account)

    def wire(self, account: str, wire: Wire) -> AccountView:
        """Money received by wire: credit, applied to the account's base load receivables, the
        earliest due first; a receivable paid in full gives its security deposit back
        (market/purchases.py). What no receivable takes is plain credit."""
        micros = amount("amount_usd", wire.amount_usd)
        if micros <= 0:
            raise Invalid("amount_usd", "must be greater than 0", amount_usd=usd(micros))
        with self._lock:
            with self._db.write() as cur:
                check_account(cur, account)
                now = self._clock.now_ns()
                owing = open_receivables(cur, account)
                entries = wired(now, account, micros * LEDGER_UNITS_PER_MICRO, owing)
                LEDGER.insert(cur, entries)
            self._figures.fold(entries)
        return self.account(account)

    def account(self, account: str) -> AccountView:
        """The balance, and what the account owes by wire for base load, overdue included."""
        with self._db.read() as cur:
            check_account(cur, account)
            clusters = [r["id"] for r in fetch(cur, "account_clusters", account=account)]
            owing = open_receivables(cur, account)
        balance = self._figures.balance(account)
        return _view(account, balance, clusters, owing, self._clock.now_ns())


def _deposit(cur: Cursor, account: str, micros: int, now: int) -> list[Entry]:
    if not micros:
        return []
    entries = [Entry(at=now, account=account, kind=DEPOSIT, units=-micros * LEDGER_UNITS_PER_MICRO)]
    LEDGER.insert(cur, entries)
    return entries


def _view(
    account: str, balance: int, clusters: list[str], owing: list[Receivable], now: int
) -> AccountView:
    receivables = [
        ReceivableView(
            purchase=r.purchase,
            cluster=r.cluster,
            owed_usd=float(units_to_usd(r.owed)),
            owed_by=to_datetime(r.due),
            overdue=now >= r.due,
            deposit_held_usd=float(units_to_usd(r.deposit_held)),
        )
        for r in owing
    ]
    return AccountView(
        name=account,
        balance_usd=float(units_to_usd(balance)),
        billing_hold=balance <= 0,
        clusters=clusters,
        owed_usd=float(units_to_usd(sum(r.owed for r in owing))),
        overdue_usd=float(units_to_usd(sum(r.owed for r in owing if now >= r.due))),
        receivables=receivables,
    )
