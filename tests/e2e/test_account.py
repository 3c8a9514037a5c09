"""`GET /api/account` through the real server on the manual clock: every figure checked against
what the ticks billed (the cluster's billing report), the base load purchase's deposit and
what it owes by wire, the spend window, the account's rate and runway, and since when a
billing hold stands."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Server
from tests.e2e.support import (
    account,
    buy,
    declare,
    make_account,
    make_cluster,
    make_island,
    ok,
    post_offers,
    tick,
)


def _own(server: Server, auth: dict[str, str]) -> Any:
    return ok(server.client.get("/api/account", headers=auth))


def _billed(server: Server, auth: dict[str, str]) -> Decimal:
    rows = ok(server.client.get("/api/billing", headers=auth, params={"granularity": "1d"}))
    return sum((Decimal(str(r["amount_usd"])) for r in rows), Decimal(0))


def test_the_account_reads_what_was_billed_deposited_and_owed(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "acct", nodes=4, reserve=1.0)
    make_account(server, "acct-a", balance=12_000)
    k = make_cluster(server, "acct-a", "acct", "k8s", "acct-k")
    v = make_cluster(server, "acct-a", "acct", "vm", "acct-v")
    post_offers(server, "acct", [(16, 720, 1.5)], reservable_nodes=2)  # 17,280 USD
    block = ok(buy(server, k, 16, 720), 201)
    assert (block["deposit_usd"], block["owed_usd"]) == (10_000, 7_280)
    ok(declare(server, v, 8, 3))
    first = tick(server, island="acct")  # v alone on the market's 2 nodes: the reserve

    mine = _own(server, v)
    assert mine["account"] == "acct-a"
    # the balance is the opening credit less the deposit and everything billed, to the µUSD
    billed = _billed(server, k) + _billed(server, v)
    assert Decimal(str(mine["balance_usd"])) == Decimal(12_000 - 10_000) - billed
    assert mine["balance_usd"] == account(server, "acct-a")["balance_usd"]
    assert (mine["deposit_held_usd"], mine["owed_usd"]) == (10_000, 7_280)
    assert mine["owed_by"] == block["owed_by"]
    assert mine["billing_hold_since"] is None
    # this cluster's spend window: the first 5 minutes billed at 1.0, the rest of the 1 h
    # window committed at the ceiling 3
    assert mine["spent_24h_usd"] == pytest.approx(8 * 1.0 * 5 / 60, abs=1e-6)
    assert mine["committed_usd"] == pytest.approx(3 * 8 * 55 / 60, abs=1e-6)
    spend = ok(server.client.get("/api/spend-limit", headers=v))
    assert (spend["spent_usd"], spend["committed_usd"]) == (
        mine["spent_24h_usd"],
        mine["committed_usd"],
    )
    # the account's rate: the VM node at the clearing rate and the block at its own
    capacity = ok(server.client.get("/api/vm/capacity", headers=v))
    assert capacity["rate"] == 1.0
    assert mine["rate_usd_per_hour"] == pytest.approx(8 * 1.0 + 16 * 1.5)
    assert mine["runway_hours"] == pytest.approx(mine["balance_usd"] / 32, abs=1e-4)

    # the Kubernetes cluster reads the same account; its spend window is its own (base load
    # is paid with the block, not in the spend window)
    theirs = _own(server, k)
    for field in ("balance_usd", "deposit_held_usd", "owed_usd", "owed_by", "rate_usd_per_hour"):
        assert theirs[field] == mine[field], field
    assert (theirs["spent_24h_usd"], theirs["committed_usd"]) == (0, 0)

    # a wire settles part of what is owed; the deposit stays held until all is paid
    wires = "/api/admin/accounts/acct-a/wires"
    ok(server.client.post(wires, json={"amount_usd": 3_000}, headers=server.operator()))
    after_wire = _own(server, v)
    assert (after_wire["owed_usd"], after_wire["deposit_held_usd"]) == (4_280, 10_000)
    assert after_wire["balance_usd"] == pytest.approx(mine["balance_usd"] + 3_000, abs=1e-6)

    # the VM cluster gives its node back: the account pays the block alone, refunded to the ms
    ok(declare(server, v, 0, None))
    released = _own(server, v)
    assert released["rate_usd_per_hour"] == pytest.approx(16 * 1.5)
    billed = _billed(server, k) + _billed(server, v)
    assert Decimal(str(released["balance_usd"])) == Decimal(12_000 - 10_000 + 3_000) - billed
    assert released["runway_hours"] == pytest.approx(released["balance_usd"] / 24, abs=1e-4)

    # the next tick bills the block's next step; the account's rate stays the block's
    second = tick(server, island="acct")
    assert second["tick"] == first["tick"] + 1
    later = _own(server, v)
    assert later["rate_usd_per_hour"] == pytest.approx(16 * 1.5)
    assert later["balance_usd"] == pytest.approx(released["balance_usd"] - 16 * 1.5 / 12, abs=1e-6)


def test_a_billing_hold_reads_since_when_and_lifts_with_credit(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "acct-hold", nodes=1, reserve=1.0)
    make_account(server, "acct-poor", balance=1)
    v = make_cluster(server, "acct-poor", "acct-hold", "vm", "acct-poor-v")
    ok(declare(server, v, 8, 3))
    tick(server, island="acct-hold")  # 8 GPUs x 1.0 x 5 min: 0.666667 of the 1 USD
    funded = _own(server, v)
    assert funded["billing_hold_since"] is None
    assert funded["rate_usd_per_hour"] == 8.0
    assert funded["runway_hours"] == pytest.approx((1 - 8 / 12) / 8, abs=1e-4)

    under = tick(server, island="acct-hold")  # the second 5 minutes take it under zero
    held = _own(server, v)
    assert held["balance_usd"] == pytest.approx(1 - 2 * 8 / 12, abs=1e-6)
    assert held["billing_hold_since"] == under["time"]
    assert held["runway_hours"] == 0  # billed at 8 USD per hour, with nothing left

    tick(server, island="acct-hold")  # the hold reclaims the node: nothing is billed now
    reclaimed = _own(server, v)
    assert reclaimed["billing_hold_since"] == under["time"]
    assert ok(server.client.get("/api/vm/capacity", headers=v))["held_gpus"] == 0
    assert (reclaimed["rate_usd_per_hour"], reclaimed["runway_hours"]) == (0, None)

    credit = "/api/admin/accounts/acct-poor/credit"
    ok(server.client.post(credit, json={"amount_usd": 50}, headers=server.operator()))
    assert _own(server, v)["billing_hold_since"] is None
