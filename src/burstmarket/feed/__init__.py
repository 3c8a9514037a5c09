"""The market-data layer: websocket feed, latest-row and series endpoints, AsyncAPI document.

Wiring (the service's `create_app`): `feed = build_feed(db, settings)`, mount
`feed.route_handlers`, add `feed.on_tick` to the tick listeners, and run `feed.start()` /
`feed.stop()` in the lifespan.
"""

from burstmarket.feed.feed import Feed, build_feed
from burstmarket.feed.service import FeedOptions

__all__ = ["Feed", "FeedOptions", "build_feed"]
