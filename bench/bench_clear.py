"""The auction engine's whole clearing on large islands, beside a CP-SAT baseline. Prints figures.

    .venv/bin/python bench/bench_clear.py [--runs N] [--sample K] [--budget S] [--cpsat S]
                                          [--only NAME]
    (or: make bench; about twenty minutes on a busy 2-core machine)

Islands of 2,000 × 5,000, 10,000 × 20,000, 20,000 × 50,000 and 25,000 × 100,000 (nodes × units, the
last the size of the largest GPU clusters in service) in three families (bench/instances.py):
friendly, Kubernetes-heavy and VM-heavy. For each: the median wall time of `clear()` over N runs
after one warm-up run (start-up: the process's first call loads the compiled kernels), beside its
median CPU time (on a shared machine the wall time also counts other processes' turns), and the
median time of each phase inside it (winner determination, VCG, core, ladder), on the threads the
engine uses by default (`clear.WORKERS`: the cores it may run on, four at most) and on one thread;
the core's rounds and whether its point is the exact minimum-revenue point nearest VCG; the peak
memory of a fresh process that builds the island and clears it once; and a straightforward baseline:
CP-SAT (2 workers) solving winner determination once, plus once more per winning cluster with that
cluster's demand removed (the V(S, c̄) VCG needs). The baseline does not price the core, the ladder
or the statistics, so the ratio understates the gap. Solving V(S, c̄) for every winning cluster
would take hours, so K of them (a seeded sample) are timed and the rest extrapolated from their
mean, and each CP-SAT solve stops after `--cpsat` seconds (a solve cut short makes its time, and the
ratio, a lower bound); the output says which figures are which. A case stops taking timed runs once
it has spent `--budget` seconds (at least one is taken). A table of every case closes the output.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from burstmarket.auction import Clearing, IslandInput, clear
from instances import Solved, cpsat_value, island, kubernetes_heavy, vm_heavy

engine = importlib.import_module("burstmarket.auction.clear")  # the module, not the function

MIB = 1024 * 1024
FAMILIES: dict[str, Callable[..., IslandInput]] = {
    "friendly": island,
    "kubernetes-heavy": kubernetes_heavy,
    "vm-heavy": vm_heavy,
}
PHASES = {  # what clear() calls, by phase
    "winner determination": "optima",
    "VCG": "_without",
    "core": "core_payments",
    "ladder": "_ladder",
}


@dataclass(frozen=True)
class Size:
    nodes: int
    units: int
    clusters: int
    protected_clusters: int
    target_seconds: float | None
    target_memory: int = 1024 * MIB


SIZES = (
    Size(2_000, 5_000, 1_000, 20, 0.25),
    Size(10_000, 20_000, 4_000, 100, 1.0),
    Size(20_000, 50_000, 10_000, 200, None),
    Size(25_000, 100_000, 20_000, 250, 1.0, 1536 * MIB),  # the largest GPU clusters in service
)
CASES = [(family, size) for size in SIZES for family in FAMILIES]


def build(index: int) -> IslandInput:
    family, size = CASES[index]
    return FAMILIES[family](
        size.nodes,
        size.units,
        size.clusters,
        protected_clusters=size.protected_clusters,
        seed=size.nodes,
    )


def name(index: int) -> str:
    family, size = CASES[index]
    return f"{family} {size.nodes:,} x {size.units:,}"


@contextmanager
def phase_timer() -> Iterator[dict[str, float]]:
    """Seconds spent in each phase of the clear() calls made inside the block."""
    spent: dict[str, float] = defaultdict(float)
    originals = {attr: getattr(engine, attr) for attr in PHASES.values()}

    def timed(phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[phase] += time.perf_counter() - started

        return run

    for phase, attr in PHASES.items():
        setattr(engine, attr, timed(phase, originals[attr]))
    try:
        yield spent
    finally:
        for attr, original in originals.items():
            setattr(engine, attr, original)


def peak_rss() -> int:
    """Peak resident memory of this process, bytes. VmHWM, not getrusage's ru_maxrss: Linux
    carries the parent's peak across fork and exec into the child's ru_maxrss."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def memory_probe(index: int) -> None:
    """Runs in a fresh process: build the island, clear it once, print memory figures as JSON."""
    instance = build(index)
    before = peak_rss()
    tracemalloc.start()
    clear(instance)
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"rss_before": before, "rss_peak": peak_rss(), "traced_peak": traced}))


