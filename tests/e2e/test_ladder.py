"""The ladder always answers, through the real server on the manual clock: with every node under
a protection window it still lists the rungs, each with when it can next be contested and the
price it would take then; from the tick before they end (the next tick comes as they do) the same
rungs read "now", at that price."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tests.conftest import StartServer
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok, tick, when

WINDOWS_HOLD = "windows-hold"


def ladder(server: Any, island: str) -> dict[str, Any]:
    answer: dict[str, Any] = ok(server.client.get("/api/market/ladder", params={"island": island}))
    return answer


def test_a_ladder_with_every_node_under_a_window_says_when_and_at_what_price(
    start_server: StartServer,
) -> None:
    # 20-minute ticks: the holder's 1-hour VM windows end three ticks after the grant
    server = start_server("--clock", "manual", "--tick-seconds", "1200")
    make_island(server, "bl", nodes=4, reserve=1.0)
    make_account(server, "bl-acct", balance=100_000)
    holder = make_cluster(server, "bl-acct", "bl", "vm", "bl-holder")
    ok(declare(server, holder, 32, 2.0))
    granted = tick(server, island="bl")
    assert granted["gpus"] == 32  # every node held, under a window until an hour from now
    window_ends = datetime.fromisoformat(granted["time"]) + timedelta(hours=1)

    newcomer = make_cluster(server, "bl-acct", "bl", "vm", "bl-newcomer")
    ok(declare(server, newcomer, 16, 3.0))
    blank = tick(server, island="bl")
    assert blank["pending_gpus"] == 16
    held = ladder(server, "bl")
    assert held["tick"] == blank["tick"]
    # Nothing is contestable at the next tick, yet every node has a rung: at the hour the
    # windows end the holder's four nodes compete at its 2.0 against the newcomer's two at 3.0
    # (reserve 1.0).
    # n = 1, 2: displace the holder's older 2.0 (a tie goes to the older): 2.0001;
    # n = 3: beat 2×3.0 + 2.0 on 3 nodes' worth of value over the reserve: 2.3334;
    # n = 4: beat everything standing, 2×2.0 + 2×3.0, with the tie again to the older: 2.5001.
    foretold = [(1, 8, 2.0001), (2, 16, 2.0001), (3, 24, 2.3334), (4, 32, 2.5001)]
    assert [(r["nodes"], r["gpus"], r["price_per_gpu_hour"]) for r in held["rungs"]] == foretold
    for rung in held["rungs"]:
        assert datetime.fromisoformat(rung["contestable_at"]) == window_ends
        assert rung["reason"] == WINDOWS_HOLD

    # the tick before the windows end: the next tick comes as they end, so a declaration now
    # competes for every node then, and no rung says "from" any more
    eve = tick(server, island="bl")
    assert datetime.fromisoformat(eve["time"]) + timedelta(minutes=20) == window_ends
    assert [
        (r["nodes"], r["gpus"], r["price_per_gpu_hour"], r["contestable_at"], r["reason"])
        for r in ladder(server, "bl")["rungs"]
    ] == [(*rung, None, None) for rung in foretold]

    lapsed = tick(server, island="bl")
    assert datetime.fromisoformat(lapsed["time"]) == window_ends
    # the newcomer's 3.0 took two of the holder's nodes, under a fresh window for an hour
    assert ok(server.client.get("/api/vm/capacity", headers=newcomer))["held_gpus"] == 16
    contested = ladder(server, "bl")
    # the holder's other two bid again at the next tick: n = 1, 2 displace its 2.0 then; n = 3,
    # 4 need the newcomer's nodes, from the end of their window, against the same demand
    assert [
        (r["nodes"], r["price_per_gpu_hour"], when(r["contestable_at"])) for r in contested["rungs"]
    ] == [
        (1, 2.0001, None),
        (2, 2.0001, None),
        (3, 2.3334, window_ends + timedelta(hours=1)),
        (4, 2.5001, window_ends + timedelta(hours=1)),
    ]

    # The rungs are stored with the tick: after a restart the ladder is read back from the
    # store (sql/feed_ladder.sql) and reads as it went out live.
    server.stop()
    again = start_server("--clock", "manual", "--tick-seconds", "1200", data_dir=server.data_dir)
    assert ladder(again, "bl") == contested
    assert (
        ok(again.client.get("/api/market/ladder", params={"island": "bl", "max_nodes": 2}))["rungs"]
        == contested["rungs"][:2]
    )


def test_a_rung_lists_its_price_at_each_later_release_within_the_hour(
    start_server: StartServer,
) -> None:
    """The issue's case: each rung priced at the earliest release only read 4 nodes at 3.5001
    beside 5 nodes at 2.7001, because the next release, minutes later, brings more supply. Now
    rung 4 says it costs 2.5001 from then."""
    # 20-minute ticks: a 1-hour VM window ends three ticks after its grant
    server = start_server("--clock", "manual", "--tick-seconds", "1200")
    make_island(server, "lt", nodes=6, reserve=1.0)
    make_account(server, "lt-acct", balance=100_000)
    first = make_cluster(server, "lt-acct", "lt", "vm", "lt-first")
    ok(declare(server, first, 4 * 8, 3.5))
    start = datetime.fromisoformat(tick(server, island="lt")["time"])  # first holds 4, an hour
    second = make_cluster(server, "lt-acct", "lt", "vm", "lt-second")
    ok(declare(server, second, 2 * 8, 1.5))
    tick(server, island="lt")  # second holds the other 2, until 20 minutes after first's
    first_ends, second_ends = start + timedelta(hours=1), start + timedelta(minutes=80)
    rungs = ladder(server, "lt")["rungs"]
    # at first's release its 4 nodes bid again at 3.5: a newcomer of 1 … 4 nodes pays 3.5001;
    # at second's, 6 nodes against 4 × 3.5 and 2 × 1.5 (reserve 1.0): 4 nodes displace two of
    # 3.5 and second's two, (2 × 2.5 + 2 × 0.5) / 4 = 1.5 over the reserve, a tie: 2.5001
    assert [(r["nodes"], r["price_per_gpu_hour"], when(r["contestable_at"])) for r in rungs] == [
        (1, 3.5001, first_ends),
        (2, 3.5001, first_ends),
        (3, 3.5001, first_ends),
        (4, 3.5001, first_ends),
        (5, 2.7001, second_ends),
        (6, 2.8334, second_ends),  # all of it: (4 × 2.5 + 2 × 0.5) / 6 over the reserve
    ]
    four = rungs[3]
    assert [(when(x["at"]), x["price_per_gpu_hour"]) for x in four["later"]] == [
        (second_ends, 2.5001)
    ]
    # every rung held until first's release is cheaper once second's comes
    for rung in rungs[:4]:
        (later,) = rung["later"]
        assert when(later["at"]) == second_ends
        assert later["price_per_gpu_hour"] < rung["price_per_gpu_hour"]
    assert rungs[4]["later"] == rungs[5]["later"] == []
