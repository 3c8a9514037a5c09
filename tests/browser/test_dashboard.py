"""The dashboard in a real headless Chromium (Debian's, driven by Playwright) against real
manual-clock servers: each range draws candles never finer than the island's tick over round,
distinct time labels, the vwap as a step line, the reserve as it was and volume bars; the
download links answer with the candles shown; a drag (mouse or finger) or the form picks a
custom range; islands compare on one chart; an old last tick reads "stale since"; the page fits
a phone; no page asks for an icon in vain; islands come largest first with their GPU model,
every time is UTC (said once), and the ladder says when a rung can be won."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
from playwright.sync_api import Browser, Page, Response

from tests.conftest import Server, StartServer
from tests.e2e.support import declare, make_account, make_cluster, ok, tick

WAIT_MS = 20_000
MINUTE = 60_000
LABEL_STEPS = {m * MINUTE for m in (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080)}
VWAP_RGB = (31, 111, 235)  # --vwap in dashboard.css
RESERVE_RGB = (194, 65, 12)  # --reserve


def contest(server: Server) -> dict[str, dict[str, str]]:
    """Three clusters asking for more than the reference island's 64 nodes, at three prices."""
    make_account(server, "dash", 100_000)
    clusters = {}
    for name, nodes, price in (("hi", 30, 3.5), ("mid", 30, 2.25), ("lo", 20, 1.75)):
        clusters[name] = make_cluster(server, "dash", "ref", "vm", f"dash-{name}")
        ok(declare(server, clusters[name], nodes * 8, price))
    return clusters


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


def chart_of(page: Page, selector: str) -> dict[str, Any]:
    """What the chart under `selector` drew: its candles, width, domain, labels and bars."""
    drawn: dict[str, Any] = page.evaluate(
        """(selector) => {
            const c = document.querySelector(selector).chart;
            return {candles: c.candles, lines: c.lines, width: c.width, start: c.start,
                    end: c.end, labels: c.labels, step: c.labelStep, bars: c.bars,
                    ys: (c.candles || []).map((k) => [k.vwap === null ? null : c.y(k.vwap),
                                                     c.y(k.reserve_price)]),
                    xs: (c.candles || []).map((k) => [c.x(k.t), c.x(k.t + c.width)])};
        }""",
        selector,
    )
    return drawn


def colour_rows(page: Page, selector: str, at: float, rgb: tuple[int, int, int]) -> list[float]:
    """The rows (CSS px) of the canvas columns at x = `at` … `at` + 9 drawn in colour `rgb` (ten
    columns: a dashed line has gaps)."""
    rows: list[float] = page.evaluate(
        """([selector, at, rgb]) => {
            const canvas = document.querySelector(selector);
            const ratio = canvas.width / canvas.clientWidth;
            const ctx = canvas.getContext("2d");
            const rows = new Set();
            for (let dx = 0; dx < 10; dx++) {
                const column = ctx.getImageData(Math.round((at + dx) * ratio), 0, 1,
                                                canvas.height).data;
                for (let y = 0; y < canvas.height; y++) {
                    const [r, g, b, a] = column.slice(4 * y, 4 * y + 4);
                    const near = Math.abs(r - rgb[0]) + Math.abs(g - rgb[1]) + Math.abs(b - rgb[2]);
                    if (a > 200 && near < 60) rows.add(Math.round(y / ratio));
                }
            }
            return [...rows];
        }""",
        [selector, at, list(rgb)],
    )
    return rows


def assert_round_distinct_labels(drawn: dict[str, Any]) -> None:
    labels = drawn["labels"]
    texts = [label["text"] for label in labels]
    assert len(texts) >= 2, texts
    assert len(set(texts)) == len(texts), texts  # no "20:09 20:09 20:09"
    assert drawn["step"] in LABEL_STEPS, drawn["step"]
    assert drawn["step"] >= 5 * MINUTE, drawn["step"]
    for label in labels:
        assert label["t"] % drawn["step"] == 0, label  # no 02:56, 05:53
        assert drawn["start"] <= label["t"] < drawn["end"], label
        at = datetime.fromtimestamp(label["t"] / 1000, UTC)
        assert label["text"] in (f"{at:%H:%M}", f"{at:%m-%d}", f"{at:%m-%d %H:%M}"), label


