"""`burstmarket backtest` on a simulated period (one simulation for the module): the strategy
that bids a cluster's own recorded bids re-runs the record exactly, for a VM and a Kubernetes
cluster (every history table and the whole ledger, to the ledger unit); a newcomer that bids
above the ladder wins nodes and the others lose what it takes; what cannot be backtested is
refused in one line with exit 2."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pytest

from burstmarket.clock import to_datetime
from burstmarket.record.backtest import Options, Result, backtest
from burstmarket.record.own_bids import own_bids
from burstmarket.record.recorded import read
from burstmarket.record.strategy import load
from burstmarket.simulation.history import SimulateOptions, simulate
from burstmarket.simulation.population import ISLANDS
from tests import docs
from tests.conftest import BURSTMARKET

pytestmark = pytest.mark.early  # a simulation of minutes: handed out first

BACKTESTS = "# Backtests: a bidding strategy re-run through the whole tick"
"""The section of docs/analysts.md whose strategy runs here, as written."""
COMPARED = ("ticks", "cluster_rates", "allocations", "ladder", "receipts")
"""Every history table a tick writes (the demand journal's bodies are the backtest's own)."""


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Half a day of 30-minute ticks on the demo islands: 24 ticks each."""
    out = tmp_path_factory.mktemp("simulated")
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        asyncio.run(simulate(SimulateOptions(out=out, days=0.5)))
    finally:
        # simulate logs to its data dir's file: closed, and the test's own logging back
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:], root.level = handlers, level
    return out


