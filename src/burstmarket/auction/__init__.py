"""The pure auction engine for one island: `clear(IslandInput) -> Clearing`."""

from burstmarket.auction.clear import clear, price_ladder, with_fixed
from burstmarket.auction.later import LaterRung, Release, later_prices, later_rungs
from burstmarket.auction.types import (
    Clearing,
    ClusterClearing,
    Coalition,
    IslandInput,
    Level,
    Protected,
    Rung,
    Stats,
    Unit,
)

__all__ = [
    "Clearing",
    "ClusterClearing",
    "Coalition",
    "IslandInput",
    "LaterRung",
    "Level",
    "Protected",
    "Release",
    "Rung",
    "Stats",
    "Unit",
    "clear",
    "later_prices",
    "later_rungs",
    "price_ladder",
    "with_fixed",
]