def test_each_range_draws_tick_wide_candles_round_labels_the_reserve_as_it_was_volume_and_downloads(
    start_server: StartServer, page: Page, tmp_path: Path
) -> None:
    # 30-minute ticks: a VM window (1 h) lapses every other tick, so held nodes compete again
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    clusters = contest(server)
    first = tick(server, 3)
    assert first["vwap"] > first["reserve_price"] == 1.0  # contested: prices above reserve
    # the market moves: the lowest bidder outbids the others in turn; the reserve goes up
    for price in (4.0, 4.5):
        ok(declare(server, clusters["lo"], 20 * 8, price))
        tick(server)
    change = {"reserve_price": 1.5}
    ok(server.client.put("/api/admin/islands/ref", json=change, headers=server.operator()))
    for price in (5.25, 6.0):
        ok(declare(server, clusters["lo"], 20 * 8, price))
        after = tick(server)
    assert after["reserve_price"] == 1.5

    response = page.goto(server.url + "/")
    assert response is not None
    assert response.status == 200
    selector = "section[data-island='ref'] canvas.chart"
    expected = {"hour": ("30m", 2), "day": ("30m", 48), "week": ("1h", 168), "month": ("1h", 720)}
    for range_, (interval, buckets) in expected.items():
        page.locator(f".ranges button[data-range='{range_}']").click()
        wait_for_chart(page, "ref", range_, after["tick"])
        drawn = chart_of(page, selector)
        canvas = page.locator(selector)
        # candles never finer than the island's 30-minute tick
        assert canvas.get_attribute("data-interval") == interval
        assert drawn["width"] >= 1800 * 1000
        assert (drawn["end"] - drawn["start"]) / drawn["width"] == buckets
        assert_round_distinct_labels(drawn)

        # the download links ask for exactly the candles drawn
        section = page.locator("section[data-island='ref']")
        href = section.locator("a.csv").get_attribute("href")
        assert href is not None
        assert "format=csv" in href
        assert f"interval={interval}" in href
        rows = list(csv.DictReader(io.StringIO(server.client.get(href).text)))
        candles = drawn["candles"]
        assert [r["start"] for r in rows] == [c["start"] for c in candles]
        assert [r["vwap"] and float(r["vwap"]) for r in rows] == [
            c["vwap"] if c["vwap"] is not None else "" for c in candles
        ]
        arrow = section.locator("a.arrow").get_attribute("href")
        assert arrow is not None
        table = pa.ipc.open_stream(server.client.get(arrow).content).read_all()
        assert [float(v) for v in table.column("gpu_hours").to_pylist()] == [
            c["gpu_hours"] for c in candles
        ]
        assert int(canvas.get_attribute("data-points") or 0) == priced(candles)

        # volume: one bar per candle, its height the candle's GPU-hours on one scale
        bars = drawn["bars"]
        assert [b["gpu_hours"] for b in bars] == [c["gpu_hours"] for c in candles]
        tallest = max(bars, key=lambda b: b["gpu_hours"])
        height = tallest["bottom"] - tallest["top"]
        assert height > 20
        for bar in bars:
            share = bar["gpu_hours"] / tallest["gpu_hours"]
            assert abs((bar["bottom"] - bar["top"]) - height * share) < 1, bar

    # the day: the 7 ticks in 30-minute candles side by side, the vwap a step line across them
    page.locator(".ranges button[data-range='day']").click()
    wait_for_chart(page, "ref", "day", after["tick"])
    drawn = chart_of(page, selector)
    candles = drawn["candles"]
    assert [c["ticks"] for c in candles] == [1] * 7
    assert all(b["t"] == a["t"] + drawn["width"] for a, b in pairwise(candles))
    # the reserve as each candle had it: 1.0 for the first five ticks, then 1.5
    assert [c["reserve_price"] for c in candles] == [1.0] * 5 + [1.5] * 2
    for (x0, _), (_, reserve_y) in (
        (drawn["xs"][1], drawn["ys"][1]),
        (drawn["xs"][-2], drawn["ys"][-2]),
    ):
        assert any(
            abs(y - reserve_y) <= 2 for y in colour_rows(page, selector, x0 + 2, RESERVE_RGB)
        )
    assert abs(drawn["ys"][1][1] - drawn["ys"][-2][1]) > 8  # drawn apart: not today's value only
    steps = [
        (i, i + 1)
        for i in range(len(candles) - 1)
        if abs(drawn["ys"][i][0] - drawn["ys"][i + 1][0]) > 8
    ]
    assert steps, "the market moved: some neighbouring candles differ by more than 8 px"
    left, right = steps[0]
    at = drawn["xs"][left][0] + 0.8 * (drawn["xs"][left][1] - drawn["xs"][left][0]) - 9
    rows = colour_rows(page, selector, at, VWAP_RGB)
    assert any(abs(y - drawn["ys"][left][0]) <= 2 for y in rows), rows  # still its price
    middle = (drawn["ys"][left][0] + drawn["ys"][right][0]) / 2
    assert not any(abs(y - middle) <= 2 for y in rows), rows  # not a ramp toward the next

    # hover: the candle under the pointer, its figures, the reserve it had among them
    section = page.locator("section[data-island='ref']")
    box = page.locator(selector).bounding_box()
    assert box is not None
    target = 2
    page.mouse.move(box["x"] + sum(drawn["xs"][target]) / 2, box["y"] + 100)
    tip = section.locator(".tip")
    tip.wait_for(state="visible", timeout=WAIT_MS)
    assert tip.get_attribute("data-candle") == str(target)
    text = tip.inner_text()
    hovered = candles[target]
    assert hovered["start"][:16].replace("T", " ") in text
    assert f"vwap {hovered['vwap']:.4f}" in text
    assert "reserve 1.0000" in text
    assert f"GPU-hours {hovered['gpu_hours']:.2f}" in text
    page.mouse.move(box["x"] + drawn["xs"][-1][0] + 2, box["y"] + 100)  # the latest: still open
    page.wait_for_function(
        "() => document.querySelector(\"section[data-island='ref'] .tip\").innerText"
        ".includes('open')",
        timeout=WAIT_MS,
    )
    assert section.locator(".vwap").inner_text() == f"{after['vwap']:.4f}"
    assert section.locator(".held-n").inner_text() == str(after["gpus"])
    rows_shown = section.locator("table.ticks tbody tr")
    assert rows_shown.first.locator("td").first.inner_text() == str(after["tick"])
    assert rows_shown.first.locator("td").nth(1).inner_text() == after["time"][:19].replace(
        "T", " "
    )
    assert "vwap is what holders pay" in section.locator(".explain").inner_text()
    # no large blank under the chart: it reaches down as far as the panel beside it
    chart_box = section.locator(".chart-box").bounding_box()
    side = section.locator(".side").bounding_box()
    assert chart_box is not None
    assert side is not None
    assert chart_box["y"] + chart_box["height"] >= side["y"] + side["height"] - 40
    page.mouse.move(0, 0)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.screenshot(path=str(tmp_path / "dashboard-1366.png"), full_page=True)
    # the market time runs ahead of the wall clock here (30-minute ticks on request): live
    assert page.locator("#status").get_attribute("data-state") == "live"


