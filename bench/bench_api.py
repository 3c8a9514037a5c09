"""`PUT /api/vm/capacity` at a target rate on loopback while ticks run. Prints figures.

    .venv/bin/python bench/bench_api.py [rate] [seconds]

Starts the real `burstmarket serve` (real clock, 1 s ticks, the default 64-node island) on a
free port with a temporary data dir, creates 64 VM clusters bidding for it, then sends PUTs
open-loop at `rate` per second (default 500) for `seconds` (default 10) from one asyncio
client over a pool of keep-alive connections. Latency = response time of each PUT. The goal is
the full rate sustained with p99 under 50 ms.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

TOKEN = "bench-operator"
CLUSTERS = 64


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    command = Path(sys.executable).parent / "burstmarket"
    env = {**os.environ, "BURSTMARKET_OPERATOR_TOKEN": TOKEN}
    args = ["serve", "--clock", "real", "--tick-seconds", "1", "--data-dir", str(data_dir)]
    return subprocess.Popen(
        [str(command), *args, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def setup(url: str) -> list[str]:
    operator = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, timeout=30) as client:
        for _ in range(200):
            try:
                client.get("/api/islands")
                break
            except httpx.TransportError:
                time.sleep(0.05)
        client.post(
            "/api/admin/accounts", json={"name": "bench", "balance_usd": 1e9}, headers=operator
        )
        tokens = []
        for i in range(CLUSTERS):
            body = {"account": "bench", "island": "ref", "kind": "vm", "name": f"b{i:03d}"}
            tokens.append(
                client.post("/api/admin/clusters", json=body, headers=operator).json()["token"]
            )
        return tokens


async def load(url: str, tokens: list[str], rate: int, seconds: float) -> None:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=10) as client:

        async def one(i: int) -> None:
            nonlocal errors
            body = {"max_gpus": 8 * (1 + i % 3), "max_price_per_gpu_hour": 1 + (i % 50) / 10}
            headers = {"Authorization": f"Bearer {tokens[i % len(tokens)]}"}
            started = time.perf_counter()
            try:
                response = await client.put("/api/vm/capacity", json=body, headers=headers)
                failed = response.status_code != 200
            except httpx.HTTPError:  # a timeout counts as a failure at its full latency
                failed = True
            latencies.append(time.perf_counter() - started)
            errors += failed

        tasks = []
        begin = time.perf_counter()
        total = int(rate * seconds)
        for i in range(total):
            delay = begin + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - begin
    ordered = sorted(latencies)
    p = lambda q: ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1e3  # noqa: E731
    print(f"target {rate}/s for {seconds:.0f} s: sent {total}, achieved {total / elapsed:.0f}/s")
    print(
        f"latency ms: p50 {p(0.5):.1f}  p90 {p(0.9):.1f}  p99 {p(0.99):.1f}  max {p(1.0):.1f}"
        f"  mean {statistics.mean(latencies) * 1e3:.1f}; failed: {errors}"
    )


def main(rate: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = start(Path(tmp), port)
        try:
            tokens = setup(url)
            asyncio.run(load(url, tokens, rate, seconds))
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 500,
        float(sys.argv[2]) if len(sys.argv) > 2 else 10,
    )
