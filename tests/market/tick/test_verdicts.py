"""Why demand waits (market/tick/verdicts.py, docs/market.md "Why it waits") where the own
ladder has no rung for the pending nodes: windows hold them past its hour. Each case on a
hand-made island, through run_tick."""

from __future__ import annotations

from burstmarket.market.model import PendingDetail
from burstmarket.market.tick import run_tick
from tests.market.support import HOUR, MINUTE, T0, USD, free_nodes, hold, job, k8s, tick_input


def test_nodes_held_past_the_ladders_hour_wait_for_windows_until_enough_of_them_end() -> None:
    """Three nodes under Kubernetes windows (2 h) ending at +90, +100 and +110 minutes, one of
    them the waiting cluster's own: a gang of 2 more waits until the others' second ends."""
    n0, n1, n2 = free_nodes(3)
    hold(n0, "a", job="a1", window=T0 + 110 * MINUTE, hold=T0 + HOUR)
    hold(n1, "b", job="b1", window=T0 + 90 * MINUTE, hold=T0 + HOUR)
    hold(n2, "w", job="w1", window=T0 + 100 * MINUTE, hold=T0 + HOUR)
    running = [job(c, f"{c}1", 1, state="running") for c in "abw"]
    gang = job("w", "gang", 2, limit=5 * USD)
    clusters = [k8s("a"), k8s("b"), k8s("w")]
    out = run_tick(tick_input(clusters, [n0, n1, n2], jobs=[*running, gang], at=T0))

    assert out.own_ladders["w"] == ()  # nothing to price within the hour
    assert (gang.pending_reason, gang.pending_detail) == (
        "windows",
        PendingDetail(ceiling=5 * USD, nodes=2, contestable_at=T0 + 110 * MINUTE),
    )
    assert {c.id: c.pending_reason for c in out.clusters}["w"] == "windows"
    assert all(j.pending_reason is None for j in running)
