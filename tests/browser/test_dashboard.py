"""The dashboard in a real headless Chromium (Debian's, driven by Playwright) against a real
manual-clock server: the range choice draws the series endpoint's candles as a step line, hover
shows a candle's figures, islands come largest first with their GPU model, every time is UTC
(said once), and the ladder says when a rung held under windows can be contested."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from tests.conftest import Server, StartServer
from tests.e2e.support import declare, make_account, make_cluster, ok, tick

WAIT_MS = 20_000
RANGES = {"hour": ("1m", 60), "day": ("5m", 288), "week": ("1h", 168), "month": ("1h", 744)}
VWAP_RGB = (31, 111, 235)  # --vwap in dashboard.css


def contest(server: Server) -> dict[str, dict[str, str]]:
    """Three clusters asking for more than the reference island's 64 nodes, at three prices."""
    make_account(server, "dash", 100_000)
    clusters = {}
    for name, nodes, price in (("hi", 30, 3.5), ("mid", 30, 2.25), ("lo", 20, 1.75)):
        clusters[name] = make_cluster(server, "dash", "ref", "vm", f"dash-{name}")
        ok(declare(server, clusters[name], nodes * 8, price))
    return clusters


def series(server: Server, island: str, range_: str) -> list[dict[str, Any]]:
    interval, limit = RANGES[range_]
    params = {"island": island, "interval": interval, "limit": limit}
    candles: list[dict[str, Any]] = ok(server.client.get("/api/market/series", params=params))
    return candles


def wait_for_chart(page: Page, island: str, range_: str, last_tick: int) -> dict[str, int]:
    page.wait_for_function(
        """([island, range, tick]) => {
            const c = document.querySelector(`section[data-island='${island}'] canvas.chart`);
            return c !== null && c.dataset.range === range && Number(c.dataset.lastTick) >= tick;
        }""",
        arg=[island, range_, last_tick],
        timeout=WAIT_MS,
    )
    canvas = page.locator(f"section[data-island='{island}'] canvas.chart")
    return {
        "points": int(canvas.get_attribute("data-points") or 0),
        "last_tick": int(canvas.get_attribute("data-last-tick") or 0),
    }


def priced(candles: list[dict[str, Any]]) -> int:
    return sum(1 for c in candles if c["vwap"] is not None)


def vwap_rows(page: Page, island: str, at: float) -> list[float]:
    """The rows (CSS px) of the canvas column at x = `at` drawn in the vwap line's colour."""
    rows: list[float] = page.evaluate(
        """([island, at, rgb]) => {
            const canvas = document.querySelector(`section[data-island='${island}'] canvas.chart`);
            const ratio = canvas.width / canvas.clientWidth;
            const column = canvas.getContext("2d").getImageData(Math.round(at * ratio), 0, 1,
                                                               canvas.height).data;
            const rows = [];
            for (let y = 0; y < canvas.height; y++) {
                const [r, g, b, a] = column.slice(4 * y, 4 * y + 4);
                const near = Math.abs(r - rgb[0]) + Math.abs(g - rgb[1]) + Math.abs(b - rgb[2]);
                if (a > 200 && near < 60) rows.push(y / ratio);
            }
            return rows;
        }""",
        [island, at, list(VWAP_RGB)],
    )
    return rows


