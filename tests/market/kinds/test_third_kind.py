"""A third kind of demand, added the way docs/architecture.md "How to add a third kind" says,
without touching the tick: a toy `Endpoints` kind (a declared number of nodes at one fixed
price, a 30-minute window and a 15-minute minimum hold) written here against `DemandKind` and
`TickView` alone, registered in `KINDS` for the test. The tick then grants, commits, bills,
counts and refuses its demand by its rules: it asks the registry, never the kind's name."""

from __future__ import annotations

import logging

import pytest

from burstmarket.clock import NS_PER_MS
from burstmarket.errors import BidTooLow
from burstmarket.market.kinds import KINDS, Aged, Demand, DemandKind, TickView, unit
from burstmarket.market.model import Age, Cluster, Node, Tranche, unit_ages
from burstmarket.market.tick import run_tick
from tests.market.support import MINUTE, T0, USD, G, free_nodes, tick_input, vm

WINDOW = 30 * MINUTE
HOLD = 15 * MINUTE


class Endpoints(DemandKind):
    """Inference endpoints: `max_gpus` worth of nodes at `limit_price`, each node one replica."""

    window_ns = WINDOW
    hold_ns = HOLD
    runs_jobs = False

    def declared_nodes(self, c: Cluster, gpus_per_node: int) -> int | None:
        return c.max_gpus // gpus_per_node

    def served_ages(
        self, s: TickView, c: Cluster, held: list[Node]
    ) -> tuple[dict[str, Age], list[Age]]:
        """The replicas, oldest first: the oldest grant serves the oldest (one beyond them, its
        grant); the rest wait."""
        ages = unit_ages(c.demand)
        ordered = sorted(held, key=lambda n: (n.granted_at or 0, n.idx))
        served = {
            n.id: ages[i] if i < len(ages) else (n.granted_at or 0, 0)
            for i, n in enumerate(ordered)
        }
        return served, ages[len(held) :]

    def lone_unit(self, s: TickView, c: Cluster, n: Node, served: dict[str, Age]) -> Aged:
        return unit(f"n:{n.id}", Demand("held", c, [n], price=c.limit_price or 0), 1, served[n.id])

    def new_units(self, s: TickView, c: Cluster, waiting: list[Age]) -> list[Aged]:
        """Every waiting replica (the toy's clusters set no spend limit)."""
        d = Demand("declared", c, price=c.limit_price or 0)
        return [unit(f"e:{c.id}:{i}", d, 1, age) for i, age in enumerate(waiting)]

    def window_cap(self, s: TickView, c: Cluster, n: Node) -> int:
        return n.locked_price or 0

    def live_price(self, s: TickView, c: Cluster, n: Node) -> int:
        return c.limit_price or n.locked_price or 0

    def pending_gpus(self, s: TickView, c: Cluster) -> int:
        return max(0, c.max_gpus - len(s.held(c.id)) * s.gpus_per_node)

    def too_low_refusal(self, s: TickView, c: Cluster) -> BidTooLow | None:
        return BidTooLow("the price of the endpoints is under the reserve", cluster=c.id)


def endpoints(cid: str, replicas: int, price: int) -> Cluster:
    demand = [Tranche(replicas, T0, 0)]
    return Cluster(
        cid, "acct", "i", "endpoints", replicas * G, None, demand, price, None, None, None
    )  # type: ignore[arg-type]


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy kind in the registry for one test (monkeypatch takes it out again)."""
    monkeypatch.setitem(KINDS, "endpoints", Endpoints())


def test_the_tick_knows_a_kind_only_from_the_registry() -> None:
    with pytest.raises(KeyError, match="endpoints"):
        run_tick(tick_input([endpoints("e", 1, 4 * USD)], free_nodes(1)))


@pytest.mark.usefixtures("registered")
def test_a_third_kind_is_granted_committed_and_counted_on_its_own_terms() -> None:
    """Three nodes, two replicas at 4 USD and two VM nodes at 3: the replicas win two nodes
    under the toy's window and hold, the VM cluster one under its own; one VM node pends."""
    nodes = free_nodes(3)
    e, a = endpoints("e", 2, 4 * USD), vm("a", 2, 3 * USD, since=T0 + 1)
    out = run_tick(tick_input([e, a], nodes))
    replicas = [n for n in nodes if n.cluster == "e"]
    assert len(replicas) == 2
    for n in replicas:
        assert (n.window_ends_at, n.hold_until, n.idle_since) == (T0 + WINDOW, T0 + HOLD, None)
        assert (n.locked_price, n.commit_ends_at) == (4 * USD, T0 + WINDOW)
    (vm_node,) = [n for n in nodes if n.cluster == "a"]
    assert (vm_node.window_ends_at, vm_node.hold_until) == (T0 + 60 * MINUTE, None)
    commitments = {r.cluster: r.units for r in out.ledger if r.kind == "commitment"}
    assert commitments["e"] == 4 * USD * 2 * G * (WINDOW // NS_PER_MS)
    assert out.pending_gpus == G  # the toy's rule counts nothing pending for "e"
    # the next tick: the replicas' nodes are protected under their window at the toy's cap
    out = run_tick(tick_input([e, a], nodes, at=T0 + 5 * MINUTE))
    assert {(c, k) for c, _, k in out.allocations} == {("e", "protected"), ("a", "protected")}


@pytest.mark.usefixtures("registered")
def test_a_third_kinds_minimum_hold_is_billed_when_its_nodes_go() -> None:
    """A billing hold five minutes after the grant reclaims every market node: each replica
    bills the rest of its 15-minute hold; the VM node, of a kind with none, nothing."""
    nodes = free_nodes(2)
    e, a = endpoints("e", 1, 4 * USD), vm("a", 1, 3 * USD, since=T0 + 1)
    run_tick(tick_input([e, a], nodes))
    inp = tick_input([e, a], nodes, at=T0 + 5 * MINUTE)
    inp.balances = {"acct": 0}
    out = run_tick(inp)
    assert all(n.cluster is None for n in nodes)
    holds = [(r.cluster, r.period_start, r.period_end) for r in out.ledger if r.kind == "hold"]
    assert holds == [("e", T0 + 5 * MINUTE, T0 + HOLD)]


@pytest.mark.usefixtures("registered")
def test_a_third_kinds_refusal_is_logged_when_the_reserve_overtakes_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    e = endpoints("e", 1, 4 * USD)
    with caplog.at_level(logging.WARNING, logger="burstmarket.refused"):
        out = run_tick(tick_input([e], free_nodes(1), reserve=5 * USD))
    assert ("e", "bid-too-low") in out.verdicts
    lines = [r.getMessage() for r in caplog.records if "REFUSED" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].startswith("REFUSED reason=bid-too-low cluster=e ")
    assert "the price of the endpoints is under the reserve" in lines[0]
