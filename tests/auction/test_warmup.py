"""The engine compiled at start-up: after `warm_up`, clearing a large realistic island and pricing
its clusters' own ladders (what a tick does) compiles nothing more (run in a fresh interpreter,
where nothing has been compiled yet)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench"  # instances.py, the benchmarks' islands
PROBE = """
import json, sys
import numba
from burstmarket.auction import clear, growth, kernels
from burstmarket.auction.warmup import warm_up
sys.path.insert(0, sys.argv[1])
import instances

def compiled():
    return {
        name: len(kernel.signatures)
        for name, kernel in vars(kernels).items()
        if isinstance(kernel, numba.core.registry.CPUDispatcher)
    }

before = compiled()
warm_up()
warmed = compiled()
for family in (instances.island, instances.kubernetes_heavy, instances.vm_heavy):
    island = family(400, 1200, 150, seed=7)
    clear(island)
    supply, g, r = island.nodes, island.gpus_per_node, island.reserve_price
    mine = island.units[0].cluster
    own = frozenset(u.id for u in island.units if u.cluster == mine)
    others = growth.without(island.units, supply, g, r, [own], supply)[0]
    for gang in (False, True):
        growth.prices(others, supply, 3, 16, g, r, gang)
print(json.dumps({"before": before, "warmed": warmed, "after": compiled()}))
"""


def test_after_warm_up_a_realistic_clearing_compiles_nothing_more() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", PROBE, str(BENCH)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    seen = json.loads(ran.stdout)
    assert set(seen["before"].values()) == {0}  # a fresh process: nothing compiled yet
    # the kernels Python calls directly have their code after warm_up (the others are only
    # called from compiled code, which holds their code itself)
    called_from_python = {
        "add_items",
        "advance",
        "band",
        "blocking_back",
        "bundle",
        "dominated",
        "first_of_each_size",
        "growth_steps_rows",
        "most_blocking",
        "optima",
        "preferred",
        "separate",
        "values_without",
        "walk_bits",
    }
    assert {name for name, count in seen["warmed"].items() if count} >= called_from_python
    assert seen["after"] == seen["warmed"]
