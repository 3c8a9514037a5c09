"""The tenant console (/console) in a real headless Chromium (Debian's, driven by Playwright)
against one real manual-clock server for the module: a VM tenant and Kubernetes tenants sign in
with their cluster tokens and do everything through the page, which shows the API's answers
and refusals in words (demand the tick holds back among them); one reaches the server through
a forwarder the test cuts, so the page's feed drops and comes back. Each test works on islands,
accounts and clusters of its own and leaves screenshots in its output folder."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Iterator
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
from tests.e2e.support import (
    buy,
    declare,
    make_account,
    make_cluster,
    ok,
    post_offers,
    set_bid,
    submit_job,
)

NODE_SPEC = {
    "cpu": "240 vCPUs, AMD EPYC (Turin)",
    "gpus": "8x AMD MI355X 288 GB OAM",
    "network": "3200 Gbps scale-out",
}


def island_of_8_gpu_nodes(server: Server, island: str, nodes: int) -> None:
    island_of(server, island, nodes, NODE_SPEC)


def alert(page: Page, card: str) -> str:
    box = page.locator(f"{card} .refusal[role=alert]")
    box.wait_for(state="visible", timeout=WAIT_MS)
    return box.inner_text()


@pytest.mark.e2e
def test_a_wrong_token_is_refused_on_the_sign_in_form(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    page = open_page()
    page.goto(server.url + "/console")
    assert page.locator("#console").is_hidden()
    refused_before = len(server.refused_lines())
    page.fill("#token", "not-a-token-of-anyone")
    page.click("#sign-in button[type=submit]")
    message = page.locator("#sign-in-error")
    message.wait_for(state="visible", timeout=WAIT_MS)
    assert message.inner_text() == "This token is not known: check it and sign in again."
    assert page.locator("#console").is_hidden()
    assert page.url == server.url + "/console"  # the token never goes into an address
    assert page.evaluate("() => sessionStorage.length") == 0  # nor is it kept
    refused = server.refused_lines()[refused_before:]
    assert [line.split()[1] for line in refused] == ["reason=unauthorized"]
    assert "not-a-token-of-anyone" not in server.log()
    page.screenshot(path=str(tmp_path / "wrong-token.png"), full_page=True)


@pytest.mark.e2e
def test_a_vm_tenant_declares_is_refused_in_words_sets_a_spend_limit_and_sees_the_grant(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    island = "con-vm"
    island_of_8_gpu_nodes(server, island, 8)
    make_account(server, "con-vm-acct", 5000)
    auth = make_cluster(server, "con-vm-acct", island, "vm", "con-vm-one")
    run_tick(server, island)
    page = open_page()
    sign_in(page, server, auth)
    assert page.locator("#who-cluster").inner_text() == "con-vm-one"
    assert page.locator("#who-kind").inner_text() == "VM cluster"
    assert (
        page.locator("#base-load-note")
        .inner_text()
        .startswith("Base load blocks are for Kubernetes clusters")
    )
    assert page.locator("#specs .spec-lines li").all_inner_texts() == [
        "8 nodes × 8 GPUs on island con-vm",
        "CPU: 240 vCPUs, AMD EPYC (Turin)",
        "GPUs: 8x AMD MI355X 288 GB OAM",
        "Network: 3200 Gbps scale-out",
    ]
    assert page.locator("#jobs").is_hidden()  # a VM cluster has no jobs

    # off the node grid: flagged as typed, and the server's refusal explained once sent
    form = page.locator("#declare")
    form.locator("input[name=max_gpus]").fill("20")
    form.locator("input[name=price]").fill("2.5")
    assert form.locator(".off-grid").inner_text() == (
        "20 GPUs is not a whole number of 8-GPU nodes: 16 or 24 would be."
    )
    form.locator("button[type=submit]").click()
    assert alert(page, "#declare") == (
        "20 GPUs is not a whole number of nodes: nodes on this island have 8 GPUs each, so "
        "ask for 16 or 24 GPUs (the market never rounds)."
    )

    # under the reserve: bid-too-low, in words with both prices
    form.locator("input[name=max_gpus]").fill("32")
    assert form.locator(".off-grid").is_hidden()
    form.locator("input[name=price]").fill("0.5")
    form.locator("button[type=submit]").click()
    page.wait_for_function(
        "() => document.querySelector('#declare .refusal[role=alert]').innerText"
        ".includes('reserve')",
        timeout=WAIT_MS,
    )
    assert alert(page, "#declare") == (
        "0.5000 USD/GPU-h is under the island's reserve price of 1.0000 USD/GPU-h: such a bid "
        "could never win capacity."
    )

    # a spend limit, then a declaration whose worst case does not fit it
    spend = page.locator("#spend")
    spend.locator("input[name=usd]").fill("10")
    spend.locator("button[type=submit]").click()
    limit = spend.locator("dd[data-figure=limit]")
    page.wait_for_function(
        "() => document.querySelector('#spend dd[data-figure=limit]').innerText !== 'none'",
        timeout=WAIT_MS,
    )
    assert limit.inner_text() == "10.00 USD per day"
    assert spend.locator("dd[data-figure=left]").inner_text() == "10.00 USD"
    form.locator("input[name=price]").fill("2.5")
    form.locator("button[type=submit]").click()
    page.wait_for_function(
        "() => document.querySelector('#declare .refusal[role=alert]').innerText"
        ".startsWith('This would commit')",
        timeout=WAIT_MS,
    )
    said = alert(page, "#declare")
    found = re.fullmatch(
        r"This would commit ([\d,.]+) USD, and 10\.00 USD is left in this 24 h window of your "
        r"spend limit of 10\.00 USD per day\.",
        said,
    )
    assert found, said
    assert float(found[1].replace(",", "")) > 10

    # the limit removed, the same declaration goes through; a tick grants it
    spend.locator("button.remove").click()
    page.wait_for_function(
        "() => document.querySelector('#spend dd[data-figure=limit]').innerText === 'none'",
        timeout=WAIT_MS,
    )
    form.locator("button[type=submit]").click()
    held = page.locator("#held")
    page.wait_for_function(
        "() => document.querySelector('#held .pending-why').innerText.startsWith('32 GPUs')",
        timeout=WAIT_MS,
    )
    assert form.locator(".refusal[role=alert]").is_hidden()
    assert held.locator(".holding").inner_text().startswith("Holding 0 GPUs (0 nodes) of 32")
    settled(page, run_tick(server, island))
    capacity = ok(server.client.get("/api/vm/capacity", headers=auth))
    assert capacity["held_gpus"] == 32
    assert held.locator(".holding").inner_text() == (
        f"Holding 32 GPUs (4 nodes) of 32 declared at most 2.5000 USD/GPU-h; paying "
        f"{capacity['rate']:.4f} USD/GPU-h now."
    )
    assert held.locator(".pending-why").is_hidden()
    rows = held.locator("table.nodes tbody tr")
    shown = sorted(rows.nth(i).locator("td").all_inner_texts() for i in range(rows.count()))
    assert shown == sorted(
        [n["id"], utc(n["granted_at"]), utc(n["window_ends_at"]), f"{n['locked_price']:.4f}"]
        for n in capacity["nodes"]
    )

    # the own price to win beside the form: what 4 more nodes would cost, in one look
    ladder = ok(server.client.get("/api/ladder", headers=auth))
    assert ladder["held_nodes"] == 4
    rung = next(r for r in ladder["rungs"] if r["nodes"] == 4)
    assert rung["contestable_at"] is None  # 4 nodes are free
    form.locator("input[name=max_gpus]").fill("64")
    page.locator("#ladder tr[data-nodes='4']").wait_for(timeout=WAIT_MS)
    assert page.locator("#ladder tr.chosen").get_attribute("data-nodes") == "4"
    assert form.locator(".cost-now").inner_text() == (
        f"4 more nodes: {rung['price_per_gpu_hour']:.4f} USD/GPU-h, next tick; your whole "
        f"holding then {usd(rung['usd_per_hour'])} per hour"
    )
    assert page.locator("body").inner_text().count("UTC") == 1  # one clock, said once
    page.screenshot(path=str(tmp_path / "vm-console.png"), full_page=True)

    # the reserve overtakes the ceiling: the windows keep the nodes, and the page shows the
    # reclaim within a tick of their end, and why the GPUs now wait
    body = {"reserve_price": 3.0}
    ok(server.client.put(f"/api/admin/islands/{island}", json=body, headers=server.operator()))
    settled(page, run_tick(server, island))
    assert held.get_attribute("data-held") == "32"
    why = held.locator(".pending-why")
    ends = max(n["window_ends_at"] for n in capacity["nodes"])
    while ok(server.client.get("/api/market/stats", params={"island": island}))["time"] < ends:
        settled(page, run_tick(server, island))
    assert ok(server.client.get("/api/vm/capacity", headers=auth))["held_gpus"] == 0
    assert held.get_attribute("data-held") == "0"
    assert held.locator("table.nodes tbody tr").count() == 0
    assert why.inner_text().startswith("32 GPUs pending. Bid too low")

    # a phone's width: every card one under another, nothing runs off the side
    phone = open_page(PHONE)
    sign_in(phone, server, auth)
    phone.locator("#held .pending-why").wait_for(timeout=WAIT_MS)
    no_sideways_scroll(phone)
    phone.screenshot(path=str(tmp_path / "vm-console-phone.png"), full_page=True)


def offers_island(server: Server, island: str) -> None:
    """16 nodes, 6 reservable: 4 of them held by another account's block, so 2 are free."""
    island_of_8_gpu_nodes(server, island, 16)
    post_offers(
        server,
        island,
        [(8, 24, 2.0), (8, 720, 2.0), (16, 24, None), (24, 24, 2.0), (32, 24, 2.0), (64, 24, 2.0)],
        reservable_nodes=6,
    )


