"""The crash campaign: kill -9 the real server N times under load, then check what must hold.

    .venv/bin/python bench/bench_crash.py [kills] [seed]

Starts `burstmarket serve --clock manual --tick-seconds 10` on a temporary data dir (manual
clock: each tick moves market time 10 s, so the history's 5-minute windows close every 30
ticks and the Parquet history is written during the run). An island of 8 nodes, four VM and
two Kubernetes clusters; then, until the end, one thread ticks back to back
(`POST /api/admin/ticks`), each VM cluster re-declares (`PUT /api/vm/capacity`) and each
Kubernetes cluster creates jobs, each thread sequentially, noting every write the server
acknowledged and every one whose answer the kill cut off. `kills` times (default 12), after
3-8 s (a fresh server's first tick loads the solvers, seconds on a busy machine), the server
is killed with SIGKILL and started again on the same data dir. Then a last
start (the history catches up), the acknowledged writes are read back over the API, the server
stops, and the store and the history are checked:

- ticks gap-free per island (1..n, none twice);
- no duplicate charge (one per cluster and tick) and no orphan charge (every charge has its
  tick);
- the last acknowledged declaration of every VM cluster is its state (or a later one whose
  answer was cut off), every acknowledged job exists;
- the Parquet history reads, holds no row twice, and equals the live tables over the span it
  covers, table by table (ticks, cluster_rates, allocations, ladder).

Prints the figures and exits non-zero if an invariant does not hold.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import httpx

from burstmarket.history.layout import exported_through

TOKEN = "crash-operator"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}
ISLAND = "crash"
TABLES = {
    "ticks": "tick, time, vwap, min, max, gpus, clusters, pending_gpus, reserve_price",
    "cluster_rates": "tick, time, cluster, gpus, rate, amount_usd",
    "allocations": "tick, time, cluster, node, kind",
    "ladder": "tick, time, nodes, gpus, price",
}
"""The history's tables and the columns its files hold (the island is the hive partition)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`burstmarket serve` on one data dir and port, started again after every kill."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.up = threading.Event()
        self.log = (data_dir.parent / "server.log").open("ab")
        self.starts = 0

    def start(self) -> float:
        """Start it; the seconds until it answered."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("BURSTMARKET_")}
        env["BURSTMARKET_OPERATOR_TOKEN"] = TOKEN
        command = [
            str(Path(sys.executable).parent / "burstmarket"),
            "serve",
            "--clock",
            "manual",
            "--tick-seconds",
            "10",
            "--data-dir",
            str(self.data_dir),
            "--port",
            str(self.port),
        ]
        began = time.monotonic()
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        with httpx.Client(base_url=self.url, timeout=5) as client:
            while True:
                if self.process.poll() is not None:
                    raise SystemExit(f"the server exited at start; see {self.log.name}")
                try:
                    if client.get("/api/islands").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
        self.starts += 1
        self.up.set()
        return time.monotonic() - began

    def kill(self) -> None:
        self.up.clear()
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        self.up.clear()
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


@dataclass
class Writes:
    """What one load thread asked for: acknowledged, and cut off by a kill (unknown)."""

    acked: list[Any] = field(default_factory=list)
    unknown: list[Any] = field(default_factory=list)
    refused: int = 0

    def answer(self, value: Any, response: httpx.Response | None) -> None:
        if response is None:
            self.unknown.append(value)
        elif response.status_code < 300:
            self.acked.append(value)
        else:
            self.refused += 1


class Load:
    def __init__(self, server: Server, auth: dict[str, dict[str, str]], seed: int) -> None:
        self.server = server
        self.auth = auth
        self.rng = random.Random(seed)
        self.done = threading.Event()
        self.writes = {name: Writes() for name in auth}
        self.ticks = Writes()
        self.threads = [threading.Thread(target=self._ticker, daemon=True)] + [
            threading.Thread(target=self._tenant, args=(name,), daemon=True) for name in auth
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join(60)

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        """The answer, or None if the connection broke (the server was killed meanwhile)."""
        self.server.up.wait()
        try:
            with httpx.Client(base_url=self.server.url, timeout=30) as client:
                return client.request(method, path, **kwargs)
        except httpx.TransportError:
            return None

    def _ticker(self) -> None:
        while not self.done.is_set():
            began = time.monotonic()
            response = self._call("POST", "/api/admin/ticks", json={"count": 1}, headers=OPERATOR)
            self.ticks.answer(time.monotonic() - began, response)

    def _tenant(self, name: str) -> None:
        rng = random.Random(f"{self.rng.random()}{name}")
        writes = self.writes[name]
        n = 0
        while not self.done.is_set():
            if name.startswith("vm"):
                gpus = 8 * rng.randrange(0, 5)
                body = {"max_gpus": gpus, "max_price_per_gpu_hour": rng.choice([2, 3, 4, 5])}
                writes.answer(
                    gpus, self._call("PUT", "/api/vm/capacity", json=body, headers=self.auth[name])
                )
            else:
                n += 1
                job = {"name": f"{name}-{n}", "nodes": 1, "limit_price_per_gpu_hour": 3}
                writes.answer(
                    job["name"],
                    self._call("POST", "/api/k8s/jobs", json=job, headers=self.auth[name]),
                )
                if n > 2:  # a few jobs at a time: the one before last finishes
                    self._call("DELETE", f"/api/k8s/jobs/{name}-{n - 2}", headers=self.auth[name])
            time.sleep(rng.random() * 0.2)


def setup(server: Server) -> dict[str, dict[str, str]]:
    with httpx.Client(base_url=server.url, timeout=30) as client:

        def ok(response: httpx.Response) -> Any:
            assert response.status_code < 300, response.text
            return response.json()

        island = {"gpus_per_node": 8, "nodes": 8, "reserve_price": 1.0}
        ok(client.put(f"/api/admin/islands/{ISLAND}", json=island, headers=OPERATOR))
        account = {"name": "crash-acct", "balance_usd": 10_000_000}
        ok(client.post("/api/admin/accounts", json=account, headers=OPERATOR))
        auth = {}
        for name in ("vm-a", "vm-b", "vm-c", "vm-d", "k8s-a", "k8s-b"):
            kind = name.split("-")[0]
            body = {"account": "crash-acct", "island": ISLAND, "kind": kind, "name": name}
            token = ok(client.post("/api/admin/clusters", json=body, headers=OPERATOR))["token"]
            auth[name] = {"Authorization": f"Bearer {token}"}
            if kind == "k8s":
                ok(
                    client.put(
                        "/api/k8s/bid", json={"limit_price_per_gpu_hour": 3}, headers=auth[name]
                    )
                )
        return auth


def acknowledged_writes_present(server: Server, load: Load) -> list[str]:
    """What an acknowledged write left behind, read back over the API (empty: all there)."""
    problems = []
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for name, writes in load.writes.items():
            auth = load.auth[name]
            if name.startswith("vm"):
                state = client.get("/api/vm/capacity", headers=auth).json()["max_gpus"]
                # the last acknowledged value, unless a later write's answer was cut off
                allowed = set(writes.acked[-1:]) | set(writes.unknown)
                if writes.acked and state not in allowed:
                    problems.append(
                        f"{name}: max_gpus {state}, last acknowledged {writes.acked[-1]}"
                    )
            else:
                jobs = {job["name"] for job in client.get("/api/k8s/jobs", headers=auth).json()}
                lost = [job for job in writes.acked if job not in jobs]
                if lost:
                    problems.append(f"{name}: acknowledged jobs missing: {lost[:5]}")
    return problems


def store_invariants(data_dir: Path) -> dict[str, Any]:
    """The figures of every invariant over the store and its history (0 where it holds)."""
    con = duckdb.connect(str(data_dir / "market.duckdb"), read_only=True)
    try:
        one = lambda query: con.execute(query).fetchone()  # noqa: E731
        figures: dict[str, Any] = {}
        gaps = con.execute(
            "SELECT island, count(*), min(tick), max(tick), count(DISTINCT tick) FROM ticks "
            "GROUP BY island ORDER BY island"
        ).fetchall()
        figures["ticks"] = {island: count for island, count, *_ in gaps}
        figures["tick gaps or repeats"] = sum(
            (low != 1) + (high != count) + (distinct != count)
            for _, count, low, high, distinct in gaps
        )
        figures["duplicate charges"] = one(
            "SELECT count(*) - count(DISTINCT (island, tick, cluster)) FROM ledger "
            "WHERE kind = 'charge'"
        )[0]
        figures["orphan charges"] = one(
            "SELECT count(*) FROM ledger l WHERE kind = 'charge' AND NOT EXISTS "
            "(SELECT 1 FROM ticks t WHERE t.island = l.island AND t.tick = l.tick)"
        )[0]
        figures["charges"] = one("SELECT count(*) FROM ledger WHERE kind = 'charge'")[0]
        history = data_dir / "history"
        through = exported_through(history, ISLAND)
        figures["history through"] = None if through is None else through.isoformat()
        mismatched = 0
        history_rows = 0
        for table, columns in TABLES.items() if through is not None else ():
            files = str(history / table / "**" / "*.parquet")
            params = {"island": ISLAND, "through": through}
            stored = (
                f"SELECT {columns} FROM read_parquet('{files}', hive_partitioning = true) "
                "WHERE island = $island"
            )
            live = f"SELECT {columns} FROM {table} WHERE island = $island AND time < $through"
            history_rows += con.execute(
                f"SELECT count(*) FROM ({stored})", {"island": ISLAND}
            ).fetchone()[0]
            for left, right in ((stored, live), (live, stored)):
                mismatched += con.execute(
                    f"SELECT count(*) FROM ({left} EXCEPT ALL {right})", params
                ).fetchone()[0]
        figures["history rows"] = history_rows
        figures["history rows unequal to live"] = mismatched
        return figures
    finally:
        con.close()


def main(kills: int, seed: int) -> int:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bench-crash-") as tmp:
        data_dir = Path(tmp) / "data"
        server = Server(data_dir)
        starts = [server.start()]
        auth = setup(server)
        load = Load(server, auth, seed)
        began = time.monotonic()
        load.start()
        for _ in range(kills):
            time.sleep(3 + 5 * rng.random())
            server.kill()
            starts.append(server.start())
        time.sleep(3 + 5 * rng.random())
        load.stop()
        server.kill()
        starts.append(server.start())  # the history catches up at start
        time.sleep(3)
        problems = acknowledged_writes_present(server, load)
        server.stop()
        elapsed = time.monotonic() - began
        figures = store_invariants(data_dir)

    acked = sum(len(w.acked) for w in load.writes.values())
    unknown = sum(len(w.unknown) for w in load.writes.values())
    refused = sum(w.refused for w in load.writes.values())
    print(
        f"crash campaign: {kills} kill -9 under load in {elapsed:.0f} s (seed {seed}, "
        f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores)"
    )
    print(
        f"  server starts: {len(starts)}, seconds to answer: median "
        f"{sorted(starts)[len(starts) // 2]:.1f}, max {max(starts):.1f}"
    )
    tick_seconds = sorted(load.ticks.acked) or [0.0]
    print(
        f"  manual tick requests: {len(load.ticks.acked)} answered (median "
        f"{tick_seconds[len(tick_seconds) // 2] * 1000:.0f} ms), "
        f"{len(load.ticks.unknown)} cut off by a kill"
    )
    print(f"  tenant writes: {acked} acknowledged, {refused} refused, {unknown} cut off")
    for name, value in figures.items():
        print(f"  {name}: {value}")
    print(f"  acknowledged writes missing: {len(problems)}")
    for problem in problems:
        print(f"    {problem}")
    failed = (
        problems
        or any(
            figures[key]
            for key in (
                "tick gaps or repeats",
                "duplicate charges",
                "orphan charges",
                "history rows unequal to live",
            )
        )
        or not figures["history rows"]
    )
    print("  invariants:", "VIOLATED" if failed else "all hold")
    return 1 if failed else 0


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:]]
    sys.exit(main(*(arguments + [12, 1][len(arguments) :])))