def test_the_range_choice_draws_the_series_as_a_step_line_with_values_on_hover(
    start_server: StartServer, page: Page, tmp_path: Path
) -> None:
    # 30-minute ticks: a VM window (1 h) lapses every other tick, so held nodes compete again
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    clusters = contest(server)
    first = tick(server, 3)
    assert first["vwap"] > first["reserve_price"]  # a contested market: prices above reserve

    response = page.goto(server.url + "/")
    assert response is not None
    assert response.status == 200
    hour = wait_for_chart(page, "ref", "hour", first["tick"])
    assert hour["points"] == priced(series(server, "ref", "hour")) == 2  # 1-minute candles
    assert page.locator(".ranges button[aria-pressed='true']").inner_text() == "hour"

    page.locator(".ranges button[data-range='day']").click()
    day = wait_for_chart(page, "ref", "day", first["tick"])
    assert day["points"] == priced(series(server, "ref", "day")) == 3  # the whole day so far

    # the market moves: the lowest bidder outbids the others in turn
    for price in (4.0, 4.5, 5.25, 6.0):
        ok(declare(server, clusters["lo"], 20 * 8, price))
        after = tick(server)
    day = wait_for_chart(page, "ref", "day", after["tick"])
    assert day == {"points": 7, "last_tick": after["tick"]}

    section = page.locator("section[data-island='ref']")
    assert section.locator(".vwap").inner_text() == f"{after['vwap']:.4f}"
    assert section.locator(".held-n").inner_text() == str(after["gpus"])
    assert section.locator(".pending-n").inner_text() == str(after["pending_gpus"])
    rows = section.locator("table.ticks tbody tr")
    assert rows.count() == 7
    assert rows.first.locator("td").first.inner_text() == str(after["tick"])
    assert rows.first.locator("td").nth(1).inner_text() == after["time"][:19].replace("T", " ")
    # beside the figures, what they mean
    explain = section.locator(".explain").inner_text()
    assert "vwap is what holders pay" in explain
    assert "displace the lowest standing bid" in explain

    # week: hourly candles, two ticks each, side by side: the line steps between them
    page.locator(".ranges button[data-range='week']").click()
    candles = series(server, "ref", "week")
    week = wait_for_chart(page, "ref", "week", after["tick"])
    assert week["points"] == priced(candles) >= 3
    width = timedelta(hours=1).total_seconds() * 1000
    scale = page.evaluate(
        """(island) => {
            const chart = document.querySelector(`section[data-island='${island}'] canvas.chart`)
                .chart;
            return chart.candles.map((c) => [c.t, chart.x(c.t), chart.x(c.t + chart.width),
                                             chart.y(c.vwap)]);
        }""",
        "ref",
    )
    assert [c[0] for c in scale] == [
        datetime.fromisoformat(c["start"]).timestamp() * 1000 for c in candles
    ]
    steps = [(a, b) for a, b in pairwise(scale) if abs(a[3] - b[3]) > 8 and b[0] == a[0] + width]
    assert steps, "the market moved: some neighbouring candles differ by more than 8 px"
    left, right = steps[0]
    at = left[1] + 0.9 * (left[2] - left[1])  # late in the left candle's span
    drawn = vwap_rows(page, "ref", at)
    assert any(abs(y - left[3]) <= 2 for y in drawn), (drawn, left[3])  # still its price
    ramp = left[3] + (right[3] - left[3]) * (at - (left[1] + left[2]) / 2) / (
        (right[1] + right[2]) / 2 - (left[1] + left[2]) / 2
    )
    assert not any(abs(y - ramp) <= 2 for y in drawn), (drawn, ramp)  # not a ramp

    # hover: the candle under the pointer, its figures
    canvas = section.locator("canvas.chart")
    box = canvas.bounding_box()
    assert box is not None
    target = len(candles) - 2
    page.mouse.move(box["x"] + (scale[target][1] + scale[target][2]) / 2, box["y"] + 100)
    tip = section.locator(".tip")
    tip.wait_for(state="visible", timeout=WAIT_MS)
    assert tip.get_attribute("data-candle") == str(target)
    text = tip.inner_text()
    hovered = candles[target]
    assert hovered["start"][:16].replace("T", " ") in text
    assert f"vwap {hovered['vwap']:.4f}" in text
    assert f"GPU-hours {hovered['gpu_hours']:.2f}" in text
    assert f"ticks {hovered['ticks']}" in text
    page.mouse.move(box["x"] + scale[-1][1] + 2, box["y"] + 100)  # the latest candle: still open
    page.wait_for_function(
        "() => document.querySelector(\"section[data-island='ref'] .tip\").innerText"
        ".includes('open')",
        timeout=WAIT_MS,
    )
    page.screenshot(path=str(tmp_path / "week.png"), full_page=True)

    page.locator(".ranges button[data-range='month']").click()
    month = wait_for_chart(page, "ref", "month", after["tick"])
    assert month["points"] == priced(series(server, "ref", "month")) == week["points"]
    assert page.locator("#status").get_attribute("data-state") == "live"


