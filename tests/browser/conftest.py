"""A real headless Chromium (Debian's, driven by Playwright, never a browser download of
Playwright's own) for the pages' tests; a page fails its test on any script error."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.browser.support import DESKTOP, OpenPage

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


@pytest.fixture
def open_page(browser: Browser) -> Iterator[OpenPage]:
    """Pages in contexts of their own (a tab each: nothing of one reaches another), failing the
    test on any script error."""
    contexts = []
    errors: list[str] = []

    def open_(viewport: dict[str, int] = DESKTOP) -> Page:
        context = browser.new_context(viewport=viewport, accept_downloads=True)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        return page

    yield open_
    for context in contexts:
        context.close()
    assert not errors, errors
