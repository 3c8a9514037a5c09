"""One tick as a pure function: held nodes stay put, grants take free nodes in order, node count
is conserved, nobody pays above a ceiling or below the reserve, charges are rate x GPUs x time."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.clock import NS_PER_HOUR, NS_PER_MS, NS_PER_S
from burstmarket.market.model import Cluster, Island, Node, Tranche
from burstmarket.market.tick import TickInput, TickOutput, run_tick
from tests.conftest import examples
from tests.constants import T0, USD

G = 8
INTERVAL = 600 * NS_PER_S


def vm(cid: str, gpus: int, price: int, since: int = 0) -> Cluster:
    demand = [Tranche(gpus // G, since, 0)] if gpus else []
    return Cluster(cid, "acct", "i", "vm", gpus, price, demand, None, None, None, None)


def nodes(count: int) -> list[Node]:
    return [
        Node("i", f"i-n{k}", k, None, None, None, None, None, None, None, None, None)
        for k in range(count)
    ]


def run(clusters: list[Cluster], island: list[Node], tick: int, reserve: int) -> TickOutput:
    return run_tick(
        TickInput(
            island=Island("i", G, len(island), reserve, None),
            tick=tick,
            time=T0 + tick * INTERVAL,
            interval_ns=INTERVAL,
            clusters={c.id: c for c in clusters},
            nodes=island,
            jobs=[],
            balances={"acct": 10**30},
            spent={},
            rates={},
        )
    )


def test_a_held_node_whose_unit_wins_stays_where_it_is() -> None:
    island = nodes(2)
    a = vm("a", 8, 5 * USD)
    run([a], island, 1, USD)
    held = [n.id for n in island if n.cluster == "a"]
    assert held == ["i-n0"]
    # its window lapses; a newcomer bids lower for the other node
    for n in island:
        if n.cluster == "a":
            n.window_ends_at = T0
    b = vm("b", 8, 3 * USD, since=T0 + 2 * INTERVAL)
    out = run([a, b], island, 2, USD)
    assert [n.id for n in island if n.cluster == "a"] == held
    assert [n.id for n in island if n.cluster == "b"] == ["i-n1"]
    assert {(c, n) for c, n, _ in out.allocations} == {("a", "i-n0"), ("b", "i-n1")}


@settings(max_examples=examples(40), deadline=None)
@given(
    size=st.integers(1, 5),
    bids=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 60)), min_size=1, max_size=5),
    reserve=st.integers(1, 20),
    ticks=st.integers(1, 8),
)
def test_node_count_is_conserved_and_rates_respect_ceiling_and_reserve(
    size: int, bids: list[tuple[int, int]], reserve: int, ticks: int
) -> None:
    island = nodes(size)
    clusters = [
        vm(f"c{i}", want * G, price * USD // 10, since=i) for i, (want, price) in enumerate(bids)
    ]
    for tick in range(1, ticks + 1):
        # windows lapse every other tick so held nodes also compete
        if tick % 2:
            for n in island:
                n.window_ends_at = None if n.cluster is None else T0
        out = run(clusters, island, tick, reserve * USD // 10)
        holders = [n.cluster for n in island if n.cluster is not None]
        assert len(out.allocations) == len(holders) <= size
        assert len({node for _, node, _ in out.allocations}) == len(out.allocations)
        for c in clusters:
            assert holders.count(c.id) * G <= c.max_gpus
        for cid, rate in out.rates.items():
            c = next(c for c in clusters if c.id == cid)
            locked = [n.locked_price or 0 for n in island if n.cluster == cid]
            assert rate <= max([c.max_price or 0, *locked])
            assert rate >= reserve * USD // 10
        charges = {e.cluster: e for e in out.ledger if e.kind == "charge"}
        assert set(charges) == set(out.rates)
        for cid, entry in charges.items():
            gpus = holders.count(cid) * G
            assert entry.gpus == gpus
            assert entry.units == out.rates[cid] * gpus * (INTERVAL // NS_PER_MS)


def test_a_grant_commits_its_worst_case_before_it_is_visible() -> None:
    island = nodes(2)
    a = vm("a", 16, 3 * USD)
    out = run([a], island, 1, USD)
    kinds = [e.kind for e in out.ledger]
    assert kinds.index("commitment") >= 0
    commitment = next(e for e in out.ledger if e.kind == "commitment")
    assert commitment.units == 3 * USD * 16 * (NS_PER_HOUR // NS_PER_MS)
    assert all(n.commit_ends_at == T0 + INTERVAL + NS_PER_HOUR for n in island)
