"""The market's figures kept in memory: each island's last tick and its clusters' rates, each
account's balance, each cluster's spend window (its start and what it has spent since), the
clusters' token hashes and the last order of acceptance given to demand.

They are read from the store once, at start. Each changes only after the rows it follows are
committed, by whoever committed them, still holding the writer (so the next write sees it);
reads take no lock (the API authenticates and declarations check balances from here, on the hot
path).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from burstmarket.market.ledger import BALANCE, SPENT, Billed, Entry
from burstmarket.market.own_ladder import OwnRung
from burstmarket.store.rows import Cursor, fetch, fetch_one


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class LastTick:
    tick: int
    time: int


@dataclass(frozen=True, slots=True)
class Window:
    """A cluster's rolling spend window: its start, and the ledger units billed since."""

    since: int
    units: int


def spent_since(
    cur: Cursor, cluster: str, since: int, window: Window | None, written: Iterable[Entry] = ()
) -> int:
    """What `cluster` has spent since `since`, the start of its open window: the `window` kept
    (`Figures.window`) when it is that one, with the rows `written` in the caller's transaction
    and not committed yet; else (none should be) summed from the ledger as `cur` reads it,
    those rows included."""
    if window is None or window.since != since:
        row = fetch_one(cur, "cluster_spent", cluster=cluster, since=since)
        return int(row["units"]) if row else 0
    mine = (e.units for e in written if e.cluster == cluster and e.kind in SPENT and e.at >= since)
    return window.units + sum(mine)


@dataclass(frozen=True, slots=True)
class OwnLadders:
    """Every cluster's own ladder at an island's last tick, and the market nodes it held then."""

    tick: int
    time: int
    rungs: dict[str, tuple[OwnRung, ...]]
    held: dict[str, int]
    newcomer: dict[str, tuple[OwnRung, ...]]
    """Kind -> the ladder of a cluster of that kind made since the tick."""


class Figures:
    def __init__(self, cur: Cursor, interval_ns: int, started_at: int) -> None:
        """The figures as the store holds them (`cur`, read once)."""
        self.interval_ns = interval_ns
        """Market time between two ticks of an island: what a tick bills in advance."""
        self.started_at = started_at
        """Market time the service started: held time before it is never billed (the market
        was not running; docs/market.md "Billing")."""
        self._last = {
            row["island"]: LastTick(row["tick"], int(row["time_us"]) * 1000)
            for row in fetch(cur, "last_ticks")
        }
        self._rates: dict[str, dict[str, int]] = {}
        for row in fetch(cur, "last_rates"):
            self._rates.setdefault(row["island"], {})[row["cluster"]] = row["rate"]
        balances = fetch(cur, "balances", kinds=list(BALANCE))
        self._balances = {row["account"]: int(row["units"]) for row in balances}
        self._windows = {
            row["cluster"]: Window(row["since"], int(row["units"]))
            for row in fetch(cur, "spend_windows", kinds=list(SPENT))
        }
        """Cluster -> its spend window: a tick reads what it spent from here, as summing the
        ledger over the window (a day of every cluster's billing) took longer than the tick."""
        self._tokens = {row["token_hash"]: row["id"] for row in fetch(cur, "cluster_tokens")}
        self._seq = int(fetch(cur, "demand_seq")[0]["seq"])
        self._own: dict[str, OwnLadders] = {}
        """Island -> its last tick's own ladders: kept in memory only (a start has none until
        the island's next tick)."""

    # --- reads ----------------------------------------------------------------------------

    def last(self, island: str) -> LastTick | None:
        return self._last.get(island)

    def rates(self, island: str) -> dict[str, int]:
        """Cluster -> its rate at the island's last tick (µUSD per GPU-hour); a copy."""
        return dict(self._rates.get(island, {}))

    def rate(self, island: str, cluster: str) -> int | None:
        return self._rates.get(island, {}).get(cluster)

    def own_ladders(self, island: str) -> OwnLadders | None:
        return self._own.get(island)

    def balance(self, account: str) -> int:
        """Credit left in ledger units (at or below zero: billing hold)."""
        return self._balances.get(account, 0)

    def window(self, cluster: str) -> Window | None:
        """The cluster's spend window as last committed (None: it never opened one)."""
        return self._windows.get(cluster)

    def last_seq(self) -> int:
        """The last order of acceptance given: anything written after this reads holding the
        writer is given a later one."""
        return self._seq

    def spend_windows(self) -> dict[str, Window]:
        """Every cluster's spend window (a copy): take it holding the writer, to read it as of
        the same commit as a snapshot taken then."""
        return dict(self._windows)

    def billed(self, island: str) -> Billed | None:
        """How far the island's market billing has gone: the interval its last tick billed in
        advance, [time, time + interval), and nothing before the service started."""
        last = self._last.get(island)
        if last is None:
            return None
        return Billed(last.time, last.time + self.interval_ns, self.started_at)

    def next_tick_time(self, island: str, now: int) -> int:
        """Market time of the island's next tick: `now`, but never within one interval of the
        last tick, so the billed intervals [t, t + interval) never overlap."""
        last = self._last.get(island)
        return now if last is None else max(now, last.time + self.interval_ns)

    def cluster_for_token(self, token: str) -> str | None:
        """The cluster a token belongs to (safe on the event loop)."""
        return self._tokens.get(token_hash(token))

    # --- changes, each after the commit of what it follows ----------------------------------

    def next_seq(self) -> int:
        """The next order of acceptance for a write of demand. Call holding the writer, so
        the order is the order the writes commit in."""
        self._seq += 1
        return self._seq

    def add_token(self, cluster: str, token: str) -> None:
        """A new cluster's token (its row committed)."""
        self._tokens[token_hash(token)] = cluster

    def fold(self, entries: Iterable[Entry]) -> None:
        """Committed ledger rows into the balances and the spend windows."""
        windows = self._windows
        for e in entries:
            if e.kind in BALANCE:
                self._balances[e.account] = self._balances.get(e.account, 0) - e.units
            if e.kind in SPENT and e.cluster is not None:
                window = windows.get(e.cluster)
                if window is not None and e.at >= window.since:
                    windows[e.cluster] = Window(window.since, window.units + e.units)

    def opened(self, since: int, spent: dict[str, int]) -> None:
        """Spend windows a tick opened at `since`, and what each cluster has spent since then as
        the store holds it once the tick committed (the tick's rows and any committed while it
        ran): a window is never carried over from the one before."""
        for cluster, units in spent.items():
            self._windows[cluster] = Window(since, units)

    def ticked(
        self, island: str, last: LastTick, rates: dict[str, int], own: OwnLadders | None = None
    ) -> None:
        """The island's tick committed, with its clusters' rates and own ladders."""
        self._last[island] = last
        self._rates[island] = rates
        if own is not None:
            self._own[island] = own
