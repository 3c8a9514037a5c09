"""What the market tells the rest of the process after a tick is committed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from burstmarket.contract import ClusterTickView, FeedRow, LadderView, TickStats


@dataclass(frozen=True, slots=True)
class TickCommitted:
    """One island's tick, durable in the store. Published only after the transaction commits.

    `stats` and `ladder` are the rows of docs/api.md `GET /api/market/stats` and
    `GET /api/market/ladder` (USD floats at the display edge), published live by the feeds
    whose row they are (feed/feed.py).
    """

    island: str
    tick: int
    time: datetime
    stats: TickStats
    ladder: LadderView
    clusters: tuple[ClusterTickView, ...] = ()
    """Each cluster of the island's own row of the tick (market/cluster_ticks.py), for its
    private feed channel only: never published where another cluster could read it."""
    durations: Mapping[str, float] = field(default_factory=dict)
    """Seconds each part of the tick took (`read`, `clear`, `commit`), for metrics.py."""

    @property
    def rows(self) -> tuple[FeedRow, ...]:
        """The feed rows this tick computed, so no feed of theirs reads them back."""
        return (self.stats, self.ladder)