def test_islands_largest_first_with_their_gpu_model_one_utc_clock_and_when_rungs_open(
    start_server: StartServer, page: Page
) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    body = {
        "gpus_per_node": 8,
        "nodes": 128,
        "reserve_price": 1.0,
        "node_spec": {"gpus": "8x Test GPU 80 GB"},
    }
    ok(server.client.put("/api/admin/islands/big", json=body, headers=server.operator()))
    make_account(server, "acct", 1_000_000)
    holder = make_cluster(server, "acct", "big", "vm", "holder")
    ok(declare(server, holder, 128 * 8, 2.0))  # every node of `big`, under 1-hour windows
    granted = tick(server)
    held = tick(server, island="big")
    page.goto(server.url + "/")
    wait_for_chart(page, "big", "hour", held["tick"])
    wait_for_chart(page, "ref", "hour", held["tick"])

    # Windows hold every node of `big`: the ladder says from when each rung can be contested,
    # and at what price.
    ladder = ok(server.client.get("/api/market/ladder", params={"island": "big"}))
    later = [r for r in ladder["rungs"] if r["contestable_at"] is not None]
    assert later
    ends = datetime.fromisoformat(granted["time"]) + timedelta(hours=1)
    assert {datetime.fromisoformat(r["contestable_at"]) for r in later} == {ends}
    big = page.locator("section[data-island='big']")
    big.locator("table.ladder tbody tr.later").first.wait_for(timeout=WAIT_MS)
    rows = big.locator("table.ladder tbody tr")
    shown = {
        int(rows.nth(i).locator("td").first.inner_text()): rows.nth(i) for i in range(rows.count())
    }
    rung = later[0]
    row = shown[rung["nodes"]]
    assert row.locator("td").nth(2).inner_text() == f"{rung['price_per_gpu_hour']:.4f}"
    # the date too when the window ends on another day than the tick's (a run near midnight)
    same_day = ends.date() == datetime.fromisoformat(held["time"]).date()
    shown_at = f"{ends:%H:%M}" if same_day else f"{ends:%m-%d %H:%M}"
    assert row.locator("td").nth(3).inner_text() == f"from {shown_at}"
    # the rung's reason, a code (`windows-hold`), in words
    assert rung["reason"] == "windows-hold"
    assert row.get_attribute("title") == "protection windows hold these nodes until then"
    assert big.locator(".ladder-note").is_visible()

    # an island made after the page loaded shows up, in its place by size: last
    body = {"gpus_per_node": 4, "nodes": 8, "reserve_price": 2.5}
    ok(server.client.put("/api/admin/islands/late", json=body, headers=server.operator()))
    done = {stats["island"]: stats for stats in tick(server, 2)["islands"]}
    assert done["late"]["tick"] == 2  # its own tick numbers
    wait_for_chart(page, "late", "hour", 2)
    order = page.locator("section.island").evaluate_all("(s) => s.map((e) => e.dataset.island)")
    assert order == ["big", "ref", "late"]  # 1024, 512 and 32 GPUs
    assert big.locator(".spec").inner_text() == "128 nodes × 8 GPUs · 8x Test GPU 80 GB per node"
    assert page.locator("section[data-island='ref'] .spec").inner_text() == (
        "64 nodes × 8 GPUs · 8x AMD MI355X 288 GB OAM per node"
    )
    late = page.locator("section[data-island='late']")
    assert late.locator(".spec").inner_text() == "8 nodes × 4 GPUs"
    assert late.locator(".reserve").inner_text() == "2.5000"

    # One clock: market time in UTC, said once; the status shows the latest tick's time.
    assert page.locator("body").inner_text().count("UTC") == 1
    last = done["late"]["time"][:19].replace("T", " ")
    page.wait_for_function(
        "(t) => document.getElementById('status').innerText.endsWith(t)", arg=last, timeout=WAIT_MS
    )
