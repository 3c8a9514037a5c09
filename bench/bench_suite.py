"""Where the test suite's CPU goes: every test run one at a time, and the machine's CPU (every
process: the test's, its servers', its browser's) counted around each. Prints figures.

    .venv/bin/python bench/bench_suite.py [pytest arguments, e.g. tests/e2e]

`make test` runs on every core at once, so its wall time is about the suite's CPU over the
cores (it keeps them busy) and a test's own duration there counts its neighbours' turns. This
runs the suite on one worker instead (about 16 minutes for the whole), so the machine's busy
time between a test's start and end is that test's, setup and teardown included, and prints
the CPU seconds and wall seconds per file and for the costliest tests. Run it on a quiet
machine: other work's CPU is counted too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT_ENV = "BENCH_SUITE_OUT"
SHOWN = 25


def busy_seconds() -> float:
    """The machine's busy CPU seconds since boot, over every core (/proc/stat)."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """The plugin's one hook (loaded into the worker by `-p bench_suite`): a line per test."""
    cpu, wall = busy_seconds(), time.monotonic()
    yield
    row = {"id": item.nodeid, "cpu": busy_seconds() - cpu, "wall": time.monotonic() - wall}
    with open(os.environ[OUT_ENV], "a") as out:
        out.write(json.dumps(row) + "\n")


def report(rows: list[dict[str, Any]]) -> None:
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        totals = files[row["id"].split("::")[0]]
        totals[0] += row["cpu"]
        totals[1] += row["wall"]
    cpu = sum(r["cpu"] for r in rows)
    wall = sum(r["wall"] for r in rows)
    print(f"{len(rows)} tests: {cpu:.0f} CPU s over {wall:.0f} s, one at a time")
    print(f"{'CPU s':>8} {'wall s':>8}  file (the {SHOWN} costliest)")
    for name, (c, w) in sorted(files.items(), key=lambda kv: -kv[1][0])[:SHOWN]:
        print(f"{c:8.1f} {w:8.1f}  {name}")
    print(f"{'CPU s':>8} {'wall s':>8}  test (the {SHOWN} costliest)")
    for row in sorted(rows, key=lambda r: -r["cpu"])[:SHOWN]:
        print(f"{row['cpu']:8.1f} {row['wall']:8.1f}  {row['id']}")


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "tests.jsonl"
        out.touch()
        env = {
            **os.environ,
            OUT_ENV: str(out),
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")])
            ),
        }
        args = [sys.executable, "-m", "pytest", "-p", "bench_suite", "-n", "1", "-q", *sys.argv[1:]]
        subprocess.run(args, cwd=ROOT, env=env, check=False)
        report([json.loads(line) for line in out.read_text().splitlines()])


if __name__ == "__main__":
    main()
