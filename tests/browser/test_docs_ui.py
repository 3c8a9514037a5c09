"""The API docs page (Swagger UI) in a real headless Chromium against a real server, with every
request off the server blocked: its script and styles come from the package, and it lists every
operation of the OpenAPI document, each with its body, answers and the bearer scheme."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route

from tests.conftest import Server
from tests.constants import OPERATIONS
from tests.e2e.support import ok

WAIT_MS = 30_000


def offline(page: Page, server: Server) -> tuple[list[str], list[str]]:
    """Block every request to anywhere but the server; (blocked, served) urls."""
    home = urlsplit(server.url).netloc
    blocked: list[str] = []
    served: list[str] = []

    def route(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).netloc == home:
            served.append(url)
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    page.route("**/*", route)
    return blocked, served


def operations(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in doc["paths"].items()
        for method in item
        if method in ("get", "put", "post", "patch", "delete")
    }


@pytest.mark.parametrize("path", ["/schema", "/schema/swagger"])
def test_the_docs_ui_renders_offline_and_lists_every_operation(
    server: Server, page: Page, path: str
) -> None:
    doc = ok(server.client.get("/schema/openapi.json"))
    blocked, served = offline(page, server)
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))

    response = page.goto(server.url + path)
    assert response is not None
    assert response.status == 200
    page.locator(".opblock").first.wait_for(timeout=WAIT_MS)
    assert page.locator(".info .title").inner_text().startswith("burstmarket")

    shown = {
        (
            block.locator(".opblock-summary-method").inner_text().strip(),
            block.locator(".opblock-summary-path").inner_text().replace("\u200b", "").strip(),
        )
        for block in page.locator(".opblock").all()
    }
    assert shown == operations(doc)
    assert len(shown) == OPERATIONS
    # the styles are the package's: Swagger UI's own rules apply
    radius = page.locator(".opblock").first.evaluate("e => getComputedStyle(e).borderRadius")
    assert radius == "4px"
    assert page.locator(".authorize").count() == 1  # the bearer scheme: one Authorize button

    # an operation opens with its request body and its refusals
    put = page.locator(".opblock-put").filter(has_text="/api/vm/capacity").first
    put.locator(".opblock-summary").click()
    put.locator(".responses-table").first.wait_for(timeout=WAIT_MS)
    text = put.inner_text()
    for expected in (
        "max_gpus",
        "max_price_per_gpu_hour",
        "release",
        "402",
        "409",
        "422",
        "off-grid",
        "bid-too-low",
    ):
        assert expected in text, expected

    assert blocked == []
    assert failed == []
    assert any(url.endswith("/static/docs-ui/swagger-ui-bundle.js") for url in served)
    assert any(url.endswith("/static/docs-ui/swagger-ui.css") for url in served)
