"""A cluster's own ladder is a promise, checked from outside on a real server with the manual
clock (docs/market.md "The cluster's own ladder"): bid rung n and the next tick grants n more
nodes; one grid step under, fewer. Each example builds the same random island twice (the same
declarations in the same order, so the same ages), bids the rung on one and one step under it
on the other, and runs one tick.

The grower declares last, after every competitor, so each of its units is younger than theirs
and loses every exact tie: its rungs are then exact (docs/market.md says a rung on an exact tie
that the cluster's older demand would win reads one grid step above it)."""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from burstmarket.client import SyncTenantClient
from tests.conftest import Server, StartServer, examples
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok, tick

G = 8
STEP = Decimal("0.0001")
RESERVE = Decimal("1.0")
names = itertools.count()

prices = st.integers(0, 30).map(lambda k: RESERVE + k * Decimal("0.05"))
competitors = st.lists(st.tuples(st.integers(1, 3), prices), min_size=1, max_size=4)


def held(server: Server, auth: dict[str, str]) -> int:
    return int(ok(server.client.get("/api/vm/capacity", headers=auth))["held_gpus"]) // G


def own_ladder(server: Server, auth: dict[str, str]) -> Any:
    return ok(server.client.get("/api/ladder", headers=auth))


@pytest.fixture(scope="module")
def ladder_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.conftest import _servers

    # 30-minute ticks: a VM window (1 h) lapses two ticks after its grant
    with _servers(tmp_path_factory.mktemp("own")) as start:
        yield start("--clock", "manual", "--tick-seconds", "1800")


@settings(
    max_examples=examples(8),
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a server's example is slow to shrink
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    nodes=st.integers(2, 6),
    others=competitors,
    mine=st.tuples(st.integers(0, 3), prices),
    warm=st.integers(1, 3),
    data=st.data(),
)
def test_bid_the_rung_and_the_next_tick_grants_n_more_one_step_under_fewer(
    ladder_server: Server,
    nodes: int,
    others: list[tuple[int, Decimal]],
    mine: tuple[int, Decimal],
    warm: int,
    data: st.DataObject,
) -> None:
    server = ladder_server
    k = next(names)
    twins = [f"own{k}a", f"own{k}b"]
    growers = {}
    for island in twins:
        make_island(server, island, nodes=nodes, gpus_per_node=G, reserve=float(RESERVE))
        make_account(server, f"{island}-acct", balance=1_000_000)
    for i, (count, price) in enumerate(others):
        for island in twins:
            auth = make_cluster(server, f"{island}-acct", island, "vm", f"{island}-c{i}")
            ok(declare(server, auth, min(count, nodes) * G, float(price)))
    for island in twins:
        growers[island] = make_cluster(server, f"{island}-acct", island, "vm", f"{island}-me")
        if mine[0]:
            ok(declare(server, growers[island], min(mine[0], nodes) * G, float(mine[1])))
    tick(server, warm)

    a, b = twins
    ladder = own_ladder(server, growers[a])
    # the twins are the same market: the same ladder
    assert ladder["rungs"] == own_ladder(server, growers[b])["rungs"]
    now = [r for r in ladder["rungs"] if r["contestable_at"] is None]
    if not now:
        return  # windows hold every node this example could ask for
    rung = data.draw(st.sampled_from(now))
    before = held(server, growers[a])
    assert ladder["held_nodes"] == before
    assert held(server, growers[b]) == before
    price = Decimal(str(rung["price_per_gpu_hour"]))
    want = (before + rung["nodes"]) * G
    ok(declare(server, growers[a], want, float(price)))
    if price - STEP >= RESERVE:
        ok(declare(server, growers[b], want, float(price - STEP)))
    tick(server)
    assert held(server, growers[a]) == before + rung["nodes"], (rung, ladder)
    if price - STEP >= RESERVE:
        assert held(server, growers[b]) < before + rung["nodes"], (rung, ladder)


def test_declare_to_win_wins_at_the_next_tick(start_server: StartServer) -> None:
    """The ladder is priced on the auction the next tick runs: nodes granted this tick are
    under their window then, and nodes whose window ends by then compete. Here the nodes the
    newcomer could take this tick went to another cluster, and the next tick contests the
    holder's lapsing nodes at its 3.0: the price to win is 3.0001, not the 2.0001 this tick's
    auction would have said."""
    # 30-minute ticks: a VM window (1 h) lapses two ticks after its grant
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    make_island(server, "dw", nodes=4, gpus_per_node=G, reserve=1.0)
    make_account(server, "dw-acct", balance=1_000_000)
    first = make_cluster(server, "dw-acct", "dw", "vm", "dw-first")
    ok(declare(server, first, 2 * G, 3.0))
    tick(server)  # first holds 2 until an hour from now
    second = make_cluster(server, "dw-acct", "dw", "vm", "dw-second")
    ok(declare(server, second, 2 * G, 2.0))
    tick(server)  # second takes the other 2, for an hour
    me = make_cluster(server, "dw-acct", "dw", "vm", "dw-me")
    rungs = own_ladder(server, me)["rungs"]
    assert [(r["nodes"], r["price_per_gpu_hour"], r["contestable_at"]) for r in rungs[:2]] == [
        (1, 3.0001, None),
        (2, 3.0001, None),
    ]
    token = me["Authorization"].removeprefix("Bearer ")
    with SyncTenantClient(server.url, token) as client:
        client.declare_to_win(2, ceiling=Decimal("3.5"), margin=0)
    tick(server)
    assert held(server, me) == 2