def test_a_drag_or_the_form_picks_a_custom_range_and_islands_compare_on_one_chart(
    start_server: StartServer, page: Page
) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    contest(server)
    body = {"gpus_per_node": 8, "nodes": 16, "reserve_price": 2.0}
    ok(server.client.put("/api/admin/islands/two", json=body, headers=server.operator()))
    make_account(server, "two", 100_000)
    ok(declare(server, make_cluster(server, "two", "two", "vm", "two-vm"), 8 * 8, 2.5))
    done = {s["island"]: s for s in tick(server, 12)["islands"]}
    page.goto(server.url + "/")
    page.locator(".ranges button[data-range='day']").click()
    wait_for_chart(page, "ref", "day", done["ref"]["tick"])
    selector = "section[data-island='ref'] canvas.chart"
    day = chart_of(page, selector)

    # a drag across the chart, by mouse, from the 3rd candle to the 9th: that range, zoomed
    box = page.locator(selector).bounding_box()
    assert box is not None
    xs = chart_of(page, selector)["xs"]
    page.mouse.move(box["x"] + xs[2][0] + 1, box["y"] + 80)
    page.mouse.down()
    page.mouse.move(box["x"] + xs[5][0], box["y"] + 90, steps=4)
    page.mouse.move(box["x"] + xs[8][1] - 1, box["y"] + 90, steps=4)
    page.mouse.up()
    wait_for_chart(page, "ref", "custom", done["ref"]["tick"])
    zoomed = chart_of(page, selector)
    assert page.locator(".ranges button[aria-pressed='true']").inner_text() == "custom"
    assert day["candles"][1]["t"] <= zoomed["start"] <= day["candles"][2]["t"] + 60_000
    assert zoomed["end"] >= day["candles"][8]["t"] + day["width"] - 60_000
    assert zoomed["width"] >= 1800 * 1000  # still no finer than the tick
    assert [c["start"] for c in zoomed["candles"]] == [
        c["start"] for c in day["candles"] if zoomed["start"] <= c["t"] < zoomed["end"]
    ]
    assert 6 <= len(zoomed["candles"]) <= 8
    assert_round_distinct_labels(zoomed)
    form = page.locator("#custom")
    assert form.locator("input[name=from]").input_value() == iso_minute(zoomed["start"])

    # the form: a range typed in UTC, shown as typed
    first = datetime.fromisoformat(day["candles"][0]["start"])
    start, end = first + timedelta(minutes=30), first + timedelta(hours=4)  # not the drag's
    form.locator("input[name=from]").fill(f"{start:%Y-%m-%dT%H:%M}")
    form.locator("input[name=to]").fill(f"{end:%Y-%m-%dT%H:%M}")
    form.locator("button[type=submit]").click()
    page.wait_for_function(
        "([s, t]) => { const c = document.querySelector(s).chart; return c.start === t; }",
        arg=[selector, start.timestamp() * 1000],
        timeout=WAIT_MS,
    )
    typed = chart_of(page, selector)
    assert typed["end"] == end.timestamp() * 1000
    assert [c["start"] for c in typed["candles"]] == [
        c["start"] for c in day["candles"] if start <= datetime.fromisoformat(c["start"]) < end
    ]
    href = page.locator("section[data-island='ref'] a.csv").get_attribute("href")
    assert href is not None
    assert len(list(csv.DictReader(io.StringIO(server.client.get(href).text)))) == 7

    # compare: both islands at first, one line each, the candles of each
    page.locator(".ranges button[data-range='day']").click()
    compare = "#compare canvas.compare-chart"
    page.wait_for_function(
        "(s) => document.querySelector(s).dataset.islands === 'ref,two' "
        "&& document.querySelector(s).dataset.range === 'day'",
        arg=compare,
        timeout=WAIT_MS,
    )
    lines = chart_of(page, compare)["lines"]
    assert [line["island"] for line in lines] == ["ref", "two"]
    for line in lines:
        frame = chart_of(page, compare)
        params = {
            "island": line["island"],
            "interval": "30m",
            "start": iso(frame["start"]),
            "end": iso(frame["end"]),
        }
        candles = ok(server.client.get("/api/market/series", params=params))
        assert [c["vwap"] for c in line["candles"]] == [c["vwap"] for c in candles]
        assert priced(candles) == 12
        # each line in its own colour, where its price is
        rgb = (
            int(line["color"][1:3], 16),
            int(line["color"][3:5], 16),
            int(line["color"][5:7], 16),
        )
        t = datetime.fromisoformat(candles[5]["start"]).timestamp() * 1000
        x, y = page.evaluate(
            "([s, t, v]) => { const c = document.querySelector(s).chart; "
            "return [c.x(t), c.y(v)]; }",
            [compare, t, candles[5]["vwap"]],
        )
        assert any(abs(r - y) <= 2 for r in colour_rows(page, compare, x + 1, rgb))
    page.locator("#compare input[value='two']").uncheck()
    page.wait_for_function(
        "(s) => document.querySelector(s).dataset.islands === 'ref'", arg=compare, timeout=WAIT_MS
    )
    assert page.locator(compare).get_attribute("data-lines") == "1"


