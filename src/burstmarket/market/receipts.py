"""Receipts (docs/market.md "Receipts"): what a tick billed each cluster for its market nodes,
split into the parts of its payment, with the demand behind each as price levels × nodes.

`receipts` is the tick's side, pure: one `Receipt` per cluster in the clearing, its parts in
ledger units adding up exactly to the tick's charge for the interval (rate × GPUs × ms, as
market/tick/billing.py bills it). `receipt_view` is the one wire shape of a stored receipt, for
`GET /api/receipts` and the cluster's private feed channel alike.

Rounding: the engine's parts are exact µUSD per hour and add up to the cluster's payment; the
tick bills its rate, the payment per GPU rounded to the µUSD, so rate × GPUs differs from the
payment by under half a µUSD per GPU-hour. That difference goes to the largest part (the first
of reserve, displaced, core, protected on a tie), which is never smaller than it. Shown in USD,
the parts are rounded by largest remainder so that they add up to the amount shown
(`money.apportion`, as the billing report's rows do).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from burstmarket.auction import Clearing, ClusterClearing, Level
from burstmarket.clock import NS_PER_MS
from burstmarket.contract import CoreAddition, PriceLevel, ReceiptParts, ReceiptUnits, ReceiptView
from burstmarket.money import LEDGER_UNITS_PER_MICRO, apportion, micros_to_decimal, usd

PARTS = ("reserve", "displaced", "core", "protected")


@dataclass(frozen=True, slots=True)
class Receipt:
    """One cluster's receipt for one tick, as the store keeps it (table `receipts`). Amounts in
    ledger units (money.py); price levels as `{"price": µUSD per GPU-hour, "nodes": n}`."""

    island: str
    tick: int
    time: datetime
    cluster: str
    nodes: int
    gpus: int
    rate: Decimal
    amount: int
    reserve: int
    displaced: int
    core: int
    protected: int
    displaced_levels: list[dict[str, int]]
    coalition: list[dict[str, int]] | None
    """None when the core added nothing."""
    coalition_value: int | None
    """µUSD per hour over the reserve: what the coalition offers (core.py's β_T)."""
    protected_levels: list[dict[str, int]]
    capped: bool


def receipts(
    island: str, tick: int, time: datetime, clearing: Clearing, reserve: int, g: int, span_ns: int
) -> list[Receipt]:
    """A receipt for every cluster holding market nodes, its charge over `span_ns`."""
    ms = span_ns // NS_PER_MS
    out = []
    for cid, cc in clearing.clusters.items():
        parts = _hourly(cc, reserve, g)
        billed = cc.rate * cc.gpus
        largest = max(range(len(parts)), key=lambda i: (parts[i], -i))
        parts[largest] += billed - sum(parts)
        reserve_part, displaced, core, protected = (p * ms for p in parts)
        out.append(
            Receipt(
                island=island,
                tick=tick,
                time=time,
                cluster=cid,
                nodes=cc.nodes,
                gpus=cc.gpus,
                rate=micros_to_decimal(cc.rate),
                amount=billed * ms,
                reserve=reserve_part,
                displaced=displaced,
                core=core,
                protected=protected,
                displaced_levels=_levels(cc.displaced),
                coalition=None if cc.coalition is None else _levels(cc.coalition.levels),
                coalition_value=None if cc.coalition is None else cc.coalition.value,
                protected_levels=_levels(cc.protected_displaced),
                capped=cc.capped,
            )
        )
    return out


def _hourly(cc: ClusterClearing, reserve: int, g: int) -> list[int]:
    """The payment's parts, µUSD per hour: r·K·g, VCG above it, the core above VCG, and the
    protected nodes' payment."""
    if not cc.won_nodes:
        return [0, 0, 0, cc.protected]
    floor = reserve * cc.won_nodes * g
    return [floor, cc.vcg - floor, cc.core - cc.vcg, cc.protected]


def _levels(levels: tuple[Level, ...]) -> list[dict[str, int]]:
    return [{"price": level.price, "nodes": level.nodes} for level in levels]


def receipt_view(row: Receipt | dict[str, Any]) -> ReceiptView:
    """A stored receipt (the dataclass, or a `receipts` row read by name) on the wire."""
    r = row if isinstance(row, dict) else _fields(row)
    amount = int(r["amount"])
    shown = apportion([int(r[p]) for p in PARTS], LEDGER_UNITS_PER_MICRO)
    coalition = r["coalition"]
    return ReceiptView(
        tick=int(r["tick"]),
        time=r["time"],
        nodes=int(r["nodes"]),
        gpus=int(r["gpus"]),
        rate=float(r["rate"]),
        amount_usd=sum(shown) / 1_000_000,
        amount_units=amount,
        parts=ReceiptParts(**{p: m / 1_000_000 for p, m in zip(PARTS, shown, strict=True)}),
        parts_units=ReceiptUnits(**{p: int(r[p]) for p in PARTS}),
        displaced=_wire(r["displaced_levels"]),
        core=None
        if coalition is None
        else CoreAddition(coalition=_wire(coalition), value=usd(int(r["coalition_value"]))),
        protected_displaced=_wire(r["protected_levels"]),
        capped=bool(r["capped"]),
    )


def _fields(row: Receipt) -> dict[str, Any]:
    return {name: getattr(row, name) for name in Receipt.__dataclass_fields__}


def _wire(levels: list[dict[str, int]]) -> list[PriceLevel]:
    return [PriceLevel(price=usd(int(x["price"])), nodes=int(x["nodes"])) for x in levels]
