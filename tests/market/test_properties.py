"""Market invariants on random cases: no node changes hands between equal bids (the pure tick,
windows lapsing, ages and orders of acceptance drawn at random, equal times common), and a
billing report's rows add up exactly to its total (random ledger rows in a real DuckDB file)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.clock import NS_PER_MS, NS_PER_S
from burstmarket.market.desks.billing_desk import GRANULARITIES, billing_rows
from burstmarket.market.model import Cluster, Island, Tranche
from burstmarket.market.tick import TickInput, run_tick
from burstmarket.store import Database
from tests.conftest import examples
from tests.constants import T0, USD
from tests.market.test_tick import G, nodes

TICK_NS = 20 * 60 * NS_PER_S
"""20-minute ticks: a VM window (1 h) lapses every third tick."""
LEDGER_UNITS_PER_USD = Decimal(3_600_000_000_000)


@st.composite
def equal_bids(draw: st.DrawFn) -> tuple[int, list[tuple[int, Cluster]]]:
    """An island and VM clusters all at one price: each joins at some tick, its declaration
    made of tranches whose times and orders of acceptance often tie."""
    size = draw(st.integers(1, 5))
    seq = itertools.count(1)
    clusters = []
    for i in range(draw(st.integers(2, 5))):
        joins = draw(st.integers(0, 3))
        tranches = []
        for _ in range(draw(st.integers(1, 2))):
            since = T0 + joins * TICK_NS - draw(st.sampled_from([0, 1]))  # equal times: common
            tranches.append(Tranche(draw(st.integers(1, 2)), since, next(seq)))
        tranches.sort(key=lambda t: (t.since, t.seq))
        gpus = sum(t.nodes for t in tranches) * G
        c = Cluster(f"c{i}", "acct", "i", "vm", gpus, 3 * USD, tranches, None, None, None, None)
        clusters.append((joins, c))
    return size, clusters


@settings(max_examples=examples(150), deadline=None)
@given(case=equal_bids(), ticks=st.integers(4, 12))
def test_no_node_changes_hands_between_equal_bids(
    case: tuple[int, list[tuple[int, Cluster]]], ticks: int
) -> None:
    size, joining = case
    island = nodes(size)
    holder: dict[str, str] = {}
    for tick in range(ticks):
        present = {c.id: c for joins, c in joining if joins <= tick}
        run_tick(
            TickInput(
                island=Island("i", G, size, USD, None),
                tick=tick + 1,
                time=T0 + tick * TICK_NS,
                interval_ns=TICK_NS,
                clusters=present,
                nodes=island,
                jobs=[],
                balances={"acct": 10**30},
                spent={},
                rates={},
            )
        )
        for n in island:
            if n.cluster is None:
                assert n.id not in holder, (tick, n.id)  # no node goes back to the island
                continue
            assert holder.setdefault(n.id, n.cluster) == n.cluster, (tick, n.id, holder)


_CLUSTER = itertools.count()
MINUTE = 60 * NS_PER_S

ledger_rows = st.lists(
    st.tuples(
        st.sampled_from(["charge", "refund", "hold", "base_load"]),
        st.integers(0, 6 * 60),  # start, minutes after T0
        st.integers(1, 90 * 60 * 1000),  # length, ms
        st.sampled_from([8, 16, -8]),  # GPUs (negative: undone, as a refund)
        st.integers(1, 30_000).map(lambda k: k * 100),  # a rate on the grid, µUSD per GPU-hour
    ),
    min_size=1,
    max_size=25,
)


@pytest.fixture(scope="module")
def report_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    db = Database(tmp_path_factory.mktemp("report") / "market.duckdb")
    yield db
    db.close()


def _shown(value: float) -> Decimal:
    return Decimal(repr(value))  # the figure as the JSON shows it


@settings(max_examples=examples(80), deadline=None)
@given(
    rows=ledger_rows,
    granularity=st.sampled_from(sorted(GRANULARITIES)),
    window=st.tuples(st.integers(-60, 400), st.integers(1, 600)),
)
def test_a_reports_rows_sum_to_its_total(
    report_db: Database,
    rows: list[tuple[str, int, int, int, int]],
    granularity: str,
    window: tuple[int, int],
) -> None:
    cluster = f"c{next(_CLUSTER)}"
    start = T0 + window[0] * MINUTE
    end = start + window[1] * MINUTE
    exact = gpu_ms = 0
    with report_db.write() as cur:
        for kind, begins, length, gpus, rate in rows:
            lo = T0 + begins * MINUTE
            hi = lo + length * NS_PER_MS
            cur.execute(
                "INSERT INTO ledger (ts, account, cluster, kind, period_start, period_end, gpus, "
                "gpu_ms, rate, units) VALUES ($lo, 'acct', $cluster, $kind, $lo, $hi, $gpus, "
                "$gpu_ms, $rate, $units)",
                {
                    "cluster": cluster,
                    "kind": kind,
                    "lo": lo,
                    "hi": hi,
                    "gpus": gpus,
                    "gpu_ms": gpus * length,
                    "rate": rate,
                    "units": rate * gpus * length,
                },
            )
            inside = max(0, min(hi, end) - max(lo, start)) // NS_PER_MS
            exact += rate * gpus * inside
            gpu_ms += gpus * inside
    cur = report_db.cursor()
    try:
        report = billing_rows(cur, cluster, start, end, granularity)
    finally:
        cur.close()
    # the buckets hold every billed millisecond of [start, end), exactly
    assert sum(r.amount_units for r in report) == exact
    total = (Decimal(exact) / LEDGER_UNITS_PER_USD).quantize(Decimal("0.000001"), ROUND_HALF_UP)
    hours = (Decimal(gpu_ms) / 3_600_000).quantize(Decimal("0.000001"), ROUND_HALF_UP)
    # what the rows show adds up to the total shown, to the last decimal
    assert sum(_shown(r.amount_usd) for r in report) == total
    assert sum(_shown(r.gpu_hours) for r in report) == hours
    for r in report:  # and each row is within a millionth of its own exact figure
        gap = _shown(r.amount_usd) - Decimal(r.amount_units) / LEDGER_UNITS_PER_USD
        assert abs(gap) < Decimal("0.000001")
