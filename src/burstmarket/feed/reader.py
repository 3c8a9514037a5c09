"""The feed's reads: a feed's rows for a range of ticks, and how far back a replay may reach
(on the store's one read path, store/reader.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from burstmarket.feed.catalog import FeedSpec
from burstmarket.feed.messages import Row, display
from burstmarket.store import Reader


class FeedReader(Reader):
    def rows(self, spec: FeedSpec, island: str, from_tick: int, to_tick: int) -> list[Row]:
        """The feed's rows for ticks from_tick..to_tick of one island, in tick order."""
        params = {"island": island, "from_tick": from_tick, "to_tick": to_tick}
        channel = spec.channel_for(island)
        return [
            Row(
                channel,
                island,
                tick,
                time,
                dict(zip(spec.fields, display(list(values)), strict=True)),
            )
            for tick, time, *values in self.query(spec.sql, params)
        ]

    def replay_floor(self, island: str, latest: Row, window: timedelta) -> int:
        """The oldest tick `from_tick` may name: the first one inside the replay window."""
        window_start = datetime.fromisoformat(latest.time) - window
        params = {"island": island, "window_start": window_start, "latest_tick": latest.tick}
        ((tick,),) = self.query("feed_replay_floor", params)
        return int(tick)
