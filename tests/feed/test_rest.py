"""The REST side of the market data: latest rows per feed, candles, the AsyncAPI document."""

from __future__ import annotations

import csv
import io
import time
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from msgspec import to_builtins

from burstmarket.events import TickCommitted
from burstmarket.history.layout import exported_through
from tests.feed.support import START, FeedServer, MarketDB

SIX = Decimal("0.000001")
EXPORT_SECONDS = 120
"""How long the service's exporter may take to write closed windows: well under a second on a
quiet host, far longer beside other work."""


def get(server: FeedServer, path: str, **params: Any) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", params=params, timeout=10)


def test_latest_stats_and_ladder_from_memory_and_after_a_restart_from_the_store(
    market: MarketDB, tmp_path: Path
) -> None:
    with FeedServer(market, tmp_path) as server:
        event = server.tick(
            "east", 1, holdings={"a": (8, "2.0001")}, ladder=["2.0001", "2.5", "3"], pending=16
        )
        live_stats = get(server, "/api/market/stats", island="east").json()
        live_ladder = get(server, "/api/market/ladder", island="east").json()
        assert live_stats == to_builtins(event.stats)
        assert live_ladder == to_builtins(event.ladder)
        trimmed = get(server, "/api/market/ladder", island="east", max_nodes=2).json()
        assert trimmed == {
            **to_builtins(event.ladder),
            "rungs": to_builtins(event.ladder.rungs[:2]),
        }
        assert get(server, "/api/market/ladder", island="east", max_nodes=0).json()["rungs"] == []
    # A new process knows nothing in memory: the same answers come from DuckDB.
    with FeedServer(market, tmp_path) as server:
        assert get(server, "/api/market/stats", island="east").json() == live_stats
        assert get(server, "/api/market/ladder", island="east").json() == live_ladder
        rates = get(server, "/api/market/rates", island="east").json()
        assert rates["rates"] == [{"gpus": 8, "rate": 2.0001}]


def test_rates_answer_the_tick_just_committed_before_its_read_back(server: FeedServer) -> None:
    """The rates row is read back from the store after the commit (no tick carries it); a REST
    answer in between must be the committed tick's, not the one before it held in memory."""
    server.tick("east", 1, holdings={"a": (8, "2.0001")})
    before = get(server, "/api/market/rates", island="east")
    assert before.json()["tick"] == 1
    assert server.loop is not None
    reading = next(task for task in server.feed._tasks if task.get_name() == "feed-sql")
    server.loop.call_soon_threadsafe(reading.cancel)  # the read-back of tick 2 never comes
    server.tick("east", 2, holdings={"a": (8, "2.0001"), "b": (16, "1.75")})
    after = get(server, "/api/market/rates", island="east")
    assert after.json()["tick"] == 2
    assert after.json()["rates"] == [{"gpus": 8, "rate": 2.0001}, {"gpus": 16, "rate": 1.75}]
    revalidated = httpx.get(
        f"{server.url}/api/market/rates",
        params={"island": "east"},
        headers={"If-None-Match": before.headers["etag"]},
        timeout=10,
    )
    assert revalidated.status_code == 200
    assert revalidated.headers["etag"] == after.headers["etag"] != before.headers["etag"]


@pytest.mark.parametrize(
    ("path", "params", "status", "code", "field"),
    [
        ("/api/market/stats", {}, 422, "invalid", "island"),
        ("/api/market/stats", {"island": "atlantis"}, 404, "unknown-island", None),
        ("/api/market/ladder", {"island": "east", "max_nodes": "two"}, 422, "invalid", "max_nodes"),
        ("/api/market/ladder", {"island": "east", "max_nodes": "-1"}, 422, "invalid", "max_nodes"),
        ("/api/market/series", {"island": "atlantis"}, 404, "unknown-island", None),
        ("/api/market/series", {"island": "east", "interval": "2m"}, 422, "invalid", "interval"),
        ("/api/market/series", {"island": "east", "format": "xml"}, 422, "invalid", "format"),
        ("/api/market/series", {"island": "east", "limit": "0"}, 422, "invalid", "limit"),
        ("/api/market/series", {"island": "east", "start": "yesterday"}, 422, "invalid", "start"),
        (
            "/api/market/series",
            {"island": "east", "start": "2025-04-01T00:00:00Z", "end": "2025-04-01T00:00:00Z"},
            422,
            "invalid",
            "start",
        ),
    ],
)
def test_refusals_name_the_field_and_never_500(
    server: FeedServer,
    path: str,
    params: dict[str, str],
    status: int,
    code: str,
    field: str | None,
) -> None:
    server.tick("east", 1, holdings={"a": (8, "2")})
    response = get(server, path, **params)
    assert response.status_code == status
    body = response.json()
    assert (body["error"], body.get("field")) == (code, field)
    assert body["detail"]