def measure_memory(index: int) -> dict[str, int]:
    probe = subprocess.run(
        [sys.executable, __file__, "--memory-probe", str(index)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, int] = json.loads(probe.stdout)
    return figures


def ok(passed: bool) -> str:
    return "ok" if passed else "MISSED"


@dataclass(frozen=True)
class Runs:
    result: Clearing
    wall: list[float]
    cpu: list[float]
    phases: dict[str, list[float]]


def phase_medians(runs: Runs) -> str:
    return ", ".join(
        f"{phase} {statistics.median(spent) * 1000:.1f} ms" for phase, spent in runs.phases.items()
    )


def timed_runs(instance: IslandInput, runs: int, budget: float, workers: int) -> Runs:
    started = time.perf_counter()
    # warm-up (the process loaded the kernels before), and the winners
    result = clear(instance, workers=workers)
    wall: list[float] = []
    cpu: list[float] = []
    phases: dict[str, list[float]] = defaultdict(list)
    spent = time.perf_counter() - started
    while len(wall) < runs and (not wall or spent < budget):
        with phase_timer() as split:
            began, began_cpu = time.perf_counter(), time.process_time()
            clear(instance, workers=workers)
            wall.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
        for phase in PHASES:
            phases[phase].append(split[phase])
        spent = time.perf_counter() - started
    return Runs(result, wall, cpu, phases)


def bench(index: int, runs: int, sample: int, budget: float, cpsat: float) -> list[str]:
    """Prints the case's figures; returns its row of the closing table."""
    family, size = CASES[index]
    instance = build(index)
    demanded = sum(u.nodes for u in instance.units)
    print(
        f"\n== {name(index)} ({family}): {len(instance.units):,} units, "
        f"{size.clusters:,} clusters, {len(instance.protected)} protected holdings, contestable "
        f"supply {instance.nodes:,} nodes x {instance.gpus_per_node} GPUs, {demanded:,} nodes "
        f"demanded (seed {size.nodes})",
        flush=True,
    )

    timed = timed_runs(instance, runs, budget, engine.WORKERS)
    one = timed_runs(instance, runs, budget, 1)
    assert one.result == timed.result, "one thread and several cleared differently"
    result, wall = timed.result, timed.wall
    engine_time = statistics.median(wall)
    cpu_time = statistics.median(timed.cpu)
    target = size.target_seconds
    verdict = (
        "reported"
        if target is None
        else (f"target <= {target * 1000:.0f} ms: {ok(engine_time <= target)}")
    )
    winners = sorted(c for c, held in result.clusters.items() if held.won_nodes)
    print(
        f"engine clear():   median {engine_time * 1000:9.1f} ms wall over {len(wall)} runs "
        f"beyond start-up (min {min(wall) * 1000:.1f}, max {max(wall) * 1000:.1f}); CPU "
        f"{cpu_time * 1000:.1f} ms on up to {engine.WORKERS} threads   {verdict}"
    )
    one_wall = statistics.median(one.wall)
    print(
        f"  on one thread:  median {one_wall * 1000:9.1f} ms wall over {len(one.wall)} runs; "
        f"phases {phase_medians(one)}"
    )
    print(f"  phases (median): {phase_medians(timed)}")
    print(
        f"  core: {result.core_rounds} rounds, exact minimum-revenue point nearest "
        f"VCG: {result.core_exact}; {len(winners)} winning clusters, {len(result.winners):,} "
        f"winning units, ladder of {len(result.ladder):,} rungs",
        flush=True,
    )

    memory = measure_memory(index)
    fits = memory["rss_peak"] < size.target_memory
    print(
        f"memory:           peak RSS {memory['rss_peak'] / MIB:7.1f} MiB for the whole fresh "
        f"process ({memory['rss_before'] / MIB:.1f} MiB before clear()); "
        f"tracemalloc peak inside clear() {memory['traced_peak'] / MIB:.1f} MiB   "
        f"target < {size.target_memory / MIB:,.0f} MiB: {ok(fits)}",
        flush=True,
    )

    row = [
        name(index),
        f"{engine_time * 1000:.0f}",
        f"{cpu_time * 1000:.0f}",
        f"{one_wall * 1000:.0f}",
        "-" if target is None else f"{target * 1000:.0f} {ok(engine_time <= target)}",
        str(result.core_rounds),
        str(result.core_exact),
        f"{memory['rss_peak'] / MIB:.0f}",
    ]
    if sample <= 0:
        return [*row, "-"]
    wdp = baseline_solve(instance, frozenset(), cpsat)
    if wdp.optimal:
        assert wdp.value == result.value, "CP-SAT and the engine disagree on the optimum"
    picked = random.Random(size.nodes).sample(winners, min(sample, len(winners)))
    vcg = [baseline_solve(instance, frozenset({c}), cpsat) for c in picked]
    proven = wdp.optimal and all(s.optimal for s in vcg)
    mean_vcg = statistics.mean(s.seconds for s in vcg) if vcg else 0.0
    baseline = wdp.seconds + mean_vcg * len(winners)
    bound = "" if proven else ">= "
    print(
        f"CP-SAT baseline:  winner determination {wdp.seconds:.2f} s (measured"
        f"{'' if wdp.optimal else f', stopped at {cpsat:g} s unproven'}); V(S, c̄) for "
        f"{len(picked)} sampled winning clusters {mean_vcg:.2f} s each (measured), x "
        f"{len(winners)} winning clusters (extrapolated)"
        f"{'' if proven else '; NOT all proven optimal in time: the baseline is a lower bound'}"
    )
    print(
        f"                  baseline total {bound}{baseline:8.1f} s (extrapolated)   ratio "
        f"{bound}{baseline / engine_time:,.0f}x the engine's clear()",
        flush=True,
    )
    return [*row, f"{bound}{baseline / engine_time:,.0f}x"]


def baseline_solve(instance: IslandInput, without: frozenset[str], limit: float) -> Solved:
    try:
        return cpsat_value(instance, without=without, time_limit=limit)
    except RuntimeError:  # no solution at all within the limit: it takes at least that long
        return Solved(value=-1, optimal=False, seconds=limit)


def table(rows: list[list[str]]) -> None:
    header = ["case", "wall ms", "CPU ms", "1 thread ms", "target ms", "rounds", "exact"]
    header += ["peak MiB", "CP-SAT"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(
        "\n== summary (median wall and CPU time of clear(), and its wall on one thread; peak RSS "
        "of a fresh process)"
    )
    for r in [header, *rows]:
        print("  ".join(cell.rjust(width) for cell, width in zip(r, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed clear() runs per island")
    parser.add_argument("--sample", type=int, default=2, help="winning clusters CP-SAT re-solves")
    parser.add_argument("--budget", type=float, default=20.0, help="seconds of runs per island")
    parser.add_argument("--cpsat", type=float, default=10.0, help="seconds per CP-SAT solve")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    parser.add_argument("--memory-probe", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_probe is not None:
        memory_probe(args.memory_probe)
        return
    print("burstmarket auction benchmark (figures, not assertions)")
    clear(island(200, 500, 100, protected_clusters=5))  # start-up: load the compiled kernels
    rows = [
        bench(index, args.runs, args.sample, args.budget, args.cpsat)
        for index in range(len(CASES))
        if args.only is None or args.only in name(index)
    ]
    table(rows)


if __name__ == "__main__":
    main()
