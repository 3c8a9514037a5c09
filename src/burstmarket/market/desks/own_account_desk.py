"""The account as one of its clusters reads it, `GET /api/account` (docs/api.md): the balance,
what base load holds of it and owes by wire, since when a billing hold stands, this cluster's
spend window, and what the account is billed per hour now with the runway that leaves.

The rate and the runway are the account's, not the cluster's: every cluster of an account draws
on one balance, so only the account's rate says when that balance runs out. The spend window is
the cluster's, as its spend limit is."""

from __future__ import annotations

from burstmarket.clock import NS_PER_MS, maybe_datetime, to_datetime
from burstmarket.contract import OwnAccountView
from burstmarket.market.desks.spend_guard import SpendGuard
from burstmarket.market.lookups import billing_hold_since, read_cluster_and_island
from burstmarket.market.market import Market
from burstmarket.market.purchases import open_receivables
from burstmarket.money import units_to_usd, usd
from burstmarket.store.rows import Cursor, fetch, fetch_one

MS_PER_HOUR = 3_600_000


class OwnAccountDesk:
    def __init__(self, market: Market, spend_guard: SpendGuard) -> None:
        """The parts of `market` it uses (it keeps no reference to it), and the spend guard
        whose window it reads."""
        self._db = market.db
        self._clock = market.clock
        self._figures = market.figures
        self._spend_guard = spend_guard

    def account(self, cluster_id: str) -> OwnAccountView:
        with self._db.read() as cur:
            c, island = read_cluster_and_island(cur, cluster_id)
            _, budget = self._spend_guard.window(cur, c, island)
            owing = open_receivables(cur, c.account)
            balance = self._figures.balance(c.account)
            rate = self._rate(cur, c.account)
            hold_since = billing_hold_since(cur, c.account) if balance <= 0 else None
        # ledger units are µUSD per hour × ms: a balance over a rate in µUSD per hour is ms
        runway = None if rate <= 0 else max(0, balance) / rate / MS_PER_HOUR
        return OwnAccountView(
            account=c.account,
            balance_usd=float(units_to_usd(balance)),
            deposit_held_usd=float(units_to_usd(sum(r.deposit_held for r in owing))),
            owed_usd=float(units_to_usd(sum(r.owed for r in owing))),
            owed_by=to_datetime(min(r.due for r in owing)) if owing else None,
            billing_hold_since=maybe_datetime(hold_since),
            spent_24h_usd=float(units_to_usd(budget.spent)),
            committed_usd=float(units_to_usd(budget.committed)),
            rate_usd_per_hour=usd(rate),
            runway_hours=None if runway is None else round(runway, 4),
        )

    def _rate(self, cur: Cursor, account: str) -> int:
        """µUSD per hour the account is billed now (SQL `account_rate`). Each island's instant
        is now, or the last moment its last tick billed up to when its next tick is late:
        between the two the nodes are still held at that rate, billed by the next tick."""
        now = self._clock.now_ns()
        islands = sorted({r["island"] for r in fetch(cur, "account_clusters", account=account)})
        instants = []
        for island in islands:
            billed = self._figures.billed(island)
            instants.append(now if billed is None else min(now, billed.end - NS_PER_MS))
        row = fetch_one(
            cur,
            "account_rate",
            account=account,
            islands=islands,
            instants=instants,
            now=now,
            since=min(instants, default=now),
        )
        return int(row["micros_per_hour"]) if row else 0