def iso(ms: float) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def iso_minute(ms: float) -> str:
    return f"{datetime.fromtimestamp(ms / 1000, UTC):%Y-%m-%dT%H:%M}"


def test_at_a_phone_width_an_old_store_reads_stale_a_finger_zooms_and_no_icon_is_missing(
    start_server: StartServer, browser: Browser, tmp_path: Path
) -> None:
    # a store whose last tick was two days ago (the manual clock started then, ticked 3 times)
    began = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
    server = start_server(
        "--clock",
        "manual",
        "--tick-seconds",
        "1800",
        env={"BURSTMARKET_CLOCK_START": began.isoformat()},
    )
    contest(server)
    last = tick(server, 3)
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
    )
    page = context.new_page()
    errors: list[str] = []
    missing: list[str] = []
    icons: list[int] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def answered(response: Response) -> None:
        if response.status >= 400:
            missing.append(f"{response.status} {response.url}")
        if "favicon" in response.url:
            icons.append(response.status)

    page.on("response", answered)
    try:
        page.goto(server.url + "/")
        wait_for_chart(page, "ref", "hour", last["tick"])
        shown = last["time"][:19].replace("T", " ")
        page.wait_for_function(
            "() => document.getElementById('status').dataset.state === 'stale'", timeout=WAIT_MS
        )
        assert page.locator("#status").inner_text() == f"stale since {shown}"
        badge = page.locator("section[data-island='ref'] .stale")
        assert badge.is_visible()
        assert badge.inner_text() == f"stale since {shown}"
        # nothing overflows to the right at a phone's width
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        page.screenshot(path=str(tmp_path / "dashboard-390.png"), full_page=True)

        # a finger dragged across the day chart zooms it, as the mouse does
        page.locator(".ranges button[data-range='day']").click()
        wait_for_chart(page, "ref", "day", last["tick"])
        selector = "section[data-island='ref'] canvas.chart"
        page.locator(selector).scroll_into_view_if_needed()
        drawn = chart_of(page, selector)
        box = page.locator(selector).bounding_box()
        assert box is not None
        y = box["y"] + 60
        cdp = context.new_cdp_session(page)
        x0, x1 = box["x"] + drawn["xs"][0][0] - 30, box["x"] + drawn["xs"][-1][1] + 5
        points = [x0 + (x1 - x0) * i / 8 for i in range(9)]
        touch = "Input.dispatchTouchEvent"
        cdp.send(touch, {"type": "touchStart", "touchPoints": [{"x": points[0], "y": y}]})
        for x in points[1:]:
            cdp.send(touch, {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]})
        cdp.send(touch, {"type": "touchEnd", "touchPoints": []})
        wait_for_chart(page, "ref", "custom", last["tick"])
        zoomed = chart_of(page, selector)
        assert zoomed["end"] - zoomed["start"] < drawn["end"] - drawn["start"]
        assert [c["start"] for c in zoomed["candles"]] == [c["start"] for c in drawn["candles"]]
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")

        # no page asks for an icon in vain: the dashboard links one, the others get /favicon.ico
        for path in ("/console", "/schema/swagger"):
            page.goto(server.url + path)
            page.wait_for_load_state("networkidle")
        assert server.client.get("/favicon.ico").status_code == 200
        assert icons
        assert all(status == 200 for status in icons), icons
    finally:
        context.close()
    assert not missing, missing
    assert not errors, errors


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
    tick(server)
    ok(declare(server, holder, 128 * 8, 2.0))  # every node of `big`, under 1-hour windows
    held = tick(server, island="big")  # granted now: the next tick, 30 minutes on, cannot win
    page.goto(server.url + "/")
    wait_for_chart(page, "big", "hour", held["tick"])
    wait_for_chart(page, "ref", "hour", held["tick"])

    # Windows hold every node of `big`: the ladder says from when each rung can be contested,
    # and at what price.
    ladder = ok(server.client.get("/api/market/ladder", params={"island": "big"}))
    later = [r for r in ladder["rungs"] if r["contestable_at"] is not None]
    assert later
    ends = datetime.fromisoformat(held["time"]) + timedelta(hours=1)
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
    assert "protection windows hold" in (row.get_attribute("title") or "")  # the reason in words
    assert big.locator(".ladder-note").is_visible()
    # a rung contestable now is won at the next tick, and says so; no rung reads "now"
    ref_ladder = ok(server.client.get("/api/market/ladder", params={"island": "ref"}))
    assert ref_ladder["rungs"][0]["contestable_at"] is None
    ref_rows = page.locator("section[data-island='ref'] table.ladder tbody tr")
    ref_rows.first.wait_for(timeout=WAIT_MS)
    assert ref_rows.first.locator("td").nth(3).inner_text() == "next tick"
    whens = page.locator("table.ladder tbody tr td:nth-child(4)").all_inner_texts()
    assert "now" not in whens

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