def expected_candles(events: list[TickCommitted], seconds: int) -> list[dict[str, Any]]:
    """The candle definition, computed by hand from what the ticks published: the candle of the
    latest tick is still open."""
    buckets: dict[int, list[dict[str, Any]]] = {}
    for event in events:
        start = int(event.time.timestamp()) // seconds * seconds
        buckets.setdefault(start, []).append(to_builtins(event.stats))
    out = []
    for start, rows in sorted(buckets.items()):
        priced = [r for r in rows if r["vwap"] is not None]
        weight = sum(r["gpus"] for r in priced)
        vwap = sum(Decimal(str(r["vwap"])) * r["gpus"] for r in priced) / weight
        out.append(
            {
                "open": priced[0]["vwap"],
                "high": max(r["vwap"] for r in priced),
                "low": min(r["vwap"] for r in priced),
                "close": priced[-1]["vwap"],
                "vwap": float(vwap.quantize(SIX)),
                "min": min(r["min"] for r in priced),
                "max": max(r["max"] for r in priced),
                "reserve_price": rows[-1]["reserve_price"],  # as the bucket's last tick had it
                "gpu_hours": float(
                    (Decimal(sum(r["gpus"] for r in rows) * 10) / 3600).quantize(SIX)
                ),
                "ticks": len(rows),
                "start": start,
                "closed": start != max(buckets),
            }
        )
    return out


def exported(root: Path, island: str, through: datetime) -> None:
    """Wait for the service's own exporter (one per data dir: a second beside it would race it
    for the same files) to have written the island's history up to `through`."""
    deadline = time.monotonic() + EXPORT_SECONDS
    while (exported_through(root, island) or START) < through:
        assert time.monotonic() < deadline, f"history not exported to {through} in time"
        time.sleep(0.05)


def run_market(server: FeedServer, count: int) -> list[TickCommitted]:
    events = []
    for tick in range(1, count + 1):
        holdings = {
            "a": (8 * (tick % 3 + 1), f"{2 + tick % 5 / 100:.4f}"),
            "b": (8, f"{3 - tick % 7 / 1000:.4f}"),
        }
        if tick % 11 == 0:
            holdings = {}  # nobody holds market nodes: vwap, min and max are null
        # the operator moves the reserve every 7 ticks: inside a candle too
        reserve = f"{1.5 + tick // 7 / 100:.2f}"
        events.append(server.tick("east", tick, holdings=holdings, reserve=reserve))
    return events


def test_series_csv_spells_booleans_as_json_does_under_one_charset(server: FeedServer) -> None:
    run_market(server, 40)
    params = {"island": "east", "interval": "1m", "start": "2025-03-31T23:00:00Z"}
    candles = get(server, "/api/market/series", **params).json()
    response = get(server, "/api/market/series", **params, format="csv")
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    closed = [row["closed"] for row in csv.DictReader(io.StringIO(response.text))]
    assert closed == ["true" if candle["closed"] else "false" for candle in candles]
    assert set(closed) == {"true", "false"}  # the latest bucket is still open


