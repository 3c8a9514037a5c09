"""`PUT /api/vm/capacity` at a target rate on loopback while ticks run. Prints figures.

    .venv/bin/python bench/bench_api.py [rate] [seconds] [tick-seconds]

Starts the real `burstmarket serve` (real clock, ticks every `tick-seconds`, default 10 as the
service; 1 is the harsh case; the default 64-node island) on a free port with a temporary data
dir, creates 64 VM clusters bidding for it, then sends PUTs open-loop at `rate` per second
(default 500) for `seconds` (default 30) from one asyncio client over a pool of 64 keep-alive
connections. A third of the PUTs lower a cluster's demand, some of them giving nodes back.
Latency = from the moment a PUT is due to its full response (waiting for a free connection
included). The goal is the full rate sustained with p99 under 50 ms.

The load client speaks HTTP/1.1 on asyncio streams itself: httpx's async client spends ~5-20 ms
of CPU per request under this load (measured), which on a small machine saturates the client
before the server. It also prints the server's CPU time over the run (Linux /proc).
"""

from __future__ import annotations

import asyncio
import json
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
CONNECTIONS = 64
TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(data_dir: Path, port: int, tick_seconds: float) -> subprocess.Popen[bytes]:
    command = Path(sys.executable).parent / "burstmarket"
    env = {**os.environ, "BURSTMARKET_OPERATOR_TOKEN": TOKEN}
    args = ["serve", "--clock", "real", "--tick-seconds", str(tick_seconds)]
    args += ["--data-dir", str(data_dir)]
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


class Connection:
    """One keep-alive HTTP/1.1 connection that sends a PUT and reads its whole response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def put(self, path: str, token: str, body: bytes) -> int:
        self.writer.write(
            f"PUT {path} HTTP/1.1\r\nhost: bench\r\nauthorization: Bearer {token}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        fields = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
        await self.reader.readexactly(int(fields["content-length"]))
        return int(lines[0].split()[1])


async def load(url: str, tokens: list[str], rate: int, seconds: float) -> None:
    host, port = url.removeprefix("http://").split(":")
    idle: asyncio.Queue[Connection] = asyncio.Queue()
    for _ in range(CONNECTIONS):
        idle.put_nowait(Connection(*await asyncio.open_connection(host, int(port))))
    latencies: list[float] = []
    errors = 0

    async def one(i: int, due: float) -> None:
        nonlocal errors
        body = {"max_gpus": 8 * (1 + i % 3), "max_price_per_gpu_hour": 1 + (i % 50) / 10}
        request = json.dumps(body).encode()
        connection = await idle.get()
        try:
            sending = connection.put("/api/vm/capacity", tokens[i % len(tokens)], request)
            status = await asyncio.wait_for(sending, TIMEOUT)
            idle.put_nowait(connection)
            failed = status != 200
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            # a failure counts at its full latency; the connection is replaced
            connection.writer.close()
            idle.put_nowait(Connection(*await asyncio.open_connection(host, int(port))))
            failed = True
        latencies.append(time.perf_counter() - due)
        errors += failed

    # only the requests in flight are kept: gathering every task at the end stalled this loop
    # for ~80 ms, and the last requests' latency with it
    pending: set[asyncio.Task[None]] = set()
    begin = time.perf_counter()
    total = int(rate * seconds)
    for i in range(total):
        due = begin + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(one(i, due))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)
    elapsed = time.perf_counter() - begin
    ordered = sorted(latencies)
    p = lambda q: ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1e3  # noqa: E731
    print(f"target {rate}/s for {seconds:.0f} s: sent {total}, achieved {total / elapsed:.0f}/s")
    print(
        f"latency ms: p50 {p(0.5):.1f}  p90 {p(0.9):.1f}  p99 {p(0.99):.1f}  max {p(1.0):.1f}"
        f"  mean {statistics.mean(latencies) * 1e3:.1f}; failed: {errors}; "
        f"over 50 ms: {sum(latency > 0.05 for latency in latencies)}"
    )


def last_tick(url: str) -> int:
    stats = httpx.get(f"{url}/api/market/stats", params={"island": "ref"})
    return int(stats.json()["tick"]) if stats.status_code == 200 else 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(rate: int, seconds: float, tick_seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = start(Path(tmp), port, tick_seconds)
        try:
            tokens = setup(url)
            cpu = cpu_seconds(server.pid)
            first = last_tick(url)
            started = time.perf_counter()
            asyncio.run(load(url, tokens, rate, seconds))
            used = cpu_seconds(server.pid) - cpu
            wall = time.perf_counter() - started
            print(f"ticks committed during the run: {last_tick(url) - first}")
            print(f"server CPU: {used:.1f} s over {wall:.1f} s ({used / wall:.0%} of one core)")
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 500,
        float(sys.argv[2]) if len(sys.argv) > 2 else 30,
        float(sys.argv[3]) if len(sys.argv) > 3 else 10,
    )