def cell(page: Page, size: int, term: int) -> Any:
    return page.locator(f"#buy td[data-size='{size}'][data-term='{term}']")


@pytest.mark.e2e
def test_kubernetes_tenants_buy_blocks_run_a_job_and_read_their_billing(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    island = "con-k8s"
    offers_island(server, island)
    make_account(server, "con-other", 100_000)
    other = make_cluster(server, "con-other", island, "k8s", "con-other-k")
    other_block = ok(buy(server, other, 32, 24), 201)
    make_account(server, "con-small", 1000)  # covers a 384 USD block
    small = make_cluster(server, "con-small", island, "k8s", "con-small-k")
    make_account(server, "con-big", 10_500)  # a 11,520 USD block needs a deposit and a wire
    big = make_cluster(server, "con-big", island, "k8s", "con-big-k")
    run_tick(server, island)

    page = open_page()
    sign_in(page, server, small)
    assert page.locator("#who-kind").inner_text() == "Kubernetes cluster"
    assert page.locator("#declare").is_hidden()  # no VM declaration on a Kubernetes cluster
    assert page.locator("#your-block .live-block").inner_text().startswith("No live block")
    # the grid as the API says it: priced cells, sold out, sold out until, not available
    assert cell(page, 8, 24).inner_text() == "2.0000 USD/GPU-h"
    assert cell(page, 8, 720).inner_text() == "2.0000 USD/GPU-h"
    assert cell(page, 16, 24).inner_text() == "sold out"
    until = utc(other_block["ends_at"])
    assert cell(page, 24, 24).inner_text() == f"sold out until {until}"
    assert cell(page, 32, 24).inner_text() == f"sold out until {until}"
    assert cell(page, 64, 24).inner_text() == "not available on this island"
    assert page.locator("#buy thead th").all_inner_texts() == [
        "size",
        "1 day (24 h)",
        "30 days (720 h)",
    ]

    # a block the balance covers: its price, no deposit; Buy, and the card folds
    cell(page, 8, 24).locator("button").click()
    pick = page.locator("#buy .pick")
    assert pick.locator(".pick-price").inner_text() == (
        "8 GPUs (1 node) for 1 day (24 h) at 2.0000 USD/GPU-h: 384.00 USD for the whole "
        "block, starting at once."
    )
    assert pick.locator(".pick-deposit").is_hidden()
    pick.locator("button.buy-button").click()
    page.wait_for_function(
        "() => document.getElementById('buy').dataset.folded === 'true'", timeout=WAIT_MS
    )
    assert page.locator("#buy details.fold").get_attribute("open") is None  # folded
    assert page.locator("#buy .fold-line").inner_text() == (
        "This cluster holds a live block (above): another can be bought when it ends."
    )
    live = ok(server.client.get("/api/base-load", headers=small))["live"]
    figures = page.locator("#your-block dl.block-figures")
    assert figures.get_attribute("data-block") == live["id"]
    assert figures.locator("dd[data-figure=nodes]").inner_text() == "1 node (8 GPUs)"
    assert figures.locator("dd[data-figure=price]").inner_text() == "384.00 USD"
    assert figures.locator("dd[data-figure=ends]").inner_text() == utc(live["ends_at"])
    assert figures.locator("dd[data-figure=deposit]").inner_text() == (
        "none: the balance covered the price"
    )

    # a job through the page: the limit price, the job, a tick, then it finishes
    bid = page.locator("#bid")
    bid.locator("input[name=price]").fill("3")
    bid.locator("button[type=submit]").click()
    page.wait_for_function(
        "() => document.querySelector('#bid .bid-now').innerText.startsWith('Now 3.0000')",
        timeout=WAIT_MS,
    )
    new_job = page.locator("#jobs form.new-job")
    new_job.locator("input[name=name]").fill("train")
    new_job.locator("input[name=nodes]").fill("2")
    new_job.locator("button[type=submit]").click()
    job = page.locator("#jobs .job[data-job='train']")
    job.wait_for(timeout=WAIT_MS)
    assert job.get_attribute("data-state") == "pending"
    settled(page, run_tick(server, island))
    read = ok(server.client.get("/api/k8s/jobs/train", headers=small))
    assert read["state"] == "running"
    assert job.get_attribute("data-state") == "running"
    assert job.locator(".held-nodes").inner_text() == "2 nodes held"
    newest_first = sorted(read["events"], key=lambda e: e["at"], reverse=True)
    assert job.locator(".events li").evaluate_all(
        "(items) => items.map((li) => li.dataset.type)"
    ) == [e["type"] for e in newest_first]
    assert "Provisioned" in [e["type"] for e in newest_first]
    settled(page, run_tick(server, island, 2))
    job.locator("button.finish").click()
    job.locator("button.finish-yes").click()
    page.wait_for_function(
        "() => document.querySelector(\"#jobs .job[data-job='train']\").dataset.state"
        " === 'finished'",
        timeout=WAIT_MS,
    )
    assert job.locator(".events li").first.get_attribute("data-type") == "Finished"

    # billing: market and base load stacked, the rows as the API gives them, and the CSV
    settled(page, run_tick(server, island, 3))
    billing = page.locator("#billing")
    billing.locator("select[name=granularity]").select_option("1h")
    end = billing_query(page)
    rows = ok(server.client.get("/api/billing", params=end, headers=small))
    assert {r["kind"] for r in rows} == {"market", "base_load"}
    page.wait_for_function(
        "(n) => document.querySelectorAll('#billing tbody tr').length === n",
        arg=len(rows),
        timeout=WAIT_MS,
    )
    shown = billing.locator("tbody tr")
    assert [shown.nth(i).locator("td").all_inner_texts() for i in range(shown.count())] == [
        [
            utc(r["start"]),
            utc(r["end"]),
            r["kind"].replace("_", " "),
            f"{r['gpu_hours']:.2f}",
            f"{r['amount_usd']:.6f}",
        ]
        for r in rows
    ]
    canvas = billing.locator("canvas.spend-chart")
    hours_billed = {r["start"] for r in rows}
    assert canvas.get_attribute("data-bars") == str(len(hours_billed))
    assert (
        abs(float(canvas.get_attribute("data-total") or 0) - sum(r["amount_usd"] for r in rows))
        < 1e-6
    )
    with page.expect_download() as download:
        billing.locator("button.csv").click()
    csv_path = tmp_path / "billing.csv"
    download.value.save_as(csv_path)
    expected = server.client.get("/api/billing", params={**end, "format": "csv"}, headers=small)
    assert csv_path.read_bytes() == expected.content
    assert expected.text.count("\n") == len(rows) + 1
    page.screenshot(path=str(tmp_path / "k8s-console.png"), full_page=True)

    # the second tenant, on a phone: the balance does not cover the 30-day block, so a deposit
    # and a wire
    second = open_page(PHONE)
    sign_in(second, server, big)
    cell(second, 8, 720).locator("button").click()
    pick = second.locator("#buy .pick")
    assert (
        pick.locator(".pick-price")
        .inner_text()
        .endswith(": 11,520.00 USD for the whole block, starting at once.")
    )
    assert pick.locator(".pick-deposit").inner_text() == (
        "The balance does not cover the whole price: a security deposit of 10,000.00 USD is "
        "taken from it now, and 1,520.00 USD is to be wired by the next business day."
    )
    pick.locator("button.buy-button").click()
    second.wait_for_function(
        "() => document.getElementById('buy').dataset.folded === 'true'", timeout=WAIT_MS
    )
    block = ok(server.client.get("/api/base-load", headers=big))["live"]
    figures = second.locator("#your-block dl.block-figures")
    assert figures.locator("dd[data-figure=deposit]").inner_text() == (
        "10,000.00 USD (held: 10,000.00 USD)"
    )
    assert figures.locator("dd[data-figure='owed by wire']").inner_text() == (
        f"1,520.00 USD due by {utc(block['owed_by'])}"
    )
    # the account card says the same money from the account's side
    money = second.locator("#account")
    second.wait_for_function(
        "() => document.querySelector(\"#account dd[data-figure='deposit held']\")"
        ".innerText !== 'none'",
        timeout=WAIT_MS,
    )
    assert money.locator("dd[data-figure='deposit held']").inner_text() == (
        "10,000.00 USD (base load deposits, out of the balance)"
    )
    assert money.locator("dd[data-figure='owed by wire']").inner_text() == (
        f"1,520.00 USD due by {utc(block['owed_by'])}"
    )
    # a job of pods smaller than a node, on a cluster without packing: why it waits, in words
    new_job = second.locator("#jobs form.new-job")
    new_job.locator("input[name=name]").fill("tiny")
    new_job.locator("input[name=pods]").fill("2")
    new_job.locator("input[name=gpus_per_pod]").fill("2")
    new_job.locator("button[type=submit]").click()
    tiny = second.locator("#jobs .job[data-job='tiny']")
    tiny.wait_for(timeout=WAIT_MS)
    settled(second, run_tick(server, island))
    reason = ok(server.client.get("/api/k8s/jobs/tiny", headers=big))["reason"]
    assert reason == "PackingDisabled"
    assert tiny.locator(".why").inner_text() == (
        "Jobs smaller than a node need packing onto the block, which is not enabled for this "
        "cluster."
    )
    assert "2 pods × 2 GPUs" in tiny.inner_text()
    # now every reservable node is taken: the first tenant's folded card, opened, says so
    settled(page, run_tick(server, island))
    page.locator("#buy .fold-line").click()
    assert cell(page, 8, 24).inner_text().startswith("sold out until")
    no_sideways_scroll(second)
    second.screenshot(path=str(tmp_path / "k8s-console-deposit-phone.png"), full_page=True)

    # one tenant's console shows nothing of another's
    shown = {"con-small-k": page.inner_text("body"), "con-big-k": second.inner_text("body")}
    own = {
        "con-small-k": [live["id"], "train", "con-small"],
        "con-big-k": [block["id"], "tiny", "con-big"],
    }
    for cluster, text in shown.items():
        for owner, marks in own.items():
            for mark in marks:
                assert (mark in text) == (owner == cluster), (cluster, mark)
        assert "con-other" not in text


def billing_query(page: Page) -> dict[str, str]:
    """The start, end and granularity of the billing card's last read (its range ends with the
    market's latest tick)."""
    query = page.locator("#billing").get_attribute("data-query") or ""
    return dict(part.split("=", 1) for part in query.split("&"))


@pytest.mark.e2e
def test_where_buying_is_closed_the_card_says_the_account_team_arranges_the_block(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    island = "con-closed"
    island_of_8_gpu_nodes(server, island, 4)
    post_offers(server, island, [(8, 24, 2.0)], reservable_nodes=2, buying_open=False)
    make_account(server, "con-closed-acct", 1000)
    auth = make_cluster(server, "con-closed-acct", island, "k8s", "con-closed-k")
    page = open_page()
    sign_in(page, server, auth)  # before the island's first tick: the page waits for it
    closed = page.locator("#buy .closed")
    assert closed.inner_text() == (
        "Buying base load on this island is not open here: your account team arranges the block."
    )
    assert page.locator("#buy table.offers").is_hidden()
    page.wait_for_function(
        "() => document.getElementById('status').dataset.state === 'waiting'", timeout=WAIT_MS
    )
    settled(page, run_tick(server, island))
    assert page.locator("#status").get_attribute("data-state") == "live"
    page.screenshot(path=str(tmp_path / "buying-closed.png"), full_page=True)

    # signing out leaves nothing of the cluster in the tab, not even hidden
    page.click("#sign-out")
    page.locator("#sign-in").wait_for(state="visible", timeout=WAIT_MS)
    assert "con-closed" not in page.content()
    assert page.evaluate("() => sessionStorage.length") == 0


def spend_limit_words(detail: dict[str, Any], usd_per_day: str) -> str:
    return (
        f"The spend limit: the worst case of what waits is {usd(detail['worst_case_usd'])}, "
        f"and {usd(detail['left_usd'])} is left in this 24 h window of {usd_per_day} per day."
    )


def billing_hold_words(detail: dict[str, Any], today: str) -> str:
    return (
        f"A billing hold since {moment(detail['since'], today)}: the account's balance is "
        f"{usd(detail['balance_usd'])}, so no market capacity is held or granted until it is "
        "above zero again."
    )


def set_spend_limit(server: Server, auth: dict[str, str], usd_per_day: float) -> Any:
    body = {"usd_per_day": usd_per_day}
    return ok(server.client.put("/api/spend-limit", json=body, headers=auth))


def vm_and_k8s_clusters(
    server: Server, name: str, balance_usd: float
) -> tuple[str, dict[str, str], dict[str, str]]:
    """An island `con-<name>` of 8 nodes, and a VM and a Kubernetes cluster (their auth
    headers) of one account `con-<name>-acct` holding `balance_usd`."""
    island, account = f"con-{name}", f"con-{name}-acct"
    island_of_8_gpu_nodes(server, island, 8)
    make_account(server, account, balance_usd)
    vm = make_cluster(server, account, island, "vm", f"con-{name}-vm")
    k8s = make_cluster(server, account, island, "k8s", f"con-{name}-k")
    return island, vm, k8s


def credit(server: Server, account: str, amount_usd: float) -> None:
    path = f"/api/admin/accounts/{account}/credit"
    ok(server.client.post(path, json={"amount_usd": amount_usd}, headers=server.operator()))


@pytest.mark.e2e
def test_demand_held_back_by_the_spend_limit_is_said_in_words_with_its_figures(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    island, vm, k8s = vm_and_k8s_clusters(server, "spend", 5000)
    # the demand first, the limits after it: so the tick, not the write, meets them
    ok(declare(server, vm, 16, 2.5))
    set_bid(server, k8s, 2.0)
    submit_job(server, k8s, "held", 1)
    # a VM node's worst case is 2.5 × 8 GPUs × its 1 h window = 20 USD: 30 USD covers one node
    # of the two; the job's is 2 × 8 × 2 h = 32 USD, more than its cluster's 10 USD
    set_spend_limit(server, vm, 30)
    set_spend_limit(server, k8s, 10)
    island_tick = run_tick(server, island)
    capacity = ok(server.client.get("/api/vm/capacity", headers=vm))
    assert (capacity["held_gpus"], capacity["pending_reason"]) == (8, "spend-limit")
    assert ok(server.client.get("/api/k8s/bid", headers=k8s))["pending_reason"] == "spend-limit"

    page = open_page()
    sign_in(page, server, vm)
    settled(page, island_tick)
    left = ok(server.client.get("/api/spend-limit", headers=vm))["left_usd"]
    assert 0 < left < 20
    held = page.locator("#held")
    assert held.locator(".holding").inner_text().startswith("Holding 8 GPUs (1 node) of 16")
    detail = capacity["pending_detail"]
    assert detail["worst_case_usd"] > detail["left_usd"] > 0
    assert held.locator(".pending-why").inner_text() == (
        f"8 GPUs pending. {spend_limit_words(detail, '30.00 USD')}"
    )
    assert page.locator("#spend dd[data-figure=left]").inner_text() == usd(left)
    page.screenshot(path=str(tmp_path / "vm-spend-limit.png"), full_page=True)

    kube = open_page()
    sign_in(kube, server, k8s)
    settled(kube, island_tick)
    bid = ok(server.client.get("/api/k8s/bid", headers=k8s))
    words = spend_limit_words(bid["pending_detail"], "10.00 USD")
    assert kube.locator("#bid .held-back").inner_text() == words
    job = kube.locator("#jobs .job[data-job='held']")
    assert job.get_attribute("data-state") == "pending"
    read = ok(server.client.get("/api/k8s/jobs/held", headers=k8s))
    assert read["pending_reason"] == "spend-limit"
    assert job.locator(".why").inner_text() == spend_limit_words(
        read["pending_detail"], "10.00 USD"
    )
    kube.screenshot(path=str(tmp_path / "k8s-spend-limit.png"), full_page=True)


@pytest.mark.e2e
def test_a_billing_hold_is_said_in_words_and_clears_when_credit_comes(
    shared_server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    server = shared_server
    island, vm, k8s = vm_and_k8s_clusters(server, "hold", 1000)
    ok(declare(server, vm, 8, 2.0))
    set_bid(server, k8s, 2.0)
    submit_job(server, k8s, "train", 1)
    run_tick(server, island)
    page = open_page()
    sign_in(page, server, vm)
    kube = open_page()
    sign_in(kube, server, k8s)
    held, job = page.locator("#held"), kube.locator("#jobs .job[data-job='train']")
    assert held.get_attribute("data-held") == "8"
    assert job.get_attribute("data-state") == "running"

    # the balance taken to below zero (its charges are already out of it): the next tick
    # reclaims the account's market capacity
    credit(server, "con-hold-acct", -1000)
    island_tick = run_tick(server, island)
    assert ok(server.client.get("/api/vm/capacity", headers=vm))["pending_reason"] == (
        "billing-hold"
    )
    settled(page, island_tick)
    settled(kube, island_tick)
    assert held.get_attribute("data-held") == "0"
    today = ok(server.client.get("/api/market/stats", params={"island": island}))["time"]
    detail = ok(server.client.get("/api/vm/capacity", headers=vm))["pending_detail"]
    assert held.locator(".pending-why").inner_text() == (
        f"8 GPUs pending. {billing_hold_words(detail, today)}"
    )
    detail = ok(server.client.get("/api/k8s/bid", headers=k8s))["pending_detail"]
    assert kube.locator("#bid .held-back").inner_text() == billing_hold_words(detail, today)
    assert job.get_attribute("data-state") == "pending"
    assert job.locator(".why").inner_text() == billing_hold_words(detail, today)
    assert job.locator(".events li").first.get_attribute("data-type") == "Preempted"
    since = ok(server.client.get("/api/account", headers=vm))["billing_hold_since"]
    assert since is not None
    for shown in (page, kube):
        card = shown.locator("#account")
        assert card.locator("dd[data-figure='billing hold']").inner_text() == f"since {utc(since)}"
        assert card.locator(".hold-why").is_visible()
    page.screenshot(path=str(tmp_path / "vm-billing-hold.png"), full_page=True)
    kube.screenshot(path=str(tmp_path / "k8s-billing-hold.png"), full_page=True)

    # credit added: the next tick grants again, and the words go
    credit(server, "con-hold-acct", 2000)
    island_tick = run_tick(server, island)
    settled(page, island_tick)
    settled(kube, island_tick)
    assert held.get_attribute("data-held") == "8"
    assert held.locator(".pending-why").is_hidden()
    assert kube.locator("#bid .held-back").is_hidden()
    assert job.get_attribute("data-state") == "running"
    assert job.locator(".why").count() == 0
    assert page.locator("#account dd[data-figure='billing hold']").inner_text() == "none"


class Outage:
    """A loopback TCP forwarder to the server that a test can cut: every connection through it
    (the feed's websocket among them) drops at once, and new ones are dropped on arrival until
    the network is back, as a real outage between the browser and the service would do."""

    def __init__(self, server: Server) -> None:
        self.upstream = ("127.0.0.1", int(server.url.rsplit(":", 1)[1]))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.down = False
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                near, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                if self.down:
                    near.close()
                    continue
                far = socket.create_connection(self.upstream)
                self.open += [near, far]
            for source, sink in ((near, far), (far, near)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):  # cut
            while data := source.recv(65536):
                sink.sendall(data)
        for end in (source, sink):
            _shut(end)

    def cut(self) -> None:
        with self.lock:
            self.down = True
            for end in self.open:
                _shut(end)
                end.close()
            self.open.clear()

    def restore(self) -> None:
        with self.lock:
            self.down = False

    def close(self) -> None:
        _shut(self.listener)  # wakes the accepting thread, which then ends
        self.listener.close()
        self.cut()


def _shut(end: socket.socket) -> None:
    """Both ways shut: a thread blocked reading it wakes to the end of its stream."""
    with contextlib.suppress(OSError):  # shut already
        end.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def outage(shared_server: Server) -> Iterator[Outage]:
    forwarder = Outage(shared_server)
    yield forwarder
    forwarder.close()


def ladder_shown(page: Page) -> list[list[str]]:
    rows = page.locator("#ladder tbody tr")
    return [rows.nth(i).locator("td").all_inner_texts()[:2] for i in range(rows.count())]


def ladder_read(server: Server, auth: dict[str, str]) -> list[list[str]]:
    """The cluster's own ladder (the page shows its first 12 rungs)."""
    rungs = ok(server.client.get("/api/ladder", headers=auth))["rungs"]
    return [[str(r["nodes"]), f"{r['price_per_gpu_hour']:.4f}"] for r in rungs[:12]]


@pytest.mark.e2e
def test_the_page_reconnects_to_the_feed_and_follows_the_ticks_again_without_a_reload(
    shared_server: Server, open_page: OpenPage, outage: Outage, tmp_path: Path
) -> None:
    server = shared_server
    island = "con-feed"
    island_of_8_gpu_nodes(server, island, 8)
    make_account(server, "con-feed-acct", 5000)
    vm = make_cluster(server, "con-feed-acct", island, "vm", "con-feed-vm")
    ok(declare(server, vm, 8, 2.5))
    island_tick = run_tick(server, island)
    page = open_page()
    sign_in(page, server, vm, through=outage.url)
    settled(page, island_tick)
    status = page.locator("#status")
    assert status.inner_text().startswith(f"live · tick {island_tick} at ")
    before = ladder_read(server, vm)
    assert ladder_shown(page) == before
    page.evaluate("() => { window.sameDocument = true; }")  # a reload would lose it

    # the network between the browser and the service goes down: the feed's socket drops, and
    # the page says so (its reconnections fail while the outage lasts)
    outage.cut()
    page.wait_for_function(
        "() => document.getElementById('status').dataset.state === 'down'", timeout=WAIT_MS
    )
    assert status.inner_text() == "feed disconnected · reconnecting…"
    page.screenshot(path=str(tmp_path / "feed-down.png"), full_page=True)
    ok(declare(server, vm, 16, 2.5))  # meanwhile, from elsewhere

    # the network back: the page reconnects by itself, live again before any new tick
    outage.restore()
    page.wait_for_function(
        "() => document.getElementById('status').dataset.state === 'live'", timeout=WAIT_MS
    )
    assert status.inner_text().startswith(f"live · tick {island_tick} at ")

    # and the next tick's figures arrive over the new connection: the status, the grant (read
    # after the tick), and the own price to win (read after the tick too)
    island_tick = run_tick(server, island)
    settled(page, island_tick)
    assert status.inner_text().startswith(f"live · tick {island_tick} at ")
    assert page.locator("#held .holding").inner_text().startswith("Holding 16 GPUs (2 nodes)")
    after = ladder_read(server, vm)
    assert after != before
    page.wait_for_function(
        "(n) => document.querySelectorAll('#ladder tbody tr').length === n",
        arg=len(after),
        timeout=WAIT_MS,
    )
    assert ladder_shown(page) == after
    assert page.evaluate("() => window.sameDocument") is True
    page.screenshot(path=str(tmp_path / "feed-back.png"), full_page=True)
