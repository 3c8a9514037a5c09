"""A whole tick end to end on a large island (2,000 nodes by default). Prints figures.

    .venv/bin/python bench/bench_tick.py [ticks] [--nodes N] [--clusters N] [--day-behind]

By default 1,000 VM clusters each declare 5 nodes (5,000 single-node units) at prices spread
over 1.00-9.99 USD per GPU-hour on a 2,000-node island of 8 GPUs (reserve 1.0), in a real
DuckDB file; `--nodes 10000 --clusters 5000` is the large case (25,000 units). Ticks are one
hour apart, so every window has lapsed and every held node competes again: the worst case for
the tick. For each tick: the engine's own clearing time (the `clear` call
inside the tick), the whole tick (read demand, clear, apply, write every batch,
commit) and the difference, the tick's own work, which is what the market's code around the
engine costs, in wall time and in the process's CPU time (all its threads: on a shared machine
the wall time also counts other processes' turns), and where the own work's wall time went: read
the input, the rules (run_tick beside the clearing: demand, windows, apply, billing, the ladders),
write and commit, the rest. The goal: the tick's own work no more than the clearing (own/clear
CPU <= 1). `--day-behind` runs the same ticks on a market that has billed every cluster for a
day, each under a spend limit, as a live one has after its first day, then times growing
declarations of those clusters (each checked against its spend window).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from burstmarket.auction import Clearing, IslandInput  # noqa: E402
from burstmarket.auction import clear as engine_clear  # noqa: E402
from burstmarket.clock import NS_PER_HOUR, ManualClock  # noqa: E402
from burstmarket.contract import CapacityDeclaration  # noqa: E402
from burstmarket.market.desks import Tenant  # noqa: E402
from burstmarket.market.islands import create_island  # noqa: E402
from burstmarket.market.market import Market  # noqa: E402
from burstmarket.market.model import Island  # noqa: E402
from burstmarket.market.tick import clearing as tick_clearing  # noqa: E402
from burstmarket.settings import Settings  # noqa: E402
from burstmarket.store import Database  # noqa: E402

NODES_EACH, G = 5, 8
clear_times: list[tuple[float, float]] = []
"""Each clearing's wall and CPU seconds."""


def timed_clear(island: IslandInput) -> Clearing:
    started, cpu = time.perf_counter(), time.process_time()
    result = engine_clear(island)
    clear_times.append((time.perf_counter() - started, time.process_time() - cpu))
    return result


def build(data_dir: Path, nodes: int, clusters: int, day_behind: bool) -> Market:
    settings = Settings(clock="manual", data_dir=data_dir, tick_seconds=3600)
    db = Database(settings.database_path)
    clock = ManualClock(1_800_000_000 * 1_000_000_000)
    with db.write() as cur:
        create_island(cur, Island("big", G, nodes, 1_000_000, None), clock.now_ns())
        cur.execute("INSERT INTO accounts VALUES ('bench', 0)")
        cur.execute(
            "INSERT INTO ledger (ts, account, kind, gpus, gpu_ms, units) "
            "VALUES (0, 'bench', 'deposit', 0, 0, -1e30::HUGEINT)"
        )
        cur.execute(
            """
            INSERT INTO clusters (id, account, island, kind, token_hash, created_at, max_gpus,
                                  max_price, demand)
            SELECT 'c' || lpad(i::VARCHAR, 4, '0'), 'bench', 'big', 'vm', 'h' || i, 0,
                   $gpus, 1000000 + (i * 7919 % 900) * 10000,
                   [{'nodes': $nodes, 'since': i, 'seq': i}]
            FROM range($clusters) r(i)
            """,
            {"gpus": NODES_EACH * G, "nodes": NODES_EACH, "clusters": clusters},
        )
        if day_behind:
            behind(cur, clock.now_ns())
    return Market(db, clock, settings)  # reads the balance deposited above


def behind(cur: Any, now: int) -> None:
    """A day of market behind the island: every cluster has a daily spend limit (far above
    what it spends) and a window opened 20 hours ago, and the ledger a charge per cluster for
    every 10-second tick of the last 24 hours."""
    cur.execute(
        "UPDATE clusters SET spend_limit = 1e12::HUGEINT, spend_window_start = $since",
        {"since": now - 20 * NS_PER_HOUR},
    )
    cur.execute(
        """
        INSERT INTO ledger (ts, account, cluster, island, kind, gpus, gpu_ms, units)
        SELECT $start + t * 10_000_000_000, 'bench', c.id, 'big', 'charge', 40, 400_000,
               1_000_000
        FROM range(8640) r(t), clusters c
        ORDER BY 1
        """,
        {"start": now - 24 * NS_PER_HOUR},
    )


