"""The daily demand cycle: how busy the tenants are at a given market time."""

from __future__ import annotations

import math
from datetime import datetime

PEAK_HOUR_UTC = 15.0
"""Busiest hour of the day (UTC); the quietest is twelve hours later."""
MEAN = 1.0
SWING = 0.25


def demand_factor(now: datetime) -> float:
    """Between 0.75 and 1.25 of a tenant's typical demand. Tenants' typical demand adds up to
    1.4 times the island's supply, so the market is contested at every hour (prices above the
    reserve) and most contested in the afternoon."""
    hour = now.hour + now.minute / 60 + now.second / 3600
    return MEAN + SWING * math.cos(2 * math.pi * (hour - PEAK_HOUR_UTC) / 24)
