"""A tick's auctions as rows of the `bids` table, and back (docs/history.md "The record").

`bid_batch` is the tick's side: the auction it cleared (`now`) and the one its ladders priced
(`next`), each part a row, prices as exact USD per GPU-hour. `read_auctions` is the other way,
from rows read out of the history with prices as integer µUSD and times as market ns (what
`burstmarket verify` and a backtest feed the engine): it gives back the same `AuctionRecord`s,
so the engine runs on exactly what the tick ran on. A unit's `since` comes back as its place in
the age order: the auction only ever sorts units by it (auction/clear.py), and the tick gave
them in that order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from burstmarket.auction import IslandInput, Protected, Release, Unit
from burstmarket.clock import to_datetime
from burstmarket.market.tables import BIDS, USD
from burstmarket.market.tick.types import AuctionRecord, StepDown
from burstmarket.store.table import scaled_decimals

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


def bid_batch(
    island: str, tick: int, time: datetime, now: AuctionRecord, coming: AuctionRecord
) -> pa.Table:
    """Every part of the tick's two auctions, as the store and the history keep them: a batch
    of `bids` built column by column (a tick records thousands of units)."""
    parts = _Parts()
    for which, record in ((NOW, now), (NEXT, coming)):
        parts.add(which, record)
    n = len(parts.part)
    return BIDS.from_columns(
        {
            "island": [island] * n,
            "tick": [tick] * n,
            "time": [time] * n,
            "auction": parts.auction,
            "part": parts.part,
            "cluster": parts.cluster,
            "unit": parts.unit,
            "nodes": parts.nodes,
            "price": scaled_decimals(parts.price, USD),
            "age": parts.age,
            "ends_at": parts.ends_at,
            "locked_by_clearing": parts.locked_by_clearing,
            "gpus_per_node": parts.gpus_per_node,
        }
    )


@dataclass(slots=True)
class _Parts:
    """The `bids` columns of the parts gathered so far (prices in µUSD)."""

    auction: list[str] = field(default_factory=list)
    part: list[str] = field(default_factory=list)
    cluster: list[str | None] = field(default_factory=list)
    unit: list[str | None] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    price: list[int | None] = field(default_factory=list)
    age: list[int | None] = field(default_factory=list)
    ends_at: list[datetime | None] = field(default_factory=list)
    locked_by_clearing: list[bool | None] = field(default_factory=list)
    gpus_per_node: list[int | None] = field(default_factory=list)

    def add(self, which: str, record: AuctionRecord) -> None:
        a = record.auction
        self.row(which, SUPPLY, None, a.nodes, a.reserve_price, gpus_per_node=a.gpus_per_node)
        self.units(which, UNIT, a.units, None)
        for p in a.protected:
            self.row(which, PROTECTED, p.cluster, p.nodes, p.locked_price)
        for d in record.step_downs:
            self.row(which, STEP_DOWN, d.cluster, d.nodes, d.locked_price, d.locked_by_clearing)
        for r in record.releases:
            at = to_datetime(r.at)
            self.row(which, RELEASE, None, r.nodes, None, ends_at=at)
            self.units(which, RELEASE_UNIT, r.units, at)

    def row(
        self,
        which: str,
        part: str,
        cluster: str | None,
        nodes: int,
        price: int | None,
        locked_by_clearing: bool | None = None,
        *,
        ends_at: datetime | None = None,
        gpus_per_node: int | None = None,
    ) -> None:
        """One part that is no unit."""
        self.auction.append(which)
        self.part.append(part)
        self.cluster.append(cluster)
        self.unit.append(None)
        self.nodes.append(nodes)
        self.price.append(price)
        self.age.append(None)
        self.ends_at.append(ends_at)
        self.locked_by_clearing.append(locked_by_clearing)
        self.gpus_per_node.append(gpus_per_node)

    def units(self, which: str, part: str, units: Sequence[Unit], at: datetime | None) -> None:
        """Units in their age order, each with its place in it as its age."""
        k = len(units)
        self.auction += [which] * k
        self.part += [part] * k
        self.cluster += [u.cluster for u in units]
        self.unit += [u.id for u in units]
        self.nodes += [u.nodes for u in units]
        self.price += [u.price for u in units]
        self.age += range(k)
        self.ends_at += [at] * k
        self.locked_by_clearing += [None] * k
        self.gpus_per_node += [None] * k


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
