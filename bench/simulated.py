"""A simulated period of 10-second ticks for the benches, cached under data/bench/ (building
one takes minutes per simulated hour on a busy 2-core machine: the whole service ticks it, the
tenants' requests included)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

BURSTMARKET = Path(sys.executable).parent / "burstmarket"
BENCH = Path(__file__).parents[1] / "data" / "bench"


def build(out: Path, days: float) -> float:
    """Simulate `days` of 10-second ticks into `out` (beside it first: a half-built one is never
    taken for one); the seconds it took."""
    building = out.with_name(out.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    started = time.perf_counter()
    command = [str(BURSTMARKET), "simulate", "--days", f"{days:.6f}", "--tick-seconds", "10"]
    subprocess.run(
        [*command, "--out", str(building)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    took = time.perf_counter() - started
    shutil.rmtree(out, ignore_errors=True)
    building.rename(out)
    return took
