"""What the console's browser tests share: signing in, and waiting for the page to follow a
tick."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.conftest import Server
from tests.e2e.support import ok, tick

WAIT_MS = 20_000
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}

OpenPage = Callable[..., Page]
"""`open_page(viewport=DESKTOP)` (tests/browser/conftest.py): a page in a context of its own."""


def token_of(auth: dict[str, str]) -> str:
    return auth["Authorization"].removeprefix("Bearer ")


def sign_in(page: Page, server: Server, auth: dict[str, str], through: str = "") -> None:
    """Signed in to the console of `server` (or of the address `through` that leads to it)."""
    page.goto((through or server.url) + "/console")
    page.fill("#token", token_of(auth))
    page.click("#sign-in button[type=submit]")
    page.locator("#console").wait_for(state="visible", timeout=WAIT_MS)
    page.wait_for_function(
        "() => document.body.dataset.refreshedTick !== undefined", timeout=WAIT_MS
    )


def settled(page: Page, island_tick: int, timeout_ms: int = WAIT_MS) -> None:
    """The page has read the cluster's own state again after the island's tick `island_tick`.
    It fails once `timeout_ms` pass with the page reading no newer tick: a busy machine slows
    the ticks, it does not stop them."""
    read = "() => Number(document.body.dataset.refreshedTick || 0)"
    seen = int(page.evaluate(read))
    while True:
        try:
            page.wait_for_function(
                "(n) => Number(document.body.dataset.refreshedTick || 0) >= n",
                arg=island_tick,
                timeout=timeout_ms,
            )
            return
        except PlaywrightTimeoutError:
            now = int(page.evaluate(read))
            if now <= seen:
                raise
            seen = now  # still moving on: wait again


def island_of(server: Server, island: str, nodes: int, node_spec: Any = None) -> None:
    """An island of `nodes` 8-GPU nodes at a reserve of 1 USD per GPU-hour."""
    body: dict[str, Any] = {"gpus_per_node": 8, "nodes": nodes, "reserve_price": 1.0}
    if node_spec is not None:
        body["node_spec"] = node_spec
    ok(server.client.put(f"/api/admin/islands/{island}", json=body, headers=server.operator()))


def run_tick(server: Server, island: str, count: int = 1) -> int:
    """Ticks of the whole market; the island's tick number after them."""
    return int(tick(server, count, island=island)["tick"])


def no_sideways_scroll(page: Page) -> None:
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width


def moment(iso: str, today: str) -> str:
    """A time as the console writes it beside the latest tick's (`today`): its time of day, with
    seconds only when it has some, and the date too on another day (api.js `moment`)."""
    hms = iso[11:16] if iso[17:19] == "00" else iso[11:19]
    return hms if iso[:10] == today[:10] else f"{iso[5:10]} {hms}"


def usd(value: float) -> str:
    """An amount as the console writes it."""
    return f"{value:,.2f} USD"


def utc(iso: str) -> str:
    """A time as the console writes it in full (to the minute)."""
    return iso[:16].replace("T", " ")
