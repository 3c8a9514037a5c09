"""The base load ledger reconciles (a property, on random runs of a real market on a real DuckDB
file): purchases with and without a security deposit, changes of rate, size and end date,
credits, corrections that drive a balance below zero for a day (cancelling its blocks), wires,
jobs on the blocks stepping down into the market, jobs bidding on the market beyond the blocks
and finishing, nodes cordoned and back (charges, holds, refunds), and hourly ticks between them.

After every run, for every account and purchase, the money is checked against a model kept by
the test itself from what it asked for and the rules of docs/market.md "Buying": the deposit
each purchase still holds, what it still owes by wire (wires settle the earliest due first), the
balance (opening credit, credits and wires in; every block's steps, market charges and deposits
held out); every block billed exactly its rate for the time it ran; and the ledger only grew."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from burstmarket.clock import NS_PER_HOUR, NS_PER_MS, NS_PER_S, ManualClock, to_datetime
from burstmarket.contract import (
    BlockChange,
    Credit,
    IslandChange,
    NewAccount,
    NewCluster,
    NewJob,
    NewPurchase,
    OfferGrid,
    PostedCell,
    Wire,
)
from burstmarket.errors import MarketError
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.market import Market
from burstmarket.money import micros_to_decimal
from burstmarket.settings import Settings
from burstmarket.store import Database
from tests.conftest import examples
from tests.constants import USD

pytestmark = pytest.mark.early  # a minute of property examples: handed out first

UNITS = 3_600_000  # ledger units per µUSD
SUNDAY = 1_900_000_000 * NS_PER_S  # the start (2030-03-17), so a due date is some days out
G = 8
CLUSTERS = ("x-1", "y-1", "x-2")
CELLS = [  # (GPUs, hours, USD per GPU-hour): the long ones cost over 10,000 USD
    (8, 1, 2.0),
    (16, 2, 1.5),
    (8, 720, 2.0),
    (16, 720, 1.5),
    (24, 720, 1.0),
]


@dataclass
class Purchase:
    account: str
    deposit: int  # ledger units held now
    owed: int
    due: int


@dataclass
class Model:
    """What the test expects of the money, kept from its own requests."""

    paid_in: dict[str, int] = field(default_factory=dict)
    """Account -> opening balance, credits and wires (ledger units)."""
    purchases: dict[str, Purchase] = field(default_factory=dict)


actions = st.lists(
    st.one_of(
        st.tuples(st.just("buy"), st.sampled_from(CLUSTERS), st.sampled_from(CELLS)),
        st.tuples(
            st.just("change"),
            st.sampled_from(CLUSTERS),
            st.sampled_from(["rate", "size", "end"]),
            st.integers(1, 3),
        ),
        st.tuples(st.just("credit"), st.sampled_from("xy"), st.sampled_from([-20_000, -500, 800])),
        st.tuples(st.just("wire"), st.sampled_from("xy"), st.sampled_from([1_000, 8_000, 20_000])),
        st.tuples(
            st.just("job"),
            st.sampled_from(CLUSTERS),
            st.integers(1, 3),
            st.sampled_from([None, 2 * USD]),  # no price: the block only; else the market too
        ),
        st.tuples(st.just("finish"), st.sampled_from(CLUSTERS)),
        st.tuples(st.just("node"), st.sampled_from(["market", "block"]), st.booleans()),
        st.tuples(st.just("tick"), st.sampled_from([1, 5, 30])),
        st.tuples(st.just("drain"), st.sampled_from("xy")),
    ),
    min_size=3,
    max_size=10,
)


@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    first=st.lists(st.sampled_from(CELLS), min_size=2, max_size=2),
    steps=actions,
    opening=st.sampled_from([(11_000, 10_500), (25_000, 10_100), (300, 30_000)]),
)
def test_the_ledger_reconciles_with_the_balances_after_any_run(
    tmp_path_factory: Any,
    first: list[tuple[int, int, float]],
    steps: list[tuple[Any, ...]],
    opening: tuple[int, int],
) -> None:
    """Each account's first cluster buys a cell, one job bids beyond its block, then the steps
    run."""
    path: Path = tmp_path_factory.mktemp("ledger")
    market_settings = Settings(clock="manual", data_dir=path, tick_seconds=3600)
    db = Database(market_settings.database_path)
    try:
        buys: list[tuple[Any, ...]] = [
            ("buy", cluster, cell) for cluster, cell in zip(CLUSTERS, first, strict=False)
        ]
        # a job larger than any block: the rest bids on the market (charges from the start)
        market: list[tuple[Any, ...]] = [("job", "x-1", 4, 2 * USD), ("tick", 1)]
        _run(Market(db, ManualClock(SUNDAY), market_settings), buys + market + steps, opening)
    finally:
        db.close()


def _run(market: Market, steps: list[tuple[Any, ...]], opening: tuple[int, int]) -> None:
    operator, tenant = Operator(market), Tenant(market)
    clock = market.clock
    assert isinstance(clock, ManualClock)
    operator.islands.put("p", IslandChange(G, 8, Decimal(1)))
    cells = [PostedCell(size, hours, Decimal(str(rate))) for size, hours, rate in CELLS]
    operator.base_load.post_offers("p", OfferGrid(True, 6, cells))
    model = Model()
    for account, balance in zip("xy", opening, strict=True):
        operator.accounts.create(NewAccount(account, Decimal(balance)))
        model.paid_in[account] = balance * USD * UNITS
    for cluster in CLUSTERS:
        operator.clusters.create(NewCluster(cluster[0], "p", "k8s", cluster))
    ledger = _ledger(market)
    jobs = 0
    for step in steps:
        try:
            match step:
                case ("buy", cluster, (size, hours, _)):
                    block = tenant.base_load.buy(cluster, NewPurchase(size, hours))
                    if block.owed_usd:
                        model.purchases[block.id] = Purchase(
                            cluster[0],
                            _units(block.deposit_usd),
                            _units(block.owed_usd),
                            _ns(block.owed_by),
                        )
                case ("change", cluster, what, amount):
                    live = tenant.base_load.blocks_of(cluster).live
                    if live is None:
                        continue
                    if what == "rate":
                        change = BlockChange(rate_per_gpu_hour=Decimal(amount))
                    elif what == "size":
                        change = BlockChange(nodes=amount)
                    else:
                        end = clock.now_ns() + amount * NS_PER_HOUR + 123 * NS_PER_MS
                        change = BlockChange(ends_at=to_datetime(end).isoformat(), notes="moved")
                    operator.base_load.change(live.id, change)
                case ("credit", account, amount):
                    operator.accounts.credit(account, Credit(Decimal(amount)))
                    model.paid_in[account] += amount * USD * UNITS
                case ("wire", account, amount):
                    operator.accounts.wire(account, Wire(Decimal(amount)))
                    model.paid_in[account] += amount * USD * UNITS
                    _apply_wire(model, account, amount * USD * UNITS)
                case ("job", cluster, nodes, price):
                    jobs += 1
                    limit = None if price is None else micros_to_decimal(price)
                    tenant.jobs.create(cluster, NewJob(f"j{jobs}", nodes, None, limit))
                case ("finish", cluster):
                    # its nodes go idle: held for the minimum hold or the grace, then released
                    running = [j.name for j in tenant.jobs.jobs(cluster) if j.state != "finished"]
                    if running:
                        tenant.jobs.finish(cluster, running[0])
                case ("node", held, back):
                    # a market node out of service stops billing (its interval refunded); a
                    # block's is replaced; either comes back with `back`
                    nodes = _rows(
                        market,
                        "SELECT id FROM nodes WHERE cluster IS NOT NULL AND service IS NULL "
                        "AND (block IS NULL) = ? ORDER BY idx",
                        held == "market",
                    )
                    if nodes:
                        operator.nodes.act("p", nodes[0][0], "cordon")
                        if back:
                            operator.nodes.act("p", nodes[0][0], "uncordon")
                case ("tick", count):
                    _ticks(market, model, count)
                case ("drain", account):
                    # below zero for a day and more: the account's live blocks are cancelled
                    operator.accounts.credit(account, Credit(Decimal(-60_000)))
                    model.paid_in[account] -= 60_000 * USD * UNITS
                    _ticks(market, model, 26)
        except MarketError:
            pass  # a refusal changes nothing (checked below with everything else)
        now = _ledger(market)
        assert now[: len(ledger)] == ledger  # rows are only ever added
        ledger = now
    for (kind,) in _rows(market, "SELECT DISTINCT kind FROM ledger ORDER BY kind"):
        event(f"ledger kind {kind}")
    for (state,) in _rows(market, "SELECT DISTINCT state FROM base_load_blocks ORDER BY state"):
        event(f"a block {state}")
    _reconcile(market, operator, model)


def _ticks(market: Market, model: Model, count: int) -> None:
    clock = market.clock
    assert isinstance(clock, ManualClock)
    for _ in range(count):
        market.tick("p", clock.advance(market.interval_ns))
        _stops(market, model)


def _apply_wire(model: Model, account: str, amount: int) -> None:
    """Wires settle the account's open receivables, the earliest due first; one paid in full
    gives its deposit back."""
    owing = sorted(
        (p for p in model.purchases.items() if p[1].account == account and p[1].owed > 0),
        key=lambda item: (item[1].due, item[0]),
    )
    for _, p in owing:
        paid = min(amount, p.owed)
        amount -= paid
        p.owed -= paid
        if p.owed == 0:
            p.deposit = 0
        if amount == 0:
            return


def _stops(market: Market, model: Model) -> None:
    """A purchase whose last block stopped gives its deposit back; a cancellation also closes
    what it still owed."""
    for purchase, p in model.purchases.items():
        states = _rows(
            market,
            "SELECT state FROM base_load_blocks WHERE purchase = ? "
            "ORDER BY starts_at DESC, id DESC",
            purchase,
        )
        last = states[0][0]
        if last in ("ended", "cancelled"):
            p.deposit = 0
        if last == "cancelled":
            p.owed = 0


def _reconcile(market: Market, operator: Operator, model: Model) -> None:
    for purchase, p in model.purchases.items():
        held, owed = _rows(
            market,
            "SELECT coalesce(sum(units) FILTER (WHERE kind IN ('security_deposit', "
            "'deposit_return')), 0), coalesce(sum(units) FILTER (WHERE kind IN ('receivable', "
            "'wire')), 0) FROM ledger WHERE block = ?",
            purchase,
        )[0]
        assert (int(held), int(owed)) == (p.deposit, p.owed), purchase
    for block, rate, nodes, starts, billed_until, billed in _rows(
        market,
        "SELECT b.id, b.rate, b.nodes, b.starts_at, b.billed_until, coalesce(sum(l.units), 0) "
        "FROM base_load_blocks b LEFT JOIN ledger l ON l.block = b.id AND l.kind = 'base_load' "
        "GROUP BY ALL",
    ):
        ms = (billed_until - starts) // NS_PER_MS
        assert int(billed) == rate * nodes * G * ms, block  # exactly its rate for its time
    for account in "xy":
        market_billed = int(
            _rows(
                market,
                "SELECT coalesce(sum(units), 0) FROM ledger WHERE account = ? "
                "AND kind IN ('charge', 'refund', 'hold')",
                account,
            )[0][0]
        )
        blocks_billed = int(
            _rows(
                market,
                "SELECT coalesce(sum(b.rate * b.nodes * ? * ((b.billed_until - b.starts_at) "
                "// 1000000)), 0) FROM base_load_blocks b JOIN clusters c ON c.id = b.cluster "
                "WHERE c.account = ?",
                G,
                account,
            )[0][0]
        )
        held = sum(p.deposit for p in model.purchases.values() if p.account == account)
        expected = model.paid_in[account] - blocks_billed - market_billed - held
        assert market.figures.balance(account) == expected, account
        answered = operator.accounts.account(account)
        assert _units(answered.balance_usd) == round(expected / UNITS) * UNITS
        owed = sum(p.owed for p in model.purchases.values() if p.account == account)
        assert _units(answered.owed_usd) == round(owed / UNITS) * UNITS


def _units(usd: float) -> int:
    return round(usd * USD) * UNITS


def _ns(at: Any) -> int:
    return int(at.timestamp()) * NS_PER_S


def _ledger(market: Market) -> list[tuple[Any, ...]]:
    return _rows(market, "SELECT id, kind, units FROM ledger ORDER BY id")


def _rows(market: Market, query: str, *params: Any) -> list[tuple[Any, ...]]:
    cur = market.db.cursor()
    try:
        return cur.execute(query, list(params)).fetchall()
    finally:
        cur.close()
