"""A tick's auctions as rows of the `bids` table, and back (docs/history.md "The record").

`bid_rows` is the tick's side: the auction it cleared (`now`) and the one its ladders priced
(`next`), each part a row, prices as exact USD per GPU-hour. `read_auctions` is the other way,
from rows read out of the history with prices as integer µUSD and times as market ns (what
`burstmarket verify` and a backtest feed the engine): it gives back the same `AuctionRecord`s,
so the engine runs on exactly what the tick ran on. A unit's `since` comes back as its place in
the age order: the auction only ever sorts units by it (auction/clear.py), and the tick gave
them in that order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from burstmarket.auction import IslandInput, Protected, Release, Unit
from burstmarket.clock import to_datetime
from burstmarket.market.tables import BidRow
from burstmarket.market.tick.types import AuctionRecord, StepDown
from burstmarket.money import micros_to_decimal

NOW = "now"
"""The auction the tick cleared."""
NEXT = "next"
"""The auction the next tick would run if nothing else changed: what the ladders price."""

SUPPLY, UNIT, PROTECTED, STEP_DOWN, RELEASE, RELEASE_UNIT = (
    "supply",
    "unit",
    "protected",
    "step_down",
    "release",
    "release_unit",
)


def bid_rows(
    island: str, tick: int, time: datetime, now: AuctionRecord, coming: AuctionRecord
) -> list[BidRow]:
    """Every part of the tick's two auctions, as the store and the history keep them."""
    rows: list[BidRow] = []
    for which, record in ((NOW, now), (NEXT, coming)):
        parts = _parts(record)
        rows += [BidRow(island, tick, time, which, *part) for part in parts]
    return rows


_Part = tuple[
    str,
    str | None,
    str | None,
    int,
    Decimal | None,
    int | None,
    datetime | None,
    bool | None,
    int | None,
]
"""A row's part, cluster, unit, nodes, price, age, ends_at, locked_by_clearing, gpus_per_node."""


def _parts(record: AuctionRecord) -> list[_Part]:
    a = record.auction
    out: list[_Part] = [
        (SUPPLY, None, None, a.nodes, _usd(a.reserve_price), None, None, None, a.gpus_per_node)
    ]
    for age, u in enumerate(a.units):
        out.append((UNIT, u.cluster, u.id, u.nodes, _usd(u.price), age, None, None, None))
    for p in a.protected:
        out.append(
            (PROTECTED, p.cluster, None, p.nodes, _usd(p.locked_price), None, None, None, None)
        )
    for d in record.step_downs:
        fresh = d.locked_by_clearing
        out.append(
            (STEP_DOWN, d.cluster, None, d.nodes, _usd(d.locked_price), None, None, fresh, None)
        )
    for r in record.releases:
        at = to_datetime(r.at)
        out.append((RELEASE, None, None, r.nodes, None, None, at, None, None))
        for age, u in enumerate(r.units):
            out.append((RELEASE_UNIT, u.cluster, u.id, u.nodes, _usd(u.price), age, at, None, None))
    return out


def _usd(micros: int) -> Decimal:
    return micros_to_decimal(micros)


def read_auctions(rows: Iterable[Mapping[str, Any]]) -> dict[str, AuctionRecord]:
    """One tick's auctions by name (`now`, `next`) from its `bids` rows in any order, each with
    `price` in integer µUSD (NULL: None) and `ends_at` in market ns."""
    parts: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for r in rows:
        parts.setdefault(r["auction"], {}).setdefault(r["part"], []).append(r)
    return {which: _record(found) for which, found in parts.items()}


def _record(found: dict[str, list[Mapping[str, Any]]]) -> AuctionRecord:
    (supply,) = found[SUPPLY]
    units = sorted(found.get(UNIT, []), key=lambda r: r["age"])
    protected = sorted(found.get(PROTECTED, []), key=lambda r: (r["cluster"], r["price"]))
    step_downs = sorted(
        found.get(STEP_DOWN, []),
        key=lambda r: (r["cluster"], r["price"], r["locked_by_clearing"]),
    )
    releases: dict[int, list[Mapping[str, Any]]] = {}
    for r in found.get(RELEASE_UNIT, []):
        releases.setdefault(r["ends_at"], []).append(r)
    auction = IslandInput(
        nodes=supply["nodes"],
        gpus_per_node=supply["gpus_per_node"],
        reserve_price=supply["price"],
        units=tuple(_unit(r) for r in units),
        protected=tuple(Protected(r["cluster"], r["nodes"], r["price"]) for r in protected),
    )
    return AuctionRecord(
        auction,
        tuple(
            StepDown(r["cluster"], r["nodes"], r["price"], bool(r["locked_by_clearing"]))
            for r in step_downs
        ),
        tuple(
            Release(
                r["ends_at"],
                r["nodes"],
                tuple(_unit(u) for u in sorted(releases.get(r["ends_at"], []), key=_age)),
            )
            for r in sorted(found.get(RELEASE, []), key=lambda r: r["ends_at"])
        ),
    )


def _age(r: Mapping[str, Any]) -> int:
    return int(r["age"])


def _unit(r: Mapping[str, Any]) -> Unit:
    return Unit(r["unit"], r["cluster"], r["nodes"], r["price"], r["age"])