def test_series_candles_as_json_csv_and_arrow(server: FeedServer) -> None:
    events = run_market(server, 40)
    expected = expected_candles(events, 60)
    params = {
        "island": "east",
        "interval": "1m",
        "start": "2025-03-31T23:00:00Z",
        "end": "2025-04-01T00:00:00Z",
    }
    candles = get(server, "/api/market/series", **params).json()
    for candle in candles:
        assert candle.pop("start").endswith(":00Z")
    assert candles == [{k: v for k, v in c.items() if k != "start"} for c in expected]
    assert sum(c["ticks"] for c in candles) == 40

    text = get(server, "/api/market/series", **params, format="csv").text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [float(r["vwap"]) for r in rows] == [c["vwap"] for c in candles]
    assert rows[0]["start"] == "2025-03-31T23:00:00Z"

    response = get(server, "/api/market/series", **params, format="arrow")
    assert response.headers["content-type"] == "application/vnd.apache.arrow.stream"
    table = pa.ipc.open_stream(response.content).read_all()
    assert table.schema.field("vwap").type == pa.decimal128(18, 6)
    assert [float(v) for v in table.column("vwap").to_pylist()] == [c["vwap"] for c in candles]
    assert table.column("start").type == pa.timestamp("us", tz="UTC")

    limited = get(server, "/api/market/series", **params, limit=2).json()
    assert [c["ticks"] for c in limited] == [6, 6]
    # Without a range: the latest `limit` buckets up to the latest tick.
    assert get(server, "/api/market/series", island="east", interval="1h").json()[-1][
        "ticks"
    ] == sum(1 for e in events if e.time.hour == 23)


def test_series_reads_history_and_live_rows_without_counting_twice(
    server: FeedServer, tmp_path: Path
) -> None:
    events = run_market(server, 90)
    params = {
        "island": "east",
        "interval": "5m",
        "start": "2025-03-31T23:00:00Z",
        "end": "2025-04-01T00:00:00Z",
    }
    before = get(server, "/api/market/series", **params).json()
    assert [c["ticks"] for c in before] == [30, 30, 30]
    exported(tmp_path / "history", "east", START + timedelta(minutes=10))
    # Live and history both hold the first 10 minutes: still counted once.
    assert get(server, "/api/market/series", **params).json() == before
    # A retention job trims the live table from the old end: history fills in.
    server.db.con.execute("DELETE FROM ticks WHERE island = 'east' AND tick <= 45")
    assert get(server, "/api/market/series", **params).json() == before
    # History written before ticks recorded their interval counts the configured one (10 s).
    for part in (tmp_path / "history" / "ticks").rglob("*.parquet"):
        server.db.con.execute(
            f"COPY (SELECT * EXCLUDE (tick_seconds) FROM '{part}') TO '{part}' (FORMAT parquet)"
        )
    assert get(server, "/api/market/series", **params).json() == before
    assert before == [
        {**c, "start": before[i]["start"]} for i, c in enumerate(expected_candles(events, 300))
    ]


def test_asyncapi_document_describes_every_declared_channel(server: FeedServer) -> None:
    doc = get(server, "/schema/asyncapi.json").json()
    assert doc["asyncapi"] == "3.0.0"
    assert doc["channels"]["market"]["address"] == "/ws/market"
    for name in ("stats", "ladder", "rates"):
        channel = doc["channels"][name]
        assert channel["address"] == f"{name}:{{island}}"
        assert set(channel["parameters"]) == {"island"}
        update = channel["messages"]["update"]["payload"]
        assert update["properties"]["channel"]["pattern"] == f"^{name}:.+$"
        sent = doc["operations"][f"{name}Ticks"]["messages"]
        assert [m["$ref"] for m in sent] == [
            f"#/channels/{name}/messages/snapshot",
            f"#/channels/{name}/messages/update",
        ]
    stats = doc["channels"]["stats"]["messages"]["snapshot"]["payload"]["properties"]["data"]
    assert list(stats["properties"]) == [
        "vwap",
        "min",
        "max",
        "gpus",
        "clusters",
        "pending_gpus",
        "reserve_price",
    ]
    sent = {m["$ref"].rsplit("/", 1)[1] for m in doc["operations"]["serverSends"]["messages"]}
    assert {"subscribed", "error", "heartbeat"} <= sent
