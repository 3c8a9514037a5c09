"""What the console's browser tests share: signing in, and waiting for the page to follow a
tick."""

from __future__ import annotations

from playwright.sync_api import Page

from tests.conftest import Server

WAIT_MS = 20_000


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
    """The page has read the cluster's own state again after the island's tick `island_tick`."""
    page.wait_for_function(
        "(n) => Number(document.body.dataset.refreshedTick || 0) >= n",
        arg=island_tick,
        timeout=timeout_ms,
    )
