"""Changing a live block through the real server (the account team, operator token): a new rate
or size ends the block at that instant and starts a new one, billed exactly on both sides; the
end date and the notes change in place; what cannot change is refused. The operator's direct
create is the account team's tool: no offer, reserve or funds asked, and it says so."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from tests.conftest import Server
from tests.e2e.support import (
    account,
    base_load,
    make_account,
    make_cluster,
    make_island,
    ok,
    refused,
    submit_job,
    tick,
)

LEDGER_UNITS_PER_USD = 3_600_000_000_000


def _create(server: Server, cluster: str, nodes: int, rate: float, term_hours: int) -> Any:
    body = {"nodes": nodes, "rate_per_gpu_hour": rate, "term_hours": term_hours}
    path = f"/api/admin/clusters/{cluster}/base-load"
    return ok(server.client.post(path, json=body, headers=server.operator()), 201)


def _change(server: Server, block: str, **body: Any) -> Any:
    return server.client.patch(
        f"/api/admin/base-load/{block}", json=body, headers=server.operator()
    )


def _nodes(server: Server, island: str) -> dict[str, Any]:
    rows = ok(server.client.get(f"/api/admin/islands/{island}/nodes", headers=server.operator()))
    return {n["id"]: n for n in rows}


def _ms(start: str, end: str) -> int:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)) // timedelta(
        milliseconds=1
    )


def _units(rows: list[Any]) -> int:
    return sum(int(r["amount_units"]) for r in rows if r["kind"] == "base_load")


def test_a_rate_change_ends_the_block_at_the_instant_and_bills_exactly_on_both_sides(
    server: Server,
) -> None:
    """10-second ticks: the change lands 10 s into a 5-minute step the old block billed whole,
    so the old block gives back the rest of that step and the new one bills from the instant."""
    make_island(server, "chg", nodes=2, reserve=1.0)
    ok(
        server.client.put(
            "/api/admin/islands/chg", json={"base_load_cap": 2}, headers=server.operator()
        )
    )
    make_account(server, "chg-acct", balance=1000)
    k = make_cluster(server, "chg-acct", "chg", "k8s", "chg-k")
    old = _create(server, "chg-k", 1, 2.0, 1)
    submit_job(server, k, "steady", 1)
    tick(server, island="chg")
    (node,) = ok(server.client.get("/api/k8s/jobs/steady", headers=k))["node_ids"]

    new = ok(_change(server, old["id"], rate_per_gpu_hour=3.0))
    at = new["starts_at"]
    assert (new["state"], new["rate_per_gpu_hour"], new["nodes"]) == ("live", 3.0, 1)
    assert new["id"] != old["id"]
    assert (new["ends_at"], new["purchase"], new["origin"]) == (
        old["ends_at"],
        old["id"],
        "account-team",
    )
    read = base_load(server, k)
    assert read["live"]["id"] == new["id"]
    (before,) = read["past"]
    assert (before["id"], before["state"], before["ended_at"]) == (old["id"], "changed", at)
    # the old block billed exactly [start, change): 8 GPUs x 2.0 x 10 s; the new one its first
    # step from the change: 8 GPUs x 3.0 x 5 min
    assert _ms(old["starts_at"], at) == 10_000
    assert Decimal(str(before["billed_usd"])) == round(Decimal(2 * 8 * 10) / 3600, 6)
    assert new["billed_usd"] == 2.0
    # the job runs on, on the same node, now the new block's
    job = ok(server.client.get("/api/k8s/jobs/steady", headers=k))
    assert (job["state"], job["node_ids"]) == ("running", [node])
    assert _nodes(server, "chg")[node]["block"] == new["id"]

    # to the end of the term: the two blocks together bill the old rate to the instant and the
    # new one after it, to the unit
    for _ in range(6):  # an hour of ticks, a request per ten minutes (each well in its timeout)
        tick(server, count=60, island="chg")
    read = base_load(server, k)
    assert read["live"] is None
    rows = ok(server.client.get("/api/billing", params={"granularity": "5m"}, headers=k))
    expected = 2_000_000 * 8 * _ms(old["starts_at"], at) + 3_000_000 * 8 * _ms(at, old["ends_at"])
    assert _units(rows) == expected
    billed = {b["id"]: Decimal(str(b["billed_usd"])) for b in read["past"]}
    assert billed == {
        old["id"]: round(Decimal(2 * 8 * 10) / 3600, 6),
        new["id"]: round(Decimal(3 * 8) * _ms(at, old["ends_at"]) / 3_600_000, 6),
    }


def test_a_size_change_starts_a_block_of_the_new_size_and_delivers_it(server: Server) -> None:
    make_island(server, "grow", nodes=3, reserve=1.0)
    ok(
        server.client.put(
            "/api/admin/islands/grow", json={"base_load_cap": 3}, headers=server.operator()
        )
    )
    make_account(server, "grow-acct", balance=1000)
    make_account(server, "grow-other", balance=1000)
    k = make_cluster(server, "grow-acct", "grow", "k8s", "grow-k")
    make_cluster(server, "grow-other", "grow", "k8s", "grow-o")
    old = _create(server, "grow-k", 1, 2.0, 2)
    tick(server, island="grow")
    new = ok(_change(server, old["id"], nodes=2))
    assert (new["nodes"], new["gpus"], new["rate_per_gpu_hour"]) == (2, 16, 2.0)
    tick(server, island="grow")
    held = [n for n in _nodes(server, "grow").values() if n["block"] == new["id"]]
    assert len(held) == 2
    # the other cluster cannot take the last node past the cap: 2 + 2 > 3
    since = len(server.refused_lines())
    body = {"nodes": 2, "rate_per_gpu_hour": 2.0, "term_hours": 1}
    answer = server.client.post(
        "/api/admin/clusters/grow-o/base-load", json=body, headers=server.operator()
    )
    assert refused(server, answer, 422, "invalid", since)["field"] == "nodes"
    # nor can this block grow past it
    since = len(server.refused_lines())
    assert (
        refused(server, _change(server, new["id"], nodes=4), 422, "invalid", since)["field"]
        == "nodes"
    )
    rows = ok(server.client.get("/api/billing", params={"granularity": "1d"}, headers=k))
    at = new["starts_at"]
    assert _units(rows) == 2_000_000 * 8 * _ms(old["starts_at"], at) + 2_000_000 * 16 * (
        _ms(at, new["billed_until"])
    )


def test_the_end_date_and_notes_change_in_place(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "place", nodes=2, reserve=1.0)
    ok(
        server.client.put(
            "/api/admin/islands/place", json={"base_load_cap": 1}, headers=server.operator()
        )
    )
    make_account(server, "place-acct", balance=1000)
    k = make_cluster(server, "place-acct", "place", "k8s", "place-k")
    block = _create(server, "place-k", 1, 2.0, 10)
    tick(server, island="place")
    balance = Decimal(str(account(server, "place-acct")["balance_usd"]))
    two_steps = Decimal(str(base_load(server, k)["live"]["billed_usd"]))
    assert two_steps == round(Decimal(8 * 2 * 10) / 60, 6)

    # shorter: ends 3 minutes from now, inside the step billed up to 5 minutes from now
    now = datetime.fromisoformat(block["starts_at"]) + timedelta(minutes=5)
    end = now + timedelta(minutes=3)
    changed = ok(_change(server, block["id"], ends_at=end.isoformat(), notes="renewal in talks"))
    assert (changed["id"], changed["state"], changed["notes"]) == (
        block["id"],
        "live",
        "renewal in talks",
    )
    assert datetime.fromisoformat(changed["ends_at"]) == end
    assert changed["term_hours"] == 8 / 60
    # the 2 minutes billed beyond the new end are given back
    assert Decimal(str(changed["billed_usd"])) == round(Decimal(8 * 2 * 8) / 60, 6)
    after = Decimal(str(account(server, "place-acct")["balance_usd"]))
    assert balance == round(1000 - Decimal(8 * 2 * 10) / 60, 6)
    assert after == round(1000 - Decimal(8 * 2 * 8) / 60, 6)
    # notes alone, then cleared
    assert ok(_change(server, block["id"], notes=None))["notes"] is None

    # what cannot change: an end in the past, nothing at all, a block no longer live, no block
    for body, status, code in (
        ({"ends_at": now.isoformat()}, 422, "invalid"),
        ({}, 422, "invalid"),
        ({"nodes": 0}, 422, "invalid"),
    ):
        since = len(server.refused_lines())
        refused(server, _change(server, block["id"], **body), status, code, since)
    tick(server, count=2, island="place")
    assert base_load(server, k)["past"][0]["state"] == "ended"
    since = len(server.refused_lines())
    refused(server, _change(server, block["id"], rate_per_gpu_hour=3), 409, "conflict", since)
    since = len(server.refused_lines())
    refused(server, _change(server, "no-such-block", notes="x"), 404, "not-found", since)


def test_the_operators_direct_create_is_the_account_teams_tool(shared_server: Server) -> None:
    """No posted offer, no reserve, no funds: the account team arranges such a block, and the
    block and the API's description say so."""
    server = shared_server
    make_island(server, "team", nodes=2, reserve=5.0)
    ok(
        server.client.put(
            "/api/admin/islands/team", json={"base_load_cap": 2}, headers=server.operator()
        )
    )
    make_account(server, "team-acct", balance=0)
    make_cluster(server, "team-acct", "team", "k8s", "team-k")
    block = _create(server, "team-k", 2, 1.0, 3)  # under the reserve, nothing posted, no funds
    assert (block["origin"], block["deposit_usd"], block["owed_usd"]) == ("account-team", 0, 0)
    doc = ok(server.client.get("/schema/openapi.json"))
    described = doc["paths"]["/api/admin/clusters/{cluster_id}/base-load"]["post"]["description"]
    assert "account team" in described