def burstmarket(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command line, in a process of its own (it logs to a file of its own)."""
    return subprocess.run(
        [str(BURSTMARKET), *args], capture_output=True, text=True, timeout=600, check=False
    )


def busiest(history: Path, kind: str) -> str:
    """The cluster of `kind` on `ref` that changed its demand most often (a VM cluster that
    declared, a Kubernetes one that ran jobs and bought no base load)."""
    requests = read(history).requests
    made = {
        json.loads(r.body)["name"]: json.loads(r.body)
        for r in requests
        if r.path == "/api/admin/clusters"
    }
    buyers = {r.cluster for r in requests if r.path == "/api/base-load"}
    counts: dict[str, int] = {}
    for r in requests:
        c = made.get(r.cluster or "")
        if c and c["kind"] == kind and c["island"] == "ref" and r.declares():
            counts[r.cluster or ""] = counts.get(r.cluster or "", 0) + 1
    return max((n, c) for c, n in counts.items() if c not in buyers)[1]


def table(history: Path, name: str) -> pl.DataFrame:
    frame = pl.read_parquet(history / name / "**" / "*.parquet", hive_partitioning=True)
    return frame.drop("month").sort(frame.columns[:-1])


def ledger(data_dir: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(data_dir / "market.duckdb"), read_only=True) as con:
        return con.execute("SELECT * FROM ledger ORDER BY ALL").fetchall()


def assert_identity(simulated: Path, kept: Path, result: Result) -> None:
    ticks = result.ticks
    assert ticks.height == 24
    assert ticks["held_gpus"].sum() > 0, "a cluster that held nothing proves little"
    for column in (
        "held_gpus",
        "market_gpus",
        "rate",
        "amount_usd",
        "pending_gpus",
        "pending_reason",
    ):
        assert ticks[column].to_list() == ticks[f"recorded_{column}"].to_list(), column
    assert result.recorded is not None
    mine, was = result.strategy, result.recorded
    assert mine == was
    assert result.others_refused == 0
    for name in COMPARED:
        assert table(kept / "history", name).equals(table(simulated / "history", name)), name
    assert ledger(kept) == ledger(simulated)


def test_replaying_a_vm_clusters_own_bids_reproduces_the_record(
    simulated: Path, tmp_path: Path
) -> None:
    history = simulated / "history"
    cluster = busiest(history, "vm")
    kept = tmp_path / "kept"
    result = backtest(Options(history, own_bids(history, cluster), cluster=cluster, keep=kept))
    assert (result.cluster, result.island) == (cluster, "ref")
    assert_identity(simulated, kept, result)


def test_replaying_a_kubernetes_clusters_own_bids_reproduces_the_record(
    simulated: Path, tmp_path: Path
) -> None:
    history = simulated / "history"
    cluster = busiest(history, "k8s")
    kept = tmp_path / "kept"
    result = backtest(Options(history, own_bids(history, cluster), cluster=cluster, keep=kept))
    assert_identity(simulated, kept, result)


def test_the_docs_strategy_wins_nodes_as_a_newcomer_and_others_lose_them(
    simulated: Path, tmp_path: Path
) -> None:
    """docs/analysts.md's strategy, as written (the README shows the same), from the sixth tick
    on (the island full by then): it bids above what the ladder says its nodes take, so it wins
    them, and the others hold that many fewer than they did in the record at that tick."""
    (code,) = docs.code("docs/analysts.md", "python", BACKTESTS)
    assert docs.code("README.md", "python", "## Analysts: the record") == [code]
    strategy = tmp_path / "above_the_ladder.py"
    strategy.write_text(code)
    history = simulated / "history"
    start = sorted(time for time, island in read(history).ticks if island == "ref")[5]
    kept = tmp_path / "kept"
    options = Options(
        history, load(strategy), newcomer="vm", island="ref", start=to_datetime(start), keep=kept
    )
    result = backtest(options)
    assert result.recorded is None
    ticks = result.ticks
    assert ticks["tick"][0] == 6
    holding = ticks.filter(pl.col("held_gpus") > 0)
    assert holding.height > 0, ticks
    first = holding["tick"][0]
    want = 4  # the page's WANT
    (ref,) = (plan for plan in ISLANDS if plan.id == "ref")
    assert holding["held_gpus"][0] == want * ref.gpus_per_node
    assert result.strategy.spend_usd > 0

    def others(root: Path) -> int:
        allocations = table(root, "allocations")
        return allocations.filter(
            (pl.col("island") == "ref")
            & (pl.col("tick") == first)
            & (pl.col("cluster") != result.cluster)
        ).height

    before = others(history)
    assert before > ref.nodes - want, "the island had room: nobody lost anything"
    assert others(kept / "history") == ref.nodes - want


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no-history", "holds no history with a demand journal"),
        ("unknown-cluster", "no cluster nobody in the record"),
        ("no-function", "defines no function decide(tick, own)"),
    ],
)
def test_what_cannot_be_backtested_is_refused_in_one_line_with_exit_2(
    simulated: Path, tmp_path: Path, case: str, expected: str
) -> None:
    strategy = tmp_path / "strategy.py"
    strategy.write_text("def decide(tick, own):\n    return None\n")
    history, cluster = str(simulated / "history"), busiest(simulated / "history", "vm")
    if case == "no-history":
        history = str(tmp_path)
    elif case == "unknown-cluster":
        cluster = "nobody"
    else:
        strategy.write_text("def choose(tick, own):\n    return None\n")
    args = ["backtest", "--history", history, "--strategy", str(strategy), "--cluster", cluster]
    ran = burstmarket(*args, "--out", str(tmp_path / "out.parquet"))
    assert ran.returncode == 2
    (line,) = (ran.stdout + ran.stderr).strip().splitlines()
    assert line.startswith("burstmarket backtest: "), line
    assert expected in line


def test_a_strategy_that_raises_is_refused_naming_its_tick(simulated: Path, tmp_path: Path) -> None:
    strategy = tmp_path / "strategy.py"
    strategy.write_text("def decide(tick, own):\n    raise ValueError('no idea')\n")
    history = simulated / "history"
    args = ["backtest", "--history", str(history), "--strategy", str(strategy)]
    ran = burstmarket(
        *args, "--as-newcomer", "k8s", "--island", "edge", "--out", str(tmp_path / "out.parquet")
    )
    assert ran.returncode == 2
    (line,) = (ran.stdout + ran.stderr).strip().splitlines()
    assert "the strategy raised at tick " in line, line
    assert "ValueError: no idea" in line
    assert not (tmp_path / "out.parquet").exists()
