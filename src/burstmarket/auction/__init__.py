"""The pure auction engine for one island: `clear(IslandInput) -> Clearing`."""

from burstmarket.auction.clear import clear
from burstmarket.auction.types import (
    Clearing,
    ClusterClearing,
    IslandInput,
    Protected,
    Rung,
    Stats,
    Unit,
)

__all__ = [
    "Clearing",
    "ClusterClearing",
    "IslandInput",
    "Protected",
    "Rung",
    "Stats",
    "Unit",
    "clear",
]
