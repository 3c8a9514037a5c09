"""The ledger's check (docs/history.md "The ledger's check"): the recorded ledger against
billing recomputed from the recorded rates, to the ledger unit, from the history alone.

Over a connection where the history's tables are views (history/views.py `history_views`):

- market billing: each tick bills each cluster in `cluster_rates` its interval in advance, one
  `charge` row from the tick's time, of rate × GPUs × tick_seconds; recomputed with the
  ledger's own arithmetic (market/ledger.py `amount`, what the tick's billing writes), every
  recorded rate has its row, every such row its rate, and the units agree;
- every billed row (market, hold, refund, base load) is its own rate × GPUs × interval, and its
  `amount_usd` its units rounded as money.units_to_usd rounds them.

Base load billing is checked row by row only: the history records each `base_load` row's block,
rate, GPUs and 5-minute step, but not the blocks' terms (nodes, rate, start and end), so whether
a block billed every step its term owed cannot be told from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from burstmarket.clock import NS_PER_MS
from burstmarket.market.ledger import BILLED, amount
from burstmarket.money import units_to_usd
from burstmarket.record.difference import Difference
from burstmarket.store.rows import Cursor, fetch_tuples

TABLE = "ledger"


@dataclass(frozen=True, slots=True, order=True)
class _Key:
    island: str
    tick: int
    cluster: str


def check_ledger(
    con: Cursor,
    island: str | None,
    start: datetime | None,
    end: datetime | None,
) -> list[Difference]:
    """What the recorded ledger of `island` (None: every island) in [start, end) (None: open)
    does not share with billing recomputed from the recorded rates, by island and tick."""
    params: dict[str, Any] = {"island": island, "start": start, "end": end}
    return sorted([*_rates_against_charges(con, params), *_rows_against_their_terms(con, params)])


def _rates_against_charges(con: Cursor, params: dict[str, Any]) -> list[Difference]:
    rates = {
        _Key(i, t, c): (rate, gpus, seconds)
        for i, t, c, rate, gpus, seconds in fetch_tuples(con, "record_ledger_rates", params)
    }
    charges: dict[_Key, list[int]] = {}
    for i, t, c, units in fetch_tuples(con, "record_ledger_charges", params):
        charges.setdefault(_Key(i, t, c), []).append(int(units))
    found: list[Difference] = []
    for key in sorted(rates.keys() | charges.keys()):
        recorded = charges.get(key, [])
        if key not in rates:
            what = f"cluster {key.cluster} charged {_units(sum(recorded))} with no recorded rate"
            found.append(Difference(key.island, key.tick, TABLE, what))
            continue
        rate, gpus, seconds = rates[key]
        units = amount(_micros(rate), gpus, int(seconds * 1000) * NS_PER_MS)
        if recorded != [units]:
            shown = " + ".join(_units(u) for u in recorded) or "nothing"
            what = (
                f"cluster {key.cluster} charge: recorded {shown}, re-run {_units(units)} "
                f"({rate} USD/GPU-h × {gpus} GPUs × {seconds} s)"
            )
            found.append(Difference(key.island, key.tick, TABLE, what))
    return found


def _rows_against_their_terms(con: Cursor, params: dict[str, Any]) -> list[Difference]:
    found: list[Difference] = []
    rows = fetch_tuples(con, "record_ledger_billed", {**params, "kinds": list(BILLED)})
    for i, t, when, c, kind, lo, hi, gpus, rate, units, usd in rows:
        # a row no tick wrote (a request's refund) is named by tick 0 and its time
        tick = 0 if t is None else int(t)
        row = f"{kind} row of cluster {c} at {when.isoformat()}"
        exact = amount(_micros(rate), gpus, _span_ns(lo, hi))
        if int(units) != exact:
            what = f"{row}: recorded {_units(int(units))}, re-run {_units(exact)}"
            found.append(Difference(i, tick, TABLE, what))
        if usd != units_to_usd(int(units)):
            what = f"{row}: amount_usd {usd} is not its units {_units(int(units))} rounded"
            found.append(Difference(i, tick, TABLE, what))
    return found


def _micros(usd: Decimal) -> int:
    return int(usd.scaleb(6))


def _span_ns(lo: datetime, hi: datetime) -> int:
    """The interval's length. Market times are whole ms (clock.py), so the history's µs times
    keep them exactly."""
    span = hi - lo
    return (span.days * 86_400_000_000 + span.seconds * 1_000_000 + span.microseconds) * 1000


def _units(units: int) -> str:
    return f"{units} units ({units_to_usd(units)} USD)"
