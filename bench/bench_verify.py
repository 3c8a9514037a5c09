"""`burstmarket verify` of a simulated day of 10-second ticks on the demo islands (8,640 ticks
each). Prints figures; asserts nothing.

    .venv/bin/python bench/bench_verify.py            # builds data/bench/verify-day once
    .venv/bin/python bench/bench_verify.py --rebuild  # simulates the day again

The day is `burstmarket simulate --days 1 --tick-seconds 10`, cached under data/bench/ (it takes
62 minutes to build on a busy 2-core machine: the whole service ticks it, the
tenants' requests included), and verify runs on its history as the command does: the engine
re-run on every recorded tick, compared with the record, then the ledger's check. The figures:
the recorded ticks re-run per second and the total time, with the load the machine had.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from burstmarket.record.verify import verify
from simulated import BENCH, build

DAY = BENCH / "verify-day"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild", action="store_true", help="simulate the day again")
    parser.add_argument("--day", type=Path, default=DAY, help="the simulated data dir")
    args = parser.parse_args()
    if args.rebuild or not (args.day / "history").is_dir():
        print(f"building {args.day} (simulate --days 1 --tick-seconds 10) ...", flush=True)
        print(f"built in {build(args.day, 1):.0f} s")
    load = os.getloadavg()
    started = time.perf_counter()
    found = verify(args.day / "history")
    took = time.perf_counter() - started
    print(found.summary())
    print(
        f"verify: {found.ticks} ticks in {took:.1f} s, {found.ticks / took:.0f} ticks/s "
        f"(load average before {load[0]:.1f}, after {os.getloadavg()[0]:.1f}, "
        f"{os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
