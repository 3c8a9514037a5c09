"""What the market tells the rest of the process after a tick is committed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class TickCommitted:
    """One island's tick, durable in the store. Published only after the transaction commits.

    `stats` and `ladder` are JSON-ready dicts in exactly the shapes of docs/api.md
    `GET /api/market/stats` and `GET /api/market/ladder` (USD floats at the display edge).
    """

    island: str
    tick: int
    time: datetime
    stats: dict[str, Any]
    ladder: dict[str, Any]
    durations: Mapping[str, float] = field(default_factory=dict)
    """Seconds each part of the tick took (`read`, `clear`, `commit`), for metrics.py."""
