"""The age of demand and the VM cap through the real server on the manual clock (5-minute
ticks, so a VM window is 12 ticks): a held node competes with the `since` of the demand it
serves, growth dates only the added units, equal `since` goes to the write received first, and
a VM raise inside the window lifts the cap at once (docs/market.md "Demand", "Windows")."""

from __future__ import annotations

from typing import Any

from tests.conftest import Server
from tests.e2e.support import (
    declare,
    make_account,
    make_cluster,
    make_island,
    ok,
    read_job,
    set_bid,
    submit_job,
    tick,
)


def _held(server: Server, auth: dict[str, str]) -> int:
    held: int = ok(server.client.get("/api/vm/capacity", headers=auth))["held_gpus"]
    return held


def _capacity(server: Server, auth: dict[str, str]) -> Any:
    return ok(server.client.get("/api/vm/capacity", headers=auth))


def test_equal_bids_never_swap_a_node(shared_server: Server) -> None:
    """P declares before Q at the same price, before one tick: P keeps the node tick after
    tick, windows lapsing (P's node used to be dated by its grant, so Q looked older at every
    lapse and the node changed hands every hour)."""
    server = shared_server
    make_island(server, "swap", nodes=1, reserve=1.0)
    make_account(server, "swap-acct")
    p = make_cluster(server, "swap-acct", "swap", "vm", "swap-p")
    q = make_cluster(server, "swap-acct", "swap", "vm", "swap-q")
    ok(declare(server, p, 8, 3))
    ok(declare(server, q, 8, 3))
    tick(server, island="swap")
    granted = _capacity(server, p)["nodes"][0]["granted_at"]
    for _ in range(30):  # two and a half windows
        tick(server, island="swap")
        assert _held(server, p) == 8
        assert _held(server, q) == 0
    assert _capacity(server, p)["nodes"][0]["granted_at"] == granted  # never re-granted


def test_growing_a_declaration_dates_only_the_added_units(shared_server: Server) -> None:
    """A declared 8 GPUs before B; growing to 16 later keeps A's first 8 older than B's."""
    server = shared_server
    make_island(server, "grow", nodes=2, reserve=1.0)
    make_account(server, "grow-acct")
    h = make_cluster(server, "grow-acct", "grow", "vm", "grow-h")
    a = make_cluster(server, "grow-acct", "grow", "vm", "grow-a")
    b = make_cluster(server, "grow-acct", "grow", "vm", "grow-b")
    ok(declare(server, h, 16, 2))
    tick(server, island="grow")
    ok(declare(server, a, 8, 3))
    tick(server, island="grow")
    ok(declare(server, b, 8, 3))
    tick(server, island="grow")
    ok(declare(server, a, 16, 3))
    ok(declare(server, h, 8, 2))  # one node back to the island, inside H's window
    tick(server, island="grow")
    assert _held(server, a) == 8
    assert _held(server, b) == 0
    assert _capacity(server, a)["pending_gpus"] == 8


def test_equal_since_goes_to_the_write_received_first(shared_server: Server) -> None:
    """Both declare at the same market time (the manual clock stands still between ticks):
    zz13's write came first, whatever the ids spell."""
    server = shared_server
    make_island(server, "order", nodes=1, reserve=1.0)
    make_account(server, "order-acct")
    zz = make_cluster(server, "order-acct", "order", "vm", "zz13")
    aa = make_cluster(server, "order-acct", "order", "vm", "aa13")
    ok(declare(server, zz, 8, 3))
    ok(declare(server, aa, 8, 3))
    tick(server, island="order")
    assert _held(server, zz) == 8
    assert _held(server, aa) == 0
    # the same for Kubernetes jobs: the job received first runs
    make_island(server, "order-k", nodes=1, reserve=1.0)
    k1 = make_cluster(server, "order-acct", "order-k", "k8s", "zz14")
    k2 = make_cluster(server, "order-acct", "order-k", "k8s", "aa14")
    for auth in (k1, k2):
        set_bid(server, auth, 3)
    submit_job(server, k1, "b-job", 1)
    submit_job(server, k2, "a-job", 1)
    tick(server, island="order-k")
    assert read_job(server, k1, "b-job")["state"] == "running"
    assert read_job(server, k2, "a-job")["state"] == "pending"


def test_a_vm_raise_inside_the_window_lifts_the_cap_at_once(shared_server: Server) -> None:
    server = shared_server
    make_island(server, "raise", nodes=1, reserve=1.0)
    make_account(server, "raise-acct")
    x = make_cluster(server, "raise-acct", "raise", "vm", "raise-x")
    y = make_cluster(server, "raise-acct", "raise", "vm", "raise-y")
    ok(declare(server, x, 8, 2))
    tick(server, island="raise")
    ok(declare(server, y, 8, 5))
    tick(server, island="raise")
    held = _capacity(server, x)
    assert held["rate"] == 2.0  # the displaced bid of 5 is hidden by the locked bid of 2
    assert held["nodes"][0]["locked_price"] == 2.0
    ok(declare(server, x, 8, 4))
    tick(server, island="raise")
    raised = _capacity(server, x)
    assert raised["rate"] == 4.0  # cap = max(locked bid, live ceiling)
    assert raised["held_gpus"] == 8  # still inside the window
    # lowering it again: the locked bid stays the cap
    ok(declare(server, x, 8, 1.5))
    tick(server, island="raise")
    assert _capacity(server, x)["rate"] == 2.0
    # the same raise on Kubernetes moves the rate too (the live limit is its cap)
    make_island(server, "raise-k", nodes=1, reserve=1.0)
    k = make_cluster(server, "raise-acct", "raise-k", "k8s", "raise-k")
    z = make_cluster(server, "raise-acct", "raise-k", "vm", "raise-z")
    set_bid(server, k, 2)
    submit_job(server, k, "train", 1)
    tick(server, island="raise-k")
    ok(declare(server, z, 8, 5))
    tick(server, island="raise-k")
    assert read_job(server, k, "train")["rate"] == 2.0
    set_bid(server, k, 4)
    tick(server, island="raise-k")
    assert read_job(server, k, "train")["rate"] == 4.0
