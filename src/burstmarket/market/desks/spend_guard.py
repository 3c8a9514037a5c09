"""The spend guard at write time, in one place (docs/market.md "Spend guard"): a cluster's
dollar limit per rolling 24 hours (read and set), and the checks every request that asks the
market for more passes before it is written: the account's balance (`billing-hold`), a price
the reserve never lets clear (`bid-too-low`), and the worst case of the demand against what is
left of the limit (`spend-limit`). The arithmetic is market/guard.py's, which the tick's own
checks share (market/tick/)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from burstmarket.clock import maybe_datetime
from burstmarket.contract import SpendLimitChange, SpendLimitView
from burstmarket.errors import BidTooLow, BillingHold, Invalid, SpendLimit
from burstmarket.market.desks.inputs import amount
from burstmarket.market.figures import spent_since
from burstmarket.market.guard import Budget, outstanding, window_open, worst_case
from burstmarket.market.kinds import KINDS
from burstmarket.market.ledger import COMMITMENT, Entry
from burstmarket.market.lookups import cluster_nodes, read_cluster, read_cluster_and_island
from burstmarket.market.market import Market
from burstmarket.market.model import Cluster, Island, Node
from burstmarket.money import maybe_usd, units_to_usd, usd
from burstmarket.store.rows import Cursor, run

Holdings = Callable[[], list[Node]]
"""The nodes a cluster holds, read only when a check needs them (it has a spend limit)."""


class SpendGuard:
    def __init__(self, market: Market) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures
        self._hot = market.hot

    # --- the limit: GET and PUT /api/spend-limit ------------------------------------------

    def limit(self, cluster_id: str) -> SpendLimitView:
        with self._db.read() as cur:
            c, island = read_cluster_and_island(cur, cluster_id)
            started, budget = self.window(cur, c, island)
        return _limit_view(c, started, budget)

    def set_limit(self, cluster_id: str, change: SpendLimitChange) -> SpendLimitView:
        usd_per_day = _usd_per_day(change)
        with self._lock, self._db.write() as cur:
            c = read_cluster(cur, cluster_id)
            run(cur, "update_spend_limit", id=c.id, spend_limit=usd_per_day)
        return self.limit(cluster_id)

    def window(self, cur: Cursor, c: Cluster, island: Island) -> tuple[int | None, Budget]:
        """The cluster's spend window now: when it started (None: no spend in the last 24 h)
        and its budget. The window runs from the first spend whether or not a limit is set,
        so what it reads is the same with a limit and without (docs/market.md "Spend guard")."""
        now = self._clock.now_ns()
        budget = self.budget(cur, c, island.gpus_per_node, now, cluster_nodes(cur, c.id))
        started = c.spend_window_start if window_open(c.spend_window_start, now) else None
        return started, budget

    # --- the checks -----------------------------------------------------------------------

    def budget(
        self,
        cur: Cursor,
        c: Cluster,
        g: int,
        now: int,
        nodes: list[Node],
        written: Iterable[Entry] = (),
    ) -> Budget:
        """What the cluster spent in its window, and what its held `nodes` still commit.
        `written`: ledger rows the caller's transaction wrote and has not committed yet."""
        since = c.spend_window_start
        if since is None or not window_open(since, now):
            spent = 0
        else:
            spent = spent_since(cur, c.id, since, self._figures.window(c.id), written)
        # the last tick billed its interval in advance: that part is spent, not committed
        billed = self._figures.billed(c.island)
        since = now if billed is None else max(now, billed.end)
        committed = outstanding(nodes, g, since)
        return Budget.of(c.spend_limit, spent, committed)

    def check_new_demand(
        self,
        cur: Cursor,
        c: Cluster,
        island: Island,
        price: int | None,
        gpus: int,
        now: int,
        nodes: Holdings,
        raised: int = 0,
        on_block: bool = False,
    ) -> None:
        """The write-time checks on demand that asks the market for more: `gpus` more at
        `price`, and `raised` more committed for the nodes the cluster holds. Demand its live
        block can hold (`on_block`) needs no balance: block work is paid for with the block."""
        balance = self._figures.balance(c.account)
        if balance <= 0 and not on_block:
            raise BillingHold(
                "the account's balance is at or below zero: new demand is refused until "
                "it is restored",
                cluster=c.id,
                account=c.account,
                balance_usd=float(units_to_usd(balance)),
            )
        self.check_bid(c, island, price)
        if price is not None:
            worst = worst_case(price, gpus, KINDS[c.kind].grant_span_ns)
            self.check_spend(cur, c, island, worst + raised, now, nodes)

    def check_spend(
        self, cur: Cursor, c: Cluster, island: Island, worst: int, now: int, nodes: Holdings
    ) -> None:
        """`worst` more committed must fit what is left of the cluster's spend limit."""
        if c.spend_limit is None or not worst:
            return
        held = nodes()  # a VM batch writes what it staged first (market/hot.py)
        budget = self.budget(cur, c, island.gpus_per_node, now, held, self._hot.written())
        if not budget.fits(worst):
            raise SpendLimit(
                "the worst case of this demand does not fit what is left of the spend limit",
                cluster=c.id,
                worst_case_usd=float(units_to_usd(worst)),
                left_usd=float(units_to_usd(budget.left or 0)),
                over_by_usd=float(units_to_usd(budget.over_by or 0)),
                usd_per_day=usd(c.spend_limit),
            )

    def check_bid(self, c: Cluster, island: Island, price: int | None, **figures: Any) -> None:
        """A price under the island's reserve can never clear."""
        if price is not None and price < island.reserve_price:
            raise BidTooLow(
                f"{usd(price)} USD per GPU-hour is under the reserve price "
                f"{usd(island.reserve_price)}: it can never clear",
                cluster=c.id,
                **figures,
                price_per_gpu_hour=usd(price),
                reserve_price=usd(island.reserve_price),
            )


def recommitted(
    c: Cluster, nodes: list[Node], raised: list[int], price: int, now: int
) -> tuple[list[Node], list[Entry]]:
    """A cap raised to `price` commits what it adds (`raised`, per node of `nodes`, from
    guard.outgrown) for the rest of their spans: the nodes it changes, and the ledger row."""
    grown = [n for n, extra in zip(nodes, raised, strict=True) if extra]
    for n in grown:
        n.commit_price = price
    entry = Entry(
        at=now,
        account=c.account,
        kind=COMMITMENT,
        units=sum(raised),
        cluster=c.id,
        island=c.island,
        gpus=0,
    )
    return grown, [entry]


def _usd_per_day(change: SpendLimitChange) -> int | None:
    if change.usd_per_day is None:
        return None
    usd_per_day = amount("usd_per_day", change.usd_per_day)
    if usd_per_day <= 0:
        raise Invalid("usd_per_day", "must be greater than 0 (null removes the limit)")
    return usd_per_day


def _limit_view(c: Cluster, started: int | None, budget: Budget) -> SpendLimitView:
    left, over_by = budget.left, budget.over_by
    return SpendLimitView(
        usd_per_day=maybe_usd(c.spend_limit),
        window_started_at=maybe_datetime(started),
        spent_usd=float(units_to_usd(budget.spent)),
        committed_usd=float(units_to_usd(budget.committed)),
        left_usd=None if left is None else float(units_to_usd(left)),
        over_by_usd=None if over_by is None else float(units_to_usd(over_by)),
    )
