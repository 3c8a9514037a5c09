"""The JSON face of the engine: `burstmarket clear` input parsed into domain values, and a
clearing rendered in docs/api.md's shapes (also what the service publishes for stats and ladder)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated, Any

import msgspec

from burstmarket.auction import Clearing, IslandInput, Protected, Rung, Stats, Unit
from burstmarket.clock import rfc3339
from burstmarket.contract import LadderLaterView, LadderRungView
from burstmarket.market.ladder import LadderRung
from burstmarket.money import MoneyError, parse_price, usd
from burstmarket.states import LadderReason

Count = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]


class InputError(ValueError):
    """Bad input, with the field it concerns in the message."""


class _Unit(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    cluster: str
    nodes: Positive
    price: Decimal
    since: int | float


class _Protected(msgspec.Struct, forbid_unknown_fields=True):
    cluster: str
    nodes: Positive
    locked_price: Decimal


class _Island(msgspec.Struct, forbid_unknown_fields=True):
    nodes: Count
    gpus_per_node: Positive
    reserve_price: Decimal
    units: list[_Unit] = []
    protected: list[_Protected] = []


def _price(value: Decimal, field: str, *, allow_zero: bool = False) -> int:
    try:
        return parse_price(value, allow_zero=allow_zero)
    except MoneyError as exc:
        raise InputError(f"{field}: {exc}") from None


def parse_island(raw: bytes) -> IslandInput:
    """Decode and check one island instance; raises InputError naming the field."""
    try:
        island = msgspec.json.decode(raw, type=_Island)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise InputError(str(exc)) from None
    seen: set[str] = set()
    units = []
    prices: dict[Decimal, int] = {}  # an island's units share few prices: each parsed once
    for i, u in enumerate(island.units):
        if u.id in seen:
            raise InputError(f"units[{i}].id: duplicate unit id {u.id!r}")
        seen.add(u.id)
        if isinstance(u.since, float) and u.since != u.since:
            raise InputError(f"units[{i}].since: must be a number")
        price = prices.get(u.price)
        if price is None:
            price = prices[u.price] = _price(u.price, f"units[{i}].price")
        units.append(Unit(u.id, u.cluster, u.nodes, price, u.since))
    protected = tuple(
        Protected(p.cluster, p.nodes, _price(p.locked_price, f"protected[{i}].locked_price"))
        for i, p in enumerate(island.protected)
    )
    return IslandInput(
        nodes=island.nodes,
        gpus_per_node=island.gpus_per_node,
        reserve_price=_price(island.reserve_price, "reserve_price", allow_zero=True),
        units=tuple(units),
        protected=protected,
    )


def render_ladder(rungs: Sequence[Rung | LadderRung]) -> list[dict[str, Any]]:
    return [{"nodes": r.nodes, "gpus": r.gpus, "price_per_gpu_hour": usd(r.price)} for r in rungs]


WINDOWS_HOLD: LadderReason = "windows-hold"
"""A later rung's `reason` (sql/feed_ladder.sql says the same code for the ticks it replays)."""


def render_published_ladder(rungs: Sequence[LadderRung]) -> list[LadderRungView]:
    """docs/api.md `GET /api/market/ladder` rungs: the engine's, then the rungs windows hold now."""
    return [
        LadderRungView(
            nodes=r.nodes,
            gpus=r.gpus,
            price_per_gpu_hour=usd(r.price),
            contestable_at=rfc3339(r.contestable_at),
            reason=None if r.contestable_at is None else WINDOWS_HOLD,
            later=[
                LadderLaterView(at=rfc3339(at) or "", price_per_gpu_hour=usd(price))
                for at, price in r.later
            ],
        )
        for r in rungs
    ]


def render_stats(stats: Stats) -> dict[str, Any]:
    def money(value: int | None) -> float | None:
        return None if value is None else usd(value)

    return {
        "vwap": money(stats.vwap),
        "min": money(stats.min),
        "max": money(stats.max),
        "gpus": stats.gpus,
        "clusters": stats.clusters,
    }


def render_clearing(clearing: Clearing) -> dict[str, Any]:
    """docs/api.md `burstmarket clear` output; payments in USD per hour, rates per GPU-hour."""
    return {
        "winners": list(clearing.winners),
        "clusters": {
            name: {
                "nodes": c.nodes,
                "gpus": c.gpus,
                "won_nodes": c.won_nodes,
                "protected_nodes": c.protected_nodes,
                "vcg": usd(c.vcg),
                "core": usd(c.core),
                "protected": usd(c.protected),
                "rate": usd(c.rate),
            }
            for name, c in clearing.clusters.items()
        },
        "ladder": render_ladder(clearing.ladder),
        "stats": {
            **render_stats(clearing.stats),
            "core_rounds": clearing.core_rounds,
            "core_exact": clearing.core_exact,
        },
        "bid_too_low": sorted(clearing.bid_too_low),
    }
