"""The core's fallback when constraint generation does not close in its round budget."""

from __future__ import annotations

import pytest

from burstmarket.auction import IslandInput, Unit, clear, core

USD = 1_000_000


def test_fallback_still_lands_in_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    # no rounds at all: straight from VCG (4, 4) toward the bids (6, 6) until nothing blocks
    monkeypatch.setattr(core, "_MAX_ROUNDS", 0)
    island = IslandInput(
        nodes=2,
        gpus_per_node=1,
        reserve_price=0,
        units=(
            Unit("a", "A", 1, 6 * USD, 1),
            Unit("b", "B", 1, 6 * USD, 2),
            Unit("g", "G", 2, 5 * USD, 0),
        ),
    )
    result = clear(island)
    assert [result.clusters[c].core for c in ("A", "B")] == [5 * USD, 5 * USD]


def test_fallback_keeps_a_point_already_in_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "_MAX_ROUNDS", 0)
    island = IslandInput(2, 1, 0, (Unit("a", "A", 1, 6 * USD, 1), Unit("b", "B", 1, 3 * USD, 2)))
    # nothing blocks VCG (both pay the reserve, 0): the fallback must not move them
    assert [clear(island).clusters[c].core for c in ("A", "B")] == [0, 0]