def test_the_ladder_gives_each_rung_its_price_over_the_next_hour(
    start_server: StartServer, page: Page, tmp_path: Path
) -> None:
    """Two holders' windows end 20 minutes apart: rungs held until the first release are
    cheaper from the second, and the panel says how much and when."""
    server = start_server("--clock", "manual", "--tick-seconds", "1200")
    body = {"gpus_per_node": 8, "nodes": 6, "reserve_price": 1.0}
    ok(server.client.put("/api/admin/islands/lt", json=body, headers=server.operator()))
    make_account(server, "lt-acct", 100_000)
    ok(declare(server, make_cluster(server, "lt-acct", "lt", "vm", "lt-first"), 4 * 8, 3.5))
    tick(server, island="lt")
    ok(declare(server, make_cluster(server, "lt-acct", "lt", "vm", "lt-second"), 2 * 8, 1.5))
    held = tick(server, island="lt")
    ladder = ok(server.client.get("/api/market/ladder", params={"island": "lt"}))
    page.goto(server.url + "/")
    section = page.locator("section[data-island='lt']")
    page.wait_for_function(
        "(t) => Number(document.querySelector(\"section[data-island='lt'] table.ladder\")"
        "?.dataset.tick) >= t",
        arg=held["tick"],
        timeout=WAIT_MS,
    )
    rows = section.locator("table.ladder tbody tr")
    shown = {
        int(cells[0]): cells for cells in (r.locator("td").all_inner_texts() for r in rows.all())
    }
    assert sorted(shown) == [1, 2, 3, 4, 6]  # 1, 2, 3, 4, 6 … and the last
    cheaper = 0
    for rung in ladder["rungs"]:
        if rung["nodes"] not in shown:
            continue
        cells = shown[rung["nodes"]]
        assert cells[2] == f"{rung['price_per_gpu_hour']:.4f}"
        at = datetime.fromisoformat(rung["contestable_at"])
        assert cells[3] == f"from {at:%H:%M}"  # windows hold every node: no "next tick"
        if not rung["later"]:
            assert cells[4] == "–"
            continue
        best = min(rung["later"], key=lambda later: later["price_per_gpu_hour"])
        then = datetime.fromisoformat(best["at"])
        assert cells[4] == f"{best['price_per_gpu_hour']:.4f} at {then:%H:%M}"
        cheaper += best["price_per_gpu_hour"] < rung["price_per_gpu_hour"]
    assert cheaper == 4  # the rungs held until the first release: cheaper at the second
    assert section.locator(".win").inner_text() == (
        f"{ladder['rungs'][0]['price_per_gpu_hour']:.4f} from "
        f"{datetime.fromisoformat(ladder['rungs'][0]['contestable_at']):%H:%M}"
    )
    section.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "ladder-1440.png"), full_page=True)
