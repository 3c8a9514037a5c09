"""The first five minutes in the console, as a newcomer does them on `make run`: signed in with
the tokens `serve --simulate` printed as yours, each step one action on the page, with the
simulated market moving all along; what you declare stays as you declared it."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

from tests.browser.support import WAIT_MS, settled, sign_in
from tests.conftest import Server, StartServer
from tests.e2e.support import bearer, ok
from tests.simulation.announced import announced

GRANT_MS = 90_000
"""Long enough for the windows of the simulation's nodes to end (an hour of market time), and
for the ticks below on a busy machine."""
TICKS = 60


def tick_of(server: Server) -> int:
    return int(ok(server.client.get("/api/market/stats", params={"island": "ref"}))["tick"])


def test_the_first_five_minutes_on_the_console_as_your_tenants(
    start_server: StartServer, page: Page, tmp_path: Path
) -> None:
    # 60x market time: the page reads its cluster after every tick, within the token's rate
    server = start_server("--simulate", "--speed", "60", operator_token=None)
    said = announced(server)
    vm, k8s = said.your("you-ref-vm"), said.your("you-ref-k8s")
    sign_in(page, server, bearer(vm.token))
    assert page.locator("#who-cluster").inner_text() == "you-ref-vm"
    card = page.locator("#first-five")
    assert card.is_visible()
    steps = card.locator("li")
    assert [steps.nth(i).get_attribute("data-for") for i in range(5)] == [
        "vm",
        "k8s",
        "k8s",
        "vm",
        "any",
    ]
    assert steps.nth(0).inner_text().startswith("Declare capacity")

    # 1. declare capacity, and watch it granted; then many ticks, and it is still as declared
    form = page.locator("#declare")
    form.locator("input[name=max_gpus]").fill("32")
    form.locator("input[name=price]").fill("5")
    form.locator("button[type=submit]").click()
    page.wait_for_function(
        "() => document.getElementById('held').dataset.held === '32'", timeout=GRANT_MS
    )
    declared = "of 32 declared at most 5.0000 USD/GPU-h"
    holding = page.locator("#held .holding")
    assert holding.inner_text().startswith(f"Holding 32 GPUs (4 nodes) {declared}")
    settled(page, tick_of(server) + TICKS, GRANT_MS)
    assert declared in holding.inner_text()
    capacity = ok(server.client.get("/api/vm/capacity", headers=bearer(vm.token)))
    assert (capacity["max_gpus"], capacity["max_price_per_gpu_hour"]) == (32, 5.0)
    page.screenshot(path=str(tmp_path / "vm-first-five.png"), full_page=True)

    # 4. set a spend limit, and meet it: 64 GPUs do not fit, said in words
    spend = page.locator("#spend")
    spend.locator("input[name=usd]").fill("200")
    spend.locator("button[type=submit]").click()
    page.wait_for_function(
        "() => document.querySelector('#spend dd[data-figure=limit]').innerText"
        " === '200.00 USD per day'",
        timeout=WAIT_MS,
    )
    form.locator("input[name=max_gpus]").fill("64")
    form.locator("button[type=submit]").click()
    page.wait_for_function(
        "() => document.querySelector('#declare .refusal[role=alert]').innerText"
        ".startsWith('This would commit')",
        timeout=WAIT_MS,
    )
    assert (
        "of your spend limit of 200.00 USD per day"
        in form.locator(".refusal[role=alert]").inner_text()
    )

    # dismissed, the card stays so in this browser
    card.locator("button.dismiss").click()
    assert card.is_hidden()
    page.reload()
    page.locator("#console").wait_for(state="visible", timeout=WAIT_MS)
    assert card.is_hidden()

    # 2. and 3. as your Kubernetes tenant: a job, then a base load block on ref
    page.click("#sign-out")
    sign_in(page, server, bearer(k8s.token))
    assert page.locator("#who-cluster").inner_text() == "you-ref-k8s"
    new_job = page.locator("#jobs form.new-job")
    new_job.locator("input[name=name]").fill("first-job")
    new_job.locator("input[name=nodes]").fill("2")
    new_job.locator("input[name=price]").fill("5")
    new_job.locator("button[type=submit]").click()
    job = page.locator("#jobs .job[data-job='first-job']")
    job.wait_for(timeout=WAIT_MS)
    page.wait_for_function(
        "() => document.querySelector(\"#jobs .job[data-job='first-job']\").dataset.state"
        " === 'running'",
        timeout=GRANT_MS,
    )
    page.locator("#buy td[data-size='8'][data-term='24'] button").click()
    assert page.locator("#buy .pick-price").inner_text() == (
        "8 GPUs (1 node) for 1 day (24 h) at 1.6000 USD/GPU-h: 307.20 USD for the whole "
        "block, starting at once."
    )
    page.locator("#buy button.buy-button").click()
    page.wait_for_function(
        "() => document.getElementById('buy').dataset.folded === 'true'", timeout=WAIT_MS
    )
    job.locator(".events li[data-type='FoldedIntoBlock']").wait_for(timeout=WAIT_MS)
    assert ok(server.client.get("/api/base-load", headers=bearer(k8s.token)))["live"]["gpus"] == 8
    page.screenshot(path=str(tmp_path / "k8s-first-five.png"), full_page=True)

    # 5. the dashboard, from the console
    page.evaluate("() => localStorage.clear()")
    page.reload()
    page.locator("#first-five").wait_for(state="visible", timeout=WAIT_MS)
    page.locator("#first-five a[href='/']").click()
    page.locator("section[data-island='ref']").wait_for(timeout=WAIT_MS)