def main(ticks: int, nodes: int, clusters: int, day_behind: bool) -> None:
    tick_clearing.clear = timed_clear  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        market = build(Path(tmp), nodes, clusters, day_behind)
        # as the service does once started (api/app.py): what exists at start stays out of the
        # collector's full passes
        gc.collect()
        gc.freeze()
        clock = market.clock
        assert isinstance(clock, ManualClock)
        rows: list[tuple[float, float, float, float, Any]] = []
        parts: list[tuple[float, float, float, float]] = []
        """Each tick's own work in wall seconds: reading its input, the rules (run_tick beside
        the engine's clearing), writing and committing its rows, and the rest (the event the
        feed publishes, the locks)."""
        for _ in range(ticks):
            at = clock.advance(NS_PER_HOUR)
            started, cpu = time.perf_counter(), time.process_time()
            event = market.tick("big", at)
            whole, whole_cpu = time.perf_counter() - started, time.process_time() - cpu
            engine, engine_cpu = clear_times[-1]
            rows.append((whole, engine, engine_cpu, whole_cpu - engine_cpu, event.stats))
            spent = event.durations
            read, rules, write = spent["read"], spent["clear"] - engine, spent["commit"]
            parts.append((read, rules, write, whole - engine - read - rules - write))
        print(
            f"island: {nodes} nodes x {G} GPUs, {clusters} clusters, {clusters * NODES_EACH} units"
        )
        print(
            f"{'tick':>4} {'whole ms':>9} {'clear ms':>9} {'own ms':>9} {'clear CPU':>9}"
            f" {'own CPU':>9} {'own/clear':>9} {'read':>7} {'rules':>7} {'write':>7}"
            "  held GPUs  vwap"
        )
        for number, (row, part) in enumerate(zip(rows, parts, strict=True), start=1):
            whole, engine, engine_cpu, own_cpu, stats = row
            read, rules, write, _ = (seconds * 1e3 for seconds in part)
            print(
                f"{number:>4} {whole * 1e3:9.1f} {engine * 1e3:9.1f} {(whole - engine) * 1e3:9.1f}"
                f" {engine_cpu * 1e3:9.1f} {own_cpu * 1e3:9.1f} {own_cpu / engine_cpu:9.2f}"
                f" {read:7.1f} {rules:7.1f} {write:7.1f}  {stats.gpus:>9}  {stats.vwap}"
            )
        steady = rows[1:] or rows
        whole = statistics.median(r[0] for r in steady)
        engine = statistics.median(r[1] for r in steady)
        engine_cpu = statistics.median(r[2] for r in steady)
        own = statistics.median(r[0] - r[1] for r in steady)
        own_cpu = statistics.median(r[3] for r in steady)
        print(
            f"median (ticks 2+): whole {whole * 1e3:.1f} ms, clear {engine * 1e3:.1f} ms "
            f"({engine_cpu * 1e3:.1f} ms CPU); the tick's own work {own * 1e3:.1f} ms "
            f"({own_cpu * 1e3:.1f} ms CPU); own/clear CPU {own_cpu / engine_cpu:.2f} (goal <= 1)"
        )
        read, rules, write, rest = (
            statistics.median(p[i] for p in parts[1:] or parts) for i in range(4)
        )
        print(
            f"the own work's wall (median, ticks 2+): read the input {read * 1e3:.1f} ms, the "
            f"rules beside the clearing {rules * 1e3:.1f} ms, write and commit {write * 1e3:.1f} "
            f"ms, the rest (the feed's event, locks) {rest * 1e3:.1f} ms"
        )
        if day_behind:
            declarations(market)


def declarations(market: Market) -> None:
    """Growing declarations of limited clusters, each checked against its spend window: what
    a day of billing behind the market costs a tenant's call (answered once committed)."""
    tenant = Tenant(market)
    took = []
    for i in range(40):
        started = time.perf_counter()
        body = CapacityDeclaration((NODES_EACH + 1) * G, Decimal(9))
        asyncio.run(tenant.vm.declare(f"c{i:04d}", body))
        took.append(time.perf_counter() - started)
    print(
        f"a growing declaration of a limited cluster (40, one at a time): median "
        f"{statistics.median(took) * 1e3:.1f} ms, max {max(took) * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A whole tick end to end on a large island.")
    parser.add_argument("ticks", nargs="?", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--clusters", type=int, default=1_000)
    parser.add_argument(
        "--day-behind",
        action="store_true",
        help="spend limits, and a day of every cluster's 10-second billing in the ledger",
    )
    args = parser.parse_args()
    main(args.ticks, args.nodes, args.clusters, args.day_behind)
