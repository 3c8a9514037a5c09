"""The console explains what it shows (issue 25), in a real headless Chromium against one real
manual-clock server for the module: a VM tenant and a Kubernetes tenant read why they pay what
they pay, what their jobs on the block pay, why a job waits, and a page laid out so nothing is
clipped at 1366 px or at a phone's width. Screenshots at both widths go to each test's output
folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.support import (
    PHONE,
    WAIT_MS,
    OpenPage,
    island_of,
    moment,
    no_sideways_scroll,
    run_tick,
    settled,
    sign_in,
    usd,
    utc,
)
from tests.conftest import Server
from tests.e2e.support import declare, make_account, make_cluster, ok, set_bid


def account_card(page: Page) -> dict[str, str]:
    terms = page.locator("#account dt").all_inner_texts()
    return dict(zip(terms, page.locator("#account dd").all_inner_texts(), strict=True))


def unclipped(page: Page, card: str) -> None:
    """Every table of the card shows all its columns: none scrolls sideways in its card."""
    widths = page.eval_on_selector_all(
        f"{card} .scroll", "(boxes) => boxes.map((b) => [b.scrollWidth, b.clientWidth])"
    )
    assert widths, card
    for scroll, client in widths:
        assert scroll <= client, (card, widths)


def top(page: Page, selector: str) -> float:
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return float(box["y"])


@pytest.mark.e2e
def test_a_vm_page_leads_with_its_capacity_and_says_why_its_rate_is_not_its_lock(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    island = "exp-vm"
    island_of(server, island, 4)
    make_account(server, "exp-vm-acct", 5000)
    auth = make_cluster(server, "exp-vm-acct", island, "vm", "exp-vm-one")
    make_account(server, "exp-vm-rival", 5000)
    rival = make_cluster(server, "exp-vm-rival", island, "vm", "exp-vm-two")

    page = open_page()
    page.goto(server.url + "/console")
    assert page.locator("#who").is_hidden()  # signed out: no cluster, account, island, Sign out
    assert page.locator("#sign-out").is_hidden()
    sign_in(page, server, auth)
    assert page.locator("#who").is_visible()
    # what a VM cluster can do comes first; base load (for Kubernetes clusters) after it
    assert top(page, "#preemptible") < top(page, "#base-load")
    assert page.locator("#base-load-note").inner_text() == (
        "Base load blocks are for Kubernetes clusters: this VM cluster holds capacity in the "
        "Preemptible section above."
    )
    # nothing billed yet: the chart's axis reads one zero, not three
    chart = page.locator("#billing canvas.spend-chart")
    assert chart.get_attribute("data-axis") == "0.00"

    receipt = page.locator("#receipt")
    assert receipt.locator(".receipt-head").inner_text() == (
        "No market nodes held at a tick yet: nothing billed on the market to explain."
    )

    # the island's 4 nodes to this cluster at 2.5, over a rival's node at 2.0: the rival's
    # bid is what they displace, so the rate is above the reserve and under the lock
    ok(declare(server, auth, 32, 2.5))
    ok(declare(server, rival, 8, 2.0))
    island_tick = run_tick(server, island)
    settled(page, island_tick)
    capacity = ok(server.client.get("/api/vm/capacity", headers=auth))
    assert capacity["held_gpus"] == 32
    assert {n["locked_price"] for n in capacity["nodes"]} == {2.5}
    assert capacity["rate"] == 1.25  # (the reserve on 32 GPUs + the rival's 8 over it) / 32
    held = page.locator("#held")
    assert held.locator(".holding").inner_text() == (
        "Holding 32 GPUs (4 nodes) of 32 declared at most 2.5000 USD/GPU-h; paying "
        "1.2500 USD/GPU-h now."
    )
    assert held.locator(".rate-why").inner_text() == (
        "Paying 1.2500 USD/GPU-h: the rate the last tick's auction priced for the 4 nodes you "
        "hold, what they keep other bids out of (the island's reserve at least), never above "
        "your ceiling of 2.5000 USD/GPU-h. Locked (2.5000) is the ceiling each node was won "
        "at: until its window ends no bid can take it, and it pays at most the higher of that "
        "lock and your ceiling now."
    )
    assert held.locator("table.nodes tbody tr").count() == 4
    # why this rate: the tick's receipt, its parts adding up to what the tick billed
    (read,) = ok(server.client.get("/api/receipts", params={"tick": island_tick}, headers=auth))
    parts = read["parts"]
    assert parts["displaced"] > 0
    assert read["displaced"] == [{"price": 2.0, "nodes": 1}]
    assert receipt.get_attribute("data-tick") == str(island_tick)
    assert receipt.locator(".receipt-head").inner_text() == (
        f"Tick {island_tick} at {utc(read['time'])}: 4 market nodes (32 GPUs) at 1.2500 "
        f"USD/GPU-h, {read['amount_usd']:.6f} USD for the tick's interval, in these parts:"
    )
    rows = receipt.locator("tbody tr")
    assert [rows.nth(i).locator("td").all_inner_texts() for i in range(rows.count())] == [
        ["reserve", f"{parts['reserve']:.6f} USD", "the island's reserve price on the nodes won"],
        [
            "displaced",
            f"{parts['displaced']:.6f} USD",
            "the bids your won nodes keep out: 1 node bid 2.0000",
        ],
        [
            "core addition",
            f"{parts['core']:.6f} USD",
            "none: no group of other bids offered more than the winners pay",
        ],
        ["protected", f"{parts['protected']:.6f} USD", "no node held under its window"],
        [
            "billed",
            f"{read['amount_usd']:.6f} USD",
            "the sum: what the tick billed for these nodes",
        ],
    ]
    # the account card: the account's money and this cluster's window, as the API reads them
    account = ok(server.client.get("/api/account", headers=auth))
    assert account["rate_usd_per_hour"] == 40.0  # 32 GPUs at 1.25
    assert account_card(page) == {
        "balance": usd(account["balance_usd"]),
        "deposit held": "none",
        "owed by wire": "nothing",
        "billing hold": "none",
        "spent (24 h window)": usd(account["spent_24h_usd"]),
        "committed": usd(account["committed_usd"]),
        "rate": "40.00 USD per hour (the account's clusters, market and base load)",
        "runway": f"{account['runway_hours'] / 24:.1f} days "
        f"({round(account['runway_hours'])} h) at that rate",
    }
    unclipped(page, "#held")
    unclipped(page, "#ladder")
    assert chart.get_attribute("data-axis") != "0.00"  # billed now: a scale
    no_sideways_scroll(page)
    page.screenshot(path=str(tmp_path / "vm-explained.png"), full_page=True)

    phone = open_page(PHONE)
    sign_in(phone, server, auth)
    assert top(phone, "#preemptible") < top(phone, "#base-load")
    no_sideways_scroll(phone)
    phone.screenshot(path=str(tmp_path / "vm-explained-phone.png"), full_page=True)


def block_of(server: Server, cluster: str, nodes: int) -> Any:
    body = {"nodes": nodes, "rate_per_gpu_hour": 2.0, "term_hours": 24}
    path = f"/api/admin/clusters/{cluster}/base-load"
    return ok(server.client.post(path, json=body, headers=server.operator()), 201)


def job_of(server: Server, auth: dict[str, str], **body: Any) -> Any:
    return ok(server.client.post("/api/k8s/jobs", json=body, headers=auth), 201)


def jobs_of(server: Server, auth: dict[str, str]) -> dict[str, Any]:
    return {j["name"]: j for j in ok(server.client.get("/api/k8s/jobs", headers=auth))}


@pytest.mark.e2e
def test_jobs_say_what_they_pay_on_the_block_and_the_market_and_why_they_wait(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    island, cluster = "exp-k8s", "exp-k8s-k"
    island_of(server, island, 4)
    operator = server.operator()
    ok(
        server.client.put(
            f"/api/admin/islands/{island}", json={"base_load_cap": 2}, headers=operator
        )
    )
    make_account(server, "exp-k8s-acct", 10_000)
    auth = make_cluster(server, "exp-k8s-acct", island, "k8s", cluster)
    path = f"/api/admin/clusters/{cluster}/base-load/packing"
    ok(server.client.put(path, json={"enabled": True}, headers=operator))
    block = block_of(server, cluster, 1)
    set_bid(server, auth, 3.0)
    job_of(server, auth, name="on-block", nodes=1)
    run_tick(server, island)  # the block's node takes the whole-node job
    job_of(server, auth, name="market", nodes=1)
    job_of(server, auth, name="one-pod", pods=1, gpus_per_pod=2)
    job_of(server, auth, name="two-pods", pods=2, gpus_per_pod=2)
    island_tick = run_tick(server, island)
    jobs = jobs_of(server, auth)
    assert (jobs["on-block"]["block"], jobs["on-block"]["rate"]) == (block["id"], None)
    assert jobs["market"]["state"] == "running"
    assert (jobs["market"]["block"], jobs["market"]["rate"]) == (None, 1.0)
    assert {jobs[n]["reason"] for n in ("one-pod", "two-pods")} == {"ReservedBusy"}

    page = open_page()
    sign_in(page, server, auth)
    settled(page, island_tick)

    def line(name: str) -> Any:
        return page.locator(f"#jobs .job[data-job='{name}']")

    on_block = line("on-block")
    assert on_block.locator(".pays").inner_text() == "on the base load block at 2.0000 USD/GPU-h"
    assert on_block.locator(".limit").count() == 0  # it never bid
    assert "no rate" not in page.locator("#jobs").inner_text()
    market = line("market")
    assert market.locator(".pays").inner_text() == "paying 1.0000 USD/GPU-h"
    assert market.locator(".limit").inner_text() == "bids up to 3.0000 USD/GPU-h"
    assert "1 pod × 2 GPUs" in line("one-pod").inner_text()
    assert "2 pods × 2 GPUs" in line("two-pods").inner_text()
    assert line("one-pod").locator(".limit").count() == 0  # pods never bid
    busy = f"Waiting for room on the base load block {block['id']}: its 8 GPUs are all busy."
    assert line("one-pod").locator(".why").inner_text() == busy
    page.screenshot(path=str(tmp_path / "k8s-explained.png"), full_page=True)

    # Finish asks first: kept, the job runs on; confirmed, it finishes
    market.locator("button.finish").click()
    confirm = market.locator(".confirm")
    confirm.wait_for(timeout=WAIT_MS)
    assert confirm.inner_text().startswith("Finish market? It stops now and its nodes go idle.")
    settled(page, run_tick(server, island))  # the question outlives the tick's redraw
    assert market.locator(".confirm").is_visible()
    assert jobs_of(server, auth)["market"]["state"] == "running"
    market.locator("button.keep").click()
    market.locator("button.finish").wait_for(timeout=WAIT_MS)
    assert jobs_of(server, auth)["market"]["state"] == "running"
    market.locator("button.finish").click()
    market.locator("button.finish-yes").click()
    page.wait_for_function(
        "() => document.querySelector(\"#jobs .job[data-job='market']\").dataset.state"
        " === 'finished'",
        timeout=WAIT_MS,
    )
    ok(server.client.delete("/api/k8s/jobs/on-block", headers=auth))

    # the block's node free again: the pods run on it, read as GPUs of that node
    settled(page, run_tick(server, island))
    jobs = jobs_of(server, auth)
    assert jobs["one-pod"]["state"] == "running"
    node = jobs["one-pod"]["node_ids"][0]
    assert line("one-pod").locator(".held-nodes").inner_text() == f"2 GPUs of node {node}"
    assert line("two-pods").locator(".held-nodes").inner_text() == (
        f"4 GPUs of node {jobs['two-pods']['node_ids'][0]}"
    )
    text = page.locator("#jobs").inner_text()
    assert "0 nodes" not in text
    assert "nodes=0" not in text
    unclipped(page, "#ladder")
    page.screenshot(path=str(tmp_path / "k8s-explained-after.png"), full_page=True)

    phone = open_page(PHONE)
    sign_in(phone, server, auth)
    no_sideways_scroll(phone)
    phone.screenshot(path=str(tmp_path / "k8s-explained-phone.png"), full_page=True)


def ladder_cells(page: Page) -> dict[int, list[str]]:
    rows = page.locator("#ladder tbody tr")
    return {
        int(rows.nth(i).get_attribute("data-nodes") or 0): rows.nth(i)
        .locator("td")
        .all_inner_texts()
        for i in range(rows.count())
    }


@pytest.mark.e2e
def test_the_own_ladder_says_from_when_and_cheaper_later_and_why_the_bid_waits(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    island = "exp-later"
    island_of(server, island, 4)
    clusters = {}
    for name in ("early", "late", "new"):
        make_account(server, f"exp-later-{name}", 5000)
        clusters[name] = make_cluster(server, f"exp-later-{name}", island, "vm", f"exp-{name}")
    # two nodes locked at 2.5 a tick before two locked at 1.5: the newcomer's 2 nodes are
    # dear when the first windows lapse and cheaper when the second do, a tick later
    ok(declare(server, clusters["early"], 16, 2.5))
    run_tick(server, island)
    ok(declare(server, clusters["late"], 16, 1.5))
    island_tick = run_tick(server, island)
    newcomer = clusters["new"]
    own = ok(server.client.get("/api/ladder", headers=newcomer))
    assert own["held_nodes"] == 0
    rung = next(r for r in own["rungs"] if r["nodes"] == 2)
    assert rung["contestable_at"] is not None
    cheaper = [x for x in rung["later"] if x["price_per_gpu_hour"] < rung["price_per_gpu_hour"]]
    assert cheaper, rung
    low = min(cheaper, key=lambda x: (x["price_per_gpu_hour"], x["at"]))

    page = open_page()
    sign_in(page, server, newcomer)
    settled(page, island_tick)
    today = own["time"]
    shown = ladder_cells(page)
    assert sorted(shown) == [r["nodes"] for r in own["rungs"]][:12]
    assert shown[2] == [
        "2",
        f"{rung['price_per_gpu_hour']:.4f}",
        f"{rung['usd_per_hour']:,.2f}",
        f"from {moment(rung['contestable_at'], today)}",
        f"cheaper at {moment(low['at'], today)}: {low['price_per_gpu_hour']:.4f}",
    ]
    assert "next tick" not in [cells[3] for cells in shown.values()]  # nothing is free
    unclipped(page, "#ladder")

    # the newcomer bids 2.0 for 2 nodes: it waits, and the page says why with the figures
    ok(declare(server, newcomer, 16, 2.0))
    island_tick = run_tick(server, island)
    settled(page, island_tick)
    capacity = ok(server.client.get("/api/vm/capacity", headers=newcomer))
    reason, detail = capacity["pending_reason"], capacity["pending_detail"]
    assert reason in ("windows", "outbid"), (reason, detail)
    today = ok(server.client.get("/api/ladder", headers=newcomer))["time"]
    if reason == "windows":
        words = (
            f"Windows hold the nodes: 2 nodes can be won from "
            f"{moment(detail['contestable_at'], today)} at {detail['price_then']:.4f} USD/GPU-h, "
            "within the ceiling of 2.0000 USD/GPU-h; until then no bid can take them."
        )
    else:
        then = detail.get("contestable_at")
        words = (
            f"Outbid: 2 nodes take {detail['price_to_win']:.4f} USD/GPU-h"
            + (
                f" from {moment(then, today)}, when windows let them go"
                if then
                else " at the next tick"
            )
            + ", above the ceiling of 2.0000 USD/GPU-h: raise it to win them, or wait for the "
            "price to fall."
        )
    assert page.locator("#held .pending-why").inner_text() == f"16 GPUs pending. {words}"
    page.screenshot(path=str(tmp_path / "own-ladder.png"), full_page=True)

    phone = open_page(PHONE)
    sign_in(phone, server, newcomer)
    no_sideways_scroll(phone)
    phone.screenshot(path=str(tmp_path / "own-ladder-phone.png"), full_page=True)
