"""Each cluster's own row of a tick (market/cluster_ticks.py, the `cluster` feed channel): the
nodes the tick moved read as Granted to their new holder and Reclaimed from the old one, a
node that only joins its own cluster's block as neither, and each row holds only its
cluster's holding and job events. On a hand-made island, through run_tick."""

from __future__ import annotations

from burstmarket.market.cluster_ticks import cluster_ticks, standing
from burstmarket.market.tick import run_tick
from tests.market.support import MINUTE, T0, USD, block, free_nodes, hold, job, k8s, tick_input, vm


def test_a_block_taking_nodes_is_a_grant_to_one_cluster_and_a_reclaim_from_another() -> None:
    """No node is free; k's block of 3 takes its own idle node n3, then b's idle n1 and b's busy
    n2 (its job goes back to pending); a keeps n0."""
    n0, n1, n2, n3 = free_nodes(4)
    window = T0 + 30 * MINUTE
    hold(n0, "a", window=window, locked=5 * USD)
    hold(n1, "b", window=window, hold=window, locked=USD * 3 // 2, idle_since=T0 - MINUTE)
    hold(n2, "b", job="jb", window=window, hold=window)
    hold(n3, "k", window=window, hold=window, idle_since=T0 - MINUTE)
    clusters = [vm("a", 1, 5 * USD), k8s("b"), k8s("k")]
    inp = tick_input(
        clusters,
        [n0, n1, n2, n3],
        jobs=[job("b", "jb", 1, state="running")],
        blocks=[block("k", 3)],
    )
    before = {cid: standing(c) for cid, c in inp.clusters.items()}
    rows = {row.cluster: row for row in cluster_ticks(inp, run_tick(inp), before)}

    def moved(cluster: str) -> list[tuple[str, list[str]]]:
        return [(e.type, e.nodes) for e in rows[cluster].events if e.nodes]

    assert moved("a") == []
    assert moved("b") == [("Reclaimed", ["n1", "n2"])]
    assert moved("k") == [("Granted", ["n1", "n2"])]  # n3 was k's already
    assert (rows["a"].node_ids, rows["b"].node_ids, rows["k"].node_ids) == (["n0"], [], [])
    assert (rows["a"].base_load_nodes, rows["k"].base_load_nodes) == (0, 3)
    assert ("jb", "Preempted") in [(e.job, e.type) for e in rows["b"].events]
    assert all(e.job is None for cluster in ("a", "k") for e in rows[cluster].events)
    assert all(row.tick == inp.tick and row.island == inp.island.id for row in rows.values())


def test_free_nodes_joining_a_new_block_are_granted_to_its_cluster() -> None:
    nodes = free_nodes(3)
    inp = tick_input([k8s("k")], nodes, blocks=[block("k", 2)])
    (row,) = cluster_ticks(inp, run_tick(inp), {"k": frozenset()})
    assert [(e.type, e.nodes) for e in row.events if e.nodes] == [("Granted", ["n0", "n1"])]
    assert (row.base_load_nodes, row.held_nodes) == (2, 0)
