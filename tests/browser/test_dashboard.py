"""The dashboard in a real headless Chromium (Debian's, driven by Playwright) against a real
manual-clock server: the page loads, the chart draws, and it moves when ticks run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.conftest import Server, StartServer
from tests.e2e.support import declare, make_account, make_cluster, ok, tick

CHROMIUM = os.environ.get("BURSTMARKET_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 20_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert not errors, errors


def contest(server: Server) -> None:
    """Three clusters asking for more than the reference island's 64 nodes, at three prices."""
    make_account(server, "dash", 100_000)
    for name, nodes, price in (("hi", 30, 3.5), ("mid", 30, 2.25), ("lo", 20, 1.75)):
        auth = make_cluster(server, "dash", "ref", "vm", f"dash-{name}")
        ok(declare(server, auth, nodes * 8, price))


def chart_state(page: Page, island: str) -> dict[str, int]:
    canvas = page.locator(f"section[data-island='{island}'] canvas.chart")
    return {
        "points": int(canvas.get_attribute("data-points") or 0),
        "last_tick": int(canvas.get_attribute("data-last-tick") or 0),
    }


def wait_for_tick(page: Page, island: str, last_tick: int) -> None:
    page.wait_for_function(
        """([island, tick]) => {
            const c = document.querySelector(`section[data-island='${island}'] canvas.chart`);
            return c !== null && Number(c.dataset.lastTick) >= tick;
        }""",
        arg=[island, last_tick],
        timeout=WAIT_MS,
    )


@pytest.mark.e2e
def test_dashboard_draws_the_chart_and_moves_with_ticks(
    start_server: StartServer, page: Page, tmp_path: Path
) -> None:
    # 30-minute ticks: a VM window (1 h) lapses every other tick, so held nodes compete again
    # and the price-to-win ladder has rungs
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    contest(server)
    first = tick(server, 3)
    assert first["vwap"] > first["reserve_price"]  # a contested market: prices above reserve

    response = page.goto(server.url + "/")
    assert response is not None
    assert response.status == 200
    wait_for_tick(page, "ref", first["tick"])
    before = chart_state(page, "ref")
    assert before == {"points": 3, "last_tick": first["tick"]}
    page.screenshot(path=str(tmp_path / "before.png"), full_page=True)

    after_ticks = tick(server, 4)
    wait_for_tick(page, "ref", after_ticks["tick"])
    after = chart_state(page, "ref")
    assert after == {"points": 7, "last_tick": first["tick"] + 4}

    section = page.locator("section[data-island='ref']")
    assert section.locator(".vwap").inner_text() == f"{after_ticks['vwap']:.4f}"
    assert section.locator(".held-n").inner_text() == str(after_ticks["gpus"])
    assert section.locator(".pending-n").inner_text() == str(after_ticks["pending_gpus"])
    # the last-ticks table, newest first, and the price-to-win ladder
    rows = section.locator("table.ticks tbody tr")
    assert rows.count() == 7
    assert rows.first.locator("td").first.inner_text() == str(after_ticks["tick"])
    ladder = ok(server.client.get("/api/market/ladder", params={"island": "ref"}))
    assert ladder["tick"] == after_ticks["tick"]
    assert ladder["rungs"]
    first_rung = section.locator("table.ladder tbody tr").first.locator("td")
    assert first_rung.nth(0).inner_text() == "1"
    assert first_rung.nth(2).inner_text() == f"{ladder['rungs'][0]['price_per_gpu_hour']:.4f}"
    assert page.locator("#status").get_attribute("data-state") == "live"

    shot = tmp_path / "after.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


@pytest.mark.e2e
def test_dashboard_picks_up_an_island_created_after_the_page_loaded(
    server: Server, page: Page
) -> None:
    tick(server)
    page.goto(server.url + "/")
    wait_for_tick(page, "ref", 1)
    body = {"gpus_per_node": 4, "nodes": 8, "reserve_price": 2.5}
    ok(server.client.put("/api/admin/islands/late", json=body, headers=server.operator()))
    done = {stats["island"]: stats for stats in tick(server, 2)["islands"]}
    assert done["late"]["tick"] == 2  # its own tick numbers
    wait_for_tick(page, "late", 2)
    section = page.locator("section[data-island='late']")
    assert "8 nodes × 4 GPUs" in section.locator(".name").inner_text()
    assert section.locator(".reserve").inner_text() == "2.5000"
