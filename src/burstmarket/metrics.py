"""Every Prometheus metric of the service, what it counts and where it is fed from.

The metrics live in the process's default registry (with prometheus_client's own process and
Python collectors) and `GET /metrics` serves them in the text format. Each is fed at one seam:

- ticks: `on_tick`, a market listener, from each committed tick's event (its number and the
  seconds of its parts, measured by the market); `TICKS_LATE` by the real clock's loop
  (scheduler.py), which is what knows when a run was due;
- requests, and the VM declarations among them: the access log (api/access.py) as each answer
  goes out; refusals by code: market/refusals.py, where every REFUSED line is written;
- the store's writer: its commit time in store/writer.py, its queue depth and the feed's
  subscribers read when scraped (`watch`); slow-consumer closes where the feed closes one;
- the history: the files the exporter writes and the time of its compaction passes.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.exposition import choose_encoder

from burstmarket.events import TickCommitted

disable_created_metrics()  # type: ignore[no-untyped-call]  # a `_created` twin of every counter says nothing a scrape needs

SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Histogram buckets: a millisecond (a declaration's commit) to 30 s (a tick far too slow)."""

TICK_SECONDS = Histogram(
    "burstmarket_tick_duration_seconds",
    "One island's tick, from taking its snapshot to its commit.",
    ["island"],
    buckets=SECONDS,
)
TICK_PART_SECONDS = Histogram(
    "burstmarket_tick_part_duration_seconds",
    "The parts of a tick: read (wait for the snapshot, read the island), clear (the auction "
    "and everything else the tick decides), commit (wait for the writer, one transaction).",
    ["island", "part"],
    buckets=SECONDS,
)
TICK_NUMBER = Gauge("burstmarket_tick", "The island's last committed tick.", ["island"])
TICKS_LATE = Counter(
    "burstmarket_ticks_late",
    "Times the real clock's tick loop fell behind, each also logged: a run (one tick of every "
    "island) started over half an interval late, came due while the last still ran, or "
    "overran its interval.",
)
DECLARES = Counter(
    "burstmarket_declares", "VM declarations accepted (PUT /api/vm/capacity answered 200)."
)
REFUSALS = Counter(
    "burstmarket_refusals",
    "Refusals by error code, of requests, feed messages and ticks (one REFUSED line each).",
    ["code"],
)
REQUESTS = Counter(
    "burstmarket_http_requests",
    "HTTP requests answered, by method, route (its template; `unmatched` for no route) and status.",
    ["method", "route", "status"],
)
REQUEST_SECONDS = Histogram(
    "burstmarket_http_request_duration_seconds",
    "From a request's arrival to the end of its answer.",
    ["method", "route"],
    buckets=SECONDS,
)
WRITER_QUEUE = Gauge(
    "burstmarket_store_writer_queue_depth",
    "Jobs (VM declarations) waiting for the store's group-commit writer.",
)
WRITER_COMMIT_SECONDS = Histogram(
    "burstmarket_store_writer_commit_seconds",
    "One group commit of the store's writer: its jobs and the COMMIT.",
    buckets=SECONDS,
)
SUBSCRIBERS = Gauge("burstmarket_feed_subscribers", "Open websocket connections to the feed.")
SLOW_CONSUMER_CLOSES = Counter(
    "burstmarket_feed_slow_consumer_closes",
    "Feed connections closed 4008 slow-consumer (over their budget of held messages).",
)
HISTORY_FILES = Counter(
    "burstmarket_history_files_written",
    "Parquet parts the history exporter wrote, by table.",
    ["table"],
)
HISTORY_COMPACTION_SECONDS = Histogram(
    "burstmarket_history_compaction_seconds",
    "One compaction pass over an island's history (merging closed days and months).",
    buckets=SECONDS,
)

DECLARE_ROUTE = ("PUT", "/api/vm/capacity")


def on_tick(event: TickCommitted) -> None:
    """A market listener: a committed tick's number and the time of its parts."""
    TICK_NUMBER.labels(event.island).set(event.tick)
    for part, seconds in event.durations.items():
        TICK_PART_SECONDS.labels(event.island, part).observe(seconds)
    if event.durations:
        TICK_SECONDS.labels(event.island).observe(sum(event.durations.values()))


def on_answer(method: str, route: str, status: int, seconds: float) -> None:
    """One HTTP answer has gone out (the access log's seam)."""
    REQUESTS.labels(method, route, str(status)).inc()
    REQUEST_SECONDS.labels(method, route).observe(seconds)
    if status == 200 and (method, route) == DECLARE_ROUTE:
        DECLARES.inc()


def watch(writer_queue: Callable[[], int], subscribers: Callable[[], int]) -> None:
    """Gauges read when scraped, from the running service's store and feed."""
    WRITER_QUEUE.set_function(writer_queue)
    SUBSCRIBERS.set_function(subscribers)


def exposition(accept: str) -> tuple[bytes, str]:
    """Every metric, and the content type: the Prometheus text format, or OpenMetrics for a
    scraper that asks for it (`accept`, the request's Accept header). An Accept whose version
    is not dotted numbers (`version=abc`) gets the text format, as a scraper that sent none
    (docs/api.md "Running it"): prometheus-client compares the version's parts as numbers and
    fails on a word."""
    try:
        encode, content_type = choose_encoder(accept)
    except TypeError:
        encode, content_type = choose_encoder("")
    return encode(REGISTRY), content_type
