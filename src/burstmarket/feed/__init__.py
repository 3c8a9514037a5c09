"""The market-data layer: websocket feed, latest-row and series endpoints, AsyncAPI document.

The market's feed is `feed.build_feed(db, settings)` (feed/feed.py): mount its
`route_handlers`, add its `on_tick` to the tick listeners, and run `start()` / `stop()` in the
lifespan. A feed edge is `edge.Edge` (feed/edge.py). Nothing is imported here, so that an edge
loads neither the store nor DuckDB.
"""
