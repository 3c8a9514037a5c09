"""The spend limit tells the truth (issue 25's trial, on the manual clock): a
limit lowered under what is already spent and committed is taken and says so (`left_usd` 0,
never negative, and `over_by_usd`); no new commitment is made while over, the tick's renewals
included, until the window frees; no refusal, in its body or its REFUSED line, says a negative
amount is left; and the window's figures read the same with a limit and without."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import Server, StartServer
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok, tick, ticks

NEGATIVE = re.compile(r"(?<!\w)-\d")
"""A negative figure in a body or a log line (`=-6`, `: -101.01`), not a date's or an id's dash."""
TICKS_PER_HOUR = 2
"""Half-hour ticks: a VM node's 1 h window is half billed in advance, half committed."""


def _limit(server: Server, auth: dict[str, str]) -> Any:
    return ok(server.client.get("/api/spend-limit", headers=auth))


def _window(view: dict[str, Any]) -> tuple[Any, Any, Any]:
    return view["window_started_at"], view["spent_usd"], view["committed_usd"]


def _lines(server: Server, since: int, cluster: str) -> list[str]:
    return [x for x in server.refused_lines()[since:] if f"cluster={cluster} " in x]


def test_a_limit_under_what_is_committed_says_so_and_holds_until_the_window_frees(
    start_server: StartServer,
) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", str(3600 // TICKS_PER_HOUR))
    make_island(server, "truth", nodes=3, reserve=1.0)
    make_account(server, "truth-acct", balance=10_000)
    make_account(server, "truth-other", balance=10_000)
    c = make_cluster(server, "truth-acct", "truth", "vm", "truth-c")
    rival = make_cluster(server, "truth-other", "truth", "vm", "truth-rival")
    ok(declare(server, rival, 8, 5.0))
    tick(server, island="truth")  # the rival's node, in its window for an hour
    ok(declare(server, c, 24, 1.0))  # 3 nodes wanted, 2 free
    first = tick(server, island="truth")
    assert ok(server.client.get("/api/vm/capacity", headers=c))["held_gpus"] == 16

    # no limit: the window is tracked from the first spend all the same
    unlimited = _limit(server, c)
    assert unlimited["window_started_at"] == first["time"]
    assert unlimited["spent_usd"] == pytest.approx(16 * 1.0 / TICKS_PER_HOUR, abs=1e-6)
    assert unlimited["committed_usd"] == pytest.approx(16 * 1.0 / TICKS_PER_HOUR, abs=1e-6)
    assert (unlimited["left_usd"], unlimited["over_by_usd"]) == (None, None)

    # 10 USD a day, with 16 already spent and committed: taken, and it says by how much
    since = len(server.refused_lines())
    lowered = ok(server.client.put("/api/spend-limit", json={"usd_per_day": 10}, headers=c))
    assert _window(lowered) == _window(unlimited)
    assert lowered["left_usd"] == 0
    assert lowered["over_by_usd"] == pytest.approx(16 - 10, abs=1e-6)
    assert _limit(server, c) == lowered

    # more demand is refused, and nothing in the refusal reads a negative amount
    more = declare(server, c, 24, 2.0)  # a raise lifts the cap of the nodes held: it commits
    assert more.status_code == 402, more.text
    body = more.json()
    assert body["error"] == "spend-limit"
    assert (body["left_usd"], body["over_by_usd"]) == (0, pytest.approx(6, abs=1e-6))
    assert not NEGATIVE.search(more.text), more.text

    # the rival's node comes free: no grant while over
    ok(declare(server, rival, 0, None))
    tick(server, island="truth")
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert (capacity["held_gpus"], capacity["pending_reason"]) == (16, "spend-limit")

    # an hour in, the nodes' next hours do not fit: they go, nothing renewed
    ticks(server, TICKS_PER_HOUR - 1, "truth")
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert (capacity["held_gpus"], capacity["pending_reason"]) == (0, "spend-limit")
    spend = _limit(server, c)
    assert (spend["spent_usd"], spend["committed_usd"]) == (pytest.approx(16, abs=1e-6), 0)
    assert (spend["left_usd"], spend["over_by_usd"]) == (0, pytest.approx(6, abs=1e-6))
    lines = _lines(server, since, "truth-c")
    assert len(lines) >= 3, lines  # the declaration, the tick's refusal, the released nodes
    assert all(line.startswith("REFUSED reason=spend-limit ") for line in lines), lines
    assert not [line for line in lines if NEGATIVE.search(line)], lines

    # still nothing the moment before the window frees, 24 h after the first spend
    ticks(server, 24 * TICKS_PER_HOUR - TICKS_PER_HOUR - 1, "truth")
    assert ok(server.client.get("/api/vm/capacity", headers=c))["held_gpus"] == 0
    # the window frees: one node's worst case (8 of the 10) fits, and is granted
    freed = tick(server, island="truth")
    capacity = ok(server.client.get("/api/vm/capacity", headers=c))
    assert capacity["held_gpus"] == 8
    renewed = _limit(server, c)
    assert renewed["window_started_at"] == freed["time"]
    assert renewed["over_by_usd"] == 0
    assert renewed["left_usd"] == pytest.approx(10 - 8, abs=1e-6)


def test_the_window_reads_the_same_with_a_limit_and_without(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "same", nodes=1, reserve=1.0)
    make_account(server, "same-acct", balance=10_000)
    c = make_cluster(server, "same-acct", "same", "vm", "same-c")
    ok(declare(server, c, 8, 2.0))
    tick(server, count=3, island="same")
    without = _limit(server, c)
    assert without["spent_usd"] == pytest.approx(8 * 1.0 * 15 / 60, abs=1e-6)

    limited = ok(server.client.put("/api/spend-limit", json={"usd_per_day": 500}, headers=c))
    assert _window(limited) == _window(without)
    assert limited["left_usd"] == pytest.approx(500 - 2 - 2 * 8 * 45 / 60, abs=1e-6)

    # the trial: after removing the limit, spent read 0.0
    removed = ok(server.client.put("/api/spend-limit", json={"usd_per_day": None}, headers=c))
    assert _window(removed) == _window(without)
    account = ok(server.client.get("/api/account", headers=c))
    assert (account["spent_24h_usd"], account["committed_usd"]) == _window(without)[1:]
