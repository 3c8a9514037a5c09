"""A cluster's bill as rows per time bucket (docs/market.md "Billing"), `GET /api/billing`, and
beside it its receipts, why each tick billed what it did (`GET /api/receipts`).

The sums are exact (ledger units, SQL `billing`); what a row shows is rounded to 6 decimals so
that the rows of a report add up exactly to the report's total, by largest remainder: every row
is rounded down, then the rows that lost the most take one more millionth each until the sum is
the total, itself rounded half away from zero.
"""

from __future__ import annotations

from typing import Literal, cast, get_args

from burstmarket.clock import EARLIEST, LATEST, NS_PER_MS, to_datetime
from burstmarket.contract import BillingRowView, ReceiptView
from burstmarket.errors import Invalid
from burstmarket.market.lookups import read_cluster
from burstmarket.market.market import Market
from burstmarket.market.receipts import receipt_view
from burstmarket.money import LEDGER_UNITS_PER_MICRO, apportion
from burstmarket.states import BillingKind
from burstmarket.store.rows import Cursor, fetch

Granularity = Literal["5m", "1h", "1d"]
GRANULARITIES: dict[Granularity, int] = {
    "5m": 300_000_000_000,
    "1h": 3_600_000_000_000,
    "1d": 86_400_000_000_000,
}
assert tuple(GRANULARITIES) == get_args(Granularity)
RECEIPTS_LIMIT = 1_000
"""Receipts one read gives by default: the newest of the range."""
MAX_RECEIPTS = 10_000
"""Receipts one read may ask for (`limit`)."""


class BillingDesk:
    def __init__(self, market: Market) -> None:
        """The part of `market` it uses (it keeps no reference to it)."""
        self._db = market.db

    def billing(
        self, cluster_id: str, start: int | None, end: int | None, granularity: Granularity
    ) -> list[BillingRowView]:
        """The cluster's rows from `start` to `end` (market nanoseconds; None: unbounded)."""
        with self._db.read() as cur:
            c = read_cluster(cur, cluster_id)
            return billing_rows(cur, c.id, start, end, granularity)

    def receipts(
        self,
        cluster_id: str,
        start: int | None,
        end: int | None,
        tick: int | None,
        limit: int = RECEIPTS_LIMIT,
    ) -> list[ReceiptView]:
        """The cluster's receipts of `tick`, or of the ticks from `start` to `end` (market
        nanoseconds; None: unbounded): the newest `limit`, oldest first."""
        if tick is not None and (start is not None or end is not None):
            raise Invalid("tick", "give a tick or a range of times, not both")
        low = EARLIEST if start is None else to_datetime(start)
        high = LATEST if end is None else to_datetime(end)
        if low >= high:
            raise Invalid(
                "start", "must be before end", start=low.isoformat(), end=high.isoformat()
            )
        with self._db.read() as cur:
            c = read_cluster(cur, cluster_id)
            rows = fetch(
                cur,
                "receipts",
                cluster=c.id,
                tick=tick,
                start=low,
                end=high,
                limit=limit,
            )
        return [receipt_view(r) for r in rows]


def billing_rows(
    cur: Cursor, cluster: str, start: int | None, end: int | None, granularity: Granularity
) -> list[BillingRowView]:
    width = GRANULARITIES[granularity]
    # market times are whole milliseconds: so are the bounds a report is cut at
    low = -(2**62) if start is None else start - start % NS_PER_MS
    high = 2**62 if end is None else end - end % NS_PER_MS
    rows = fetch(cur, "billing", cluster=cluster, width=width, start=low, end=high)
    units = [int(r["units"]) for r in rows]
    micros = apportion(units, LEDGER_UNITS_PER_MICRO)
    # a millionth of a GPU-hour is 3.6 GPU-milliseconds: 18 per 5 GPU-ms
    hours = apportion([int(r["gpu_ms"]) * 5 for r in rows], 18)
    return [
        BillingRowView(
            start=to_datetime(int(r["bucket"])),
            end=to_datetime(int(r["bucket"]) + width),
            gpu_hours=hours[i] / 1_000_000,
            amount_usd=micros[i] / 1_000_000,
            amount_units=units[i],
            kind=cast(BillingKind, r["kind"]),
        )
        for i, r in enumerate(rows)
    ]
