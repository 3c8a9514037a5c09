"""`burstmarket backtest` of a simulated day of 10-second ticks on the demo islands (8,640 ticks
each). Prints figures; asserts nothing.

    .venv/bin/python bench/bench_backtest.py              # builds data/bench/backtest-24h once
    .venv/bin/python bench/bench_backtest.py --hours 2    # a shorter period (its own cache)
    .venv/bin/python bench/bench_backtest.py --rebuild    # simulates it again
    .venv/bin/python bench/bench_backtest.py --profile    # and where the backtest's time goes

The period is `burstmarket simulate --days HOURS/24 --tick-seconds 10`, cached under
data/bench/ (a day takes the better part of an hour to build on a busy 2-core machine: the whole
service ticks it, the tenants' requests included). The backtest is the identity one: the VM
cluster that declared most often replays its own recorded bids, so every recorded request and
tick runs again through the service's own app and store (docs/analysts.md "Backtests"). The
figures: recorded ticks (all islands) re-run per second, the total time and the CPU time, with
the load the machine had.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time
from collections import Counter
from pathlib import Path

from burstmarket.record.backtest import Options, backtest
from burstmarket.record.own_bids import own_bids
from burstmarket.record.recorded import read
from simulated import BENCH, build


def busiest_vm(history: Path) -> str:
    """The VM cluster whose declarations the record holds most of."""
    declared = Counter(
        r.cluster for r in read(history).requests if r.path == "/api/vm/capacity" and r.cluster
    )
    return declared.most_common(1)[0][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0, help="market hours to simulate")
    parser.add_argument("--rebuild", action="store_true", help="simulate the period again")
    parser.add_argument("--profile", action="store_true", help="print the top of a profile")
    args = parser.parse_args()
    period = BENCH / f"backtest-{args.hours:g}h"
    if args.rebuild or not (period / "history").is_dir():
        print(f"building {period} (simulate, 10-second ticks) ...", flush=True)
        print(f"built in {build(period, args.hours / 24):.0f} s")
    history = period / "history"
    ticks = len(read(history).ticks)
    cluster = busiest_vm(history)
    load = os.getloadavg()
    profile = cProfile.Profile() if args.profile else None
    cpu, started = time.process_time(), time.perf_counter()
    if profile is not None:
        profile.enable()
    result = backtest(Options(history, own_bids(history, cluster), cluster=cluster))
    if profile is not None:
        profile.disable()
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    same = result.ticks["amount_usd"].to_list() == result.ticks["recorded_amount_usd"].to_list()
    print(
        f"backtest of {cluster}: {ticks} recorded ticks in {took:.1f} s ({cpu:.1f} s CPU), "
        f"{ticks / took:.0f} ticks/s; its bill per tick as recorded: {same} "
        f"(load average before {load[0]:.1f}, after {os.getloadavg()[0]:.1f}, "
        f"{os.cpu_count()} cores)"
    )
    if profile is not None:
        shown = io.StringIO()
        pstats.Stats(profile, stream=shown).sort_stats("tottime").print_stats(20)
        print(shown.getvalue())


if __name__ == "__main__":
    main()
