"""Market-data speed against the real server process. Prints figures; asserts nothing.

    .venv/bin/python bench/bench_feed.py                      # fanout, rest, series
    .venv/bin/python bench/bench_feed.py fanout --subscribers 1000 5000 --clients 2 --ticks 30
    .venv/bin/python bench/bench_feed.py rest --rate 2000 --seconds 5
    .venv/bin/python bench/bench_feed.py series
    .venv/bin/python bench/bench_feed.py edges --subscribers 1000 5000 10000 --edges 0 1 2 4

Each run starts `burstmarket serve --clock manual` on a fresh data dir (one process, as in
production) and drives it over HTTP only: island, account, clusters and declarations through
the operator and tenant API, ticks through `POST /api/admin/ticks`.

fanout: subscribers are raw websocket clients on one epoll loop per process (frame parsing, no
JSON), spread over `--clients` processes so the load generator is not the bottleneck. A tick's
commit is not visible from outside, so two figures bracket "commit -> last subscriber": from
sending `POST /api/admin/ticks` (which also runs the auction of every island and commits) to the
update being complete at the LAST subscriber (an upper bound), and from the FIRST subscriber's
arrival to the last's (the fan-out itself; the first arrives right after the commit, as the
feed writes from the event loop as soon as the tick's thread returns). `tick alone` is the POST
with nobody subscribed. Then the same subscribers, with the same clients, on a bare
`websockets.broadcast` server sending frames of the feed's size (bench/broadcast_reference.py):
the physical limit. The ratio of the two p99s from the call is the goal's figure (<= 1.2).
edges: the same fan-out, side by side, through the in-process feed (0 edges: subscribers on the
market process itself) and through 1, 2, 4 feed edges (`burstmarket feed --bus`) behind a market
process publishing to a redis-server of its own (`serve --bus`), subscribers spread evenly over
the edges; besides the latencies, the CPU the market process and the edges spent per tick
(/proc/PID/stat over the measured ticks); and the bare reference's p99 at each subscriber
count, measured once with nothing else running, with the ratio.
rest: open-loop `GET /api/market/stats` and `/api/market/ladder` at `--rate` on keep-alive
connections from one epoll loop; latency counts from when each request was due.
series: 30 days of 10 s ticks (stats of 200 clusters) written to a data dir and its Parquet
history before the server starts, the live table trimmed to the last hour or not; then
`GET /api/market/series?interval=1h` over the 30 days.
"""

from __future__ import annotations

import argparse
import base64
import multiprocessing as mp
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

BURSTMARKET = Path(sys.executable).parent / "burstmarket"
TOKEN = "bench-operator-token"
ISLAND = "bench"
KEEPALIVE = ["--feed-ping-seconds", "600"]
"""A client process connecting its thousands of subscribers one after the other reads none of
them meanwhile; at the default 20 s keepalive, the first ones would be closed as slow consumers
for leaving a ping unanswered before the measurement starts."""
ONE_ADDRESS = ["--connections-per-address", "0"]
"""Every subscriber of the bench comes from 127.0.0.1: thousands of them, past the default
limit of connections one address may hold."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


# -- the server process ------------------------------------------------------------------------


class Server:
    """`burstmarket serve --clock manual` on a free loopback port."""

    def __init__(
        self,
        data_dir: Path | None = None,
        env: dict[str, str] | None = None,
        bus: str | None = None,
    ) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.data = data_dir or Path(self.tmp.name) / "data"
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        environ = {k: v for k, v in os.environ.items() if not k.startswith("BURSTMARKET_")}
        environ.update({"BURSTMARKET_OPERATOR_TOKEN": TOKEN, **(env or {})})
        self.log = open(Path(self.tmp.name) / "server.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                str(BURSTMARKET),
                "serve",
                "--clock",
                "manual",
                "--data-dir",
                str(self.data),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--tick-seconds",
                "10",
                *KEEPALIVE,
                *ONE_ADDRESS,
                *(["--bus", bus] if bus else []),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=environ,
        )
        self.http = httpx.Client(
            base_url=self.url, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if self.http.get("/api/islands").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.05)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code < 300, (path, response.status_code, response.text)
        return response.json()

    def market(self, nodes: int, clusters: int) -> None:
        """An island where `clusters` VM clusters of one node each bid for `nodes` nodes."""
        self.call(
            "PUT",
            f"/api/admin/islands/{ISLAND}",
            json={"gpus_per_node": 8, "nodes": nodes, "reserve_price": 1.0},
        )
        self.call("POST", "/api/admin/accounts", json={"name": "acct", "balance_usd": 10**9})
        for n in range(clusters):
            made = self.call(
                "POST",
                "/api/admin/clusters",
                json={"account": "acct", "island": ISLAND, "kind": "vm", "name": f"c{n:03d}"},
            )
            self.call(
                "PUT",
                "/api/vm/capacity",
                json={"max_gpus": 8, "max_price_per_gpu_hour": round(2 + n / 100, 2)},
                headers={"Authorization": f"Bearer {made['token']}"},
            )

    def tick(self) -> Any:
        return self.call("POST", "/api/admin/ticks", json={"count": 1, "island": ISLAND})

    def close(self) -> None:
        self.http.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()
        self.tmp.cleanup()


class Reference:
    """bench/broadcast_reference.py on a free loopback port: a bare `websockets.broadcast`
    server sending frames of `payload_bytes`, driven like the market (`tick()`)."""

    def __init__(self, payload_bytes: int) -> None:
        self.port = free_port()
        script = Path(__file__).with_name("broadcast_reference.py")
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(self.port), str(payload_bytes)]
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60)
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port)):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the reference did not start") from None
                time.sleep(0.05)

    def tick(self) -> Any:
        return self.http.get("/tick").json()

    def close(self) -> None:
        self.http.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


def update_bytes(server: Server) -> int:
    """The size of the feed's `update` frame of a tick, as a subscriber receives it."""
    sock = subscribe(server.port)
    sock.setblocking(True)
    server.tick()
    buffer = b""
    while True:
        found, buffer = split_frames(buffer + sock.recv(65536))
        for _, payload in found:
            if payload.startswith(b'{"type":"update"'):
                sock.close()
                return len(payload)


# -- websocket fan-out -------------------------------------------------------------------------


def upgrade() -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET /ws/market HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


def masked(payload: bytes, opcode: int = 0x1) -> bytes:
    """A client frame (clients mask, RFC 6455 §5.3); payloads here are under 126 bytes."""
    mask = os.urandom(4)
    return (
        bytes([0x80 | opcode, 0x80 | len(payload)])
        + mask
        + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    )


SUBSCRIBE = masked(b'{"op":"subscribe","channels":["stats:' + ISLAND.encode() + b'"]}')


def connect(port: int) -> tuple[socket.socket, bytes]:
    """A websocket upgraded (blocking), and what came after the upgrade's answer with it."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(upgrade())
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    return sock, data.split(b"\r\n\r\n", 1)[1]


def subscribe(port: int) -> socket.socket:
    """A connected, subscribed websocket (blocking until its snapshot has arrived)."""
    sock, data = connect(port)
    sock.sendall(SUBSCRIBE)
    while data.count(b'"type":"snapshot"') == 0:
        data += sock.recv(65536)
    sock.setblocking(False)
    return sock


def split_frames(buffer: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """The complete server frames at the start of `buffer` as (opcode, payload), and the rest
    (server frames are unmasked, RFC 6455 §5.1)."""
    found = []
    while len(buffer) >= 2:
        length, offset = buffer[1] & 0x7F, 2
        if length == 126:
            length, offset = int.from_bytes(buffer[2:4], "big"), 4
        elif length == 127:
            length, offset = int.from_bytes(buffer[2:10], "big"), 10
        if len(buffer) < offset + length:
            break
        found.append((buffer[0] & 0x0F, buffer[offset : offset + length]))
        buffer = buffer[offset + length :]
    return found, buffer


def client_process(ports: list[int], count: int, pipe: Connection) -> None:
    """`count` subscribers on one epoll loop (no asyncio, no JSON: as little client CPU per
    message as Python allows), spread evenly over `ports`; for each tick, once all have it,
    sends (tick, arrival times)."""
    socks = [subscribe(ports[n % len(ports)]) for n in range(count)]
    poller = select.epoll()
    buffers = {}
    for sock in socks:
        poller.register(sock.fileno(), select.EPOLLIN)
        buffers[sock.fileno()] = b""
    pipe.send("ready")
    arrivals: dict[int, list[float]] = {}
    while not pipe.poll():
        for fd, _ in poller.poll(0.1):
            now = time.time()
            found, buffers[fd] = split_frames(buffers[fd] + os.read(fd, 65536))
            for opcode, payload in found:
                if opcode == 0x9:  # the server's keepalive ping (every 20 s): answer it
                    os.write(fd, masked(payload, 0xA))
                elif payload.startswith(b'{"type":"update"'):
                    tick = int(payload.split(b'"tick":', 1)[1].split(b",", 1)[0])
                    times = arrivals.setdefault(tick, [])
                    times.append(now)
                    if len(times) == count:
                        pipe.send((tick, arrivals.pop(tick)))
    for sock in socks:
        sock.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    """A process's resident memory now (/proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Fanout:
    last: list[float]
    """Per tick: from sending the POST to the update complete at the last subscriber, ms."""
    spread: list[float]
    """Per tick: from the first subscriber's arrival to the last's, ms."""
    every: list[float]
    """Every delivery: from sending the POST, ms."""
    commit: list[float]
    """Per tick: from the commit (the probe's arrival) to the last subscriber's, ms."""
    market_cpu: float
    """The market process's CPU per tick, ms (its auction, commit and publishing)."""
    edges_cpu: float
    """The edges' CPU per tick, all together, ms."""
    edge_rss: float
    """The largest edge's resident memory with its subscribers connected, MiB."""
    clients_cpu: float
    """The client processes' CPU per tick, ms: the load generator shares the machine."""


def measure(
    server: Server | Reference,
    ports: list[int],
    subscribers: int,
    clients: int,
    ticks: int,
    edges: Sequence[subprocess.Popen[bytes]] = (),
) -> Fanout:
    """`subscribers` over `clients` processes, connected evenly to `ports` (the market's own
    feed, or edges), then `ticks` ticks, each measured on its own. A probe subscriber of its
    own, on the market process and first of all, marks each tick's commit: the market writes
    the tick's frames as soon as it has committed, the probe's first."""
    pipes, procs = [], []
    for n, (target, share) in enumerate(
        [([server.port], 1)]
        + [(ports, subscribers // clients + (n < subscribers % clients)) for n in range(clients)]
    ):
        mine, theirs = mp.Pipe()
        proc = mp.Process(target=client_process, args=(target, share, theirs))
        proc.start()
        pipes.append(mine)
        procs.append(proc)
        if n == 0:  # the probe, first
            assert mine.poll(60), "the probe did not connect"
            assert mine.recv() == "ready"
    for pipe in pipes[1:]:
        assert pipe.poll(600), "subscribers did not connect"
        assert pipe.recv() == "ready"
    last, spread, every, commit = [], [], [], []
    market_cpu = cpu_seconds(server.proc.pid)
    edges_cpu = sum(cpu_seconds(edge.pid) for edge in edges)
    clients_cpu = sum(cpu_seconds(proc.pid) for proc in procs if proc.pid)
    for _ in range(ticks):
        time.sleep(0.2)  # let the clients settle: each tick is measured on its own
        began = time.time()
        tick = server.tick()["tick"]
        times: list[float] = []
        for pipe in pipes:
            if not pipe.poll(30):
                raise RuntimeError(f"tick {tick} did not reach every subscriber in 30 s")
            got, arrivals = pipe.recv()
            assert got == tick, (got, tick)
            times += arrivals
        committed, times = times[0], times[1:]
        commit.append((max(times) - committed) * 1000)
        last.append((max(times) - began) * 1000)
        spread.append((max(times) - min(times)) * 1000)
        every += [(t - began) * 1000 for t in times]
    edge_rss = max((rss_mib(edge.pid) for edge in edges), default=0.0)
    market_cpu = (cpu_seconds(server.proc.pid) - market_cpu) * 1000 / ticks
    edges_cpu = (sum(cpu_seconds(edge.pid) for edge in edges) - edges_cpu) * 1000 / ticks
    clients_cpu = (sum(cpu_seconds(p.pid) for p in procs if p.pid) - clients_cpu) * 1000 / ticks
    for pipe in pipes:
        pipe.send("stop")
    for proc in procs:
        proc.join(30)
    return Fanout(last, spread, every, commit, market_cpu, edges_cpu, edge_rss, clients_cpu)


def reference(payload_bytes: int, subscribers: int, clients: int, ticks: int) -> Fanout:
    """The same measurement of the bare `websockets.broadcast` server, frames of the same
    size: the physical limit of the fan-out on this machine."""
    bare = Reference(payload_bytes)
    try:
        return measure(bare, [bare.port], subscribers, clients, ticks)
    finally:
        bare.close()


def against(got: Fanout, bare: Fanout) -> tuple[float, float, float]:
    """The feed's p99 from the tick call to the last subscriber, the reference's, and the
    ratio of the two (the goal: <= 1.2)."""
    ours, limit = percentile(got.last, 0.99), percentile(bare.last, 0.99)
    return ours, limit, ours / limit


def fanout(subscribers: int, clients: int, ticks: int) -> None:
    server = Server()
    try:
        server.market(nodes=4, clusters=3)
        server.tick()
        alone = []
        for _ in range(10):
            began = time.time()
            server.tick()
            alone.append((time.time() - began) * 1000)
        payload = update_bytes(server)
        got = measure(server, [server.port], subscribers, clients, ticks)
    finally:
        server.close()
    _, limit, ratio = against(got, reference(payload, subscribers, clients, ticks))
    last, spread, every = got.last, got.spread, got.every
    print(
        f"fanout {subscribers:>5} subscribers ({clients} client processes), {ticks} ticks: "
        f"POST -> last subscriber p50 {percentile(last, 0.5):6.1f} ms  "
        f"p99 {percentile(last, 0.99):6.1f} ms; first -> last p50 "
        f"{percentile(spread, 0.5):.1f} ms p99 {percentile(spread, 0.99):.1f} ms; "
        f"every delivery p50 {percentile(every, 0.5):.1f} ms; "
        f"tick alone p50 {percentile(alone, 0.5):.1f} ms; bare broadcast p99 {limit:6.1f} ms, "
        f"ratio {ratio:.2f} (goal <= 1.2)   [{load()}]",
        flush=True,
    )


# -- feed edges over Redis ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Redis:
    """Debian's redis-server on a free loopback port, no persistence."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.tmp.name,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.tmp.cleanup()


class Edge:
    """`burstmarket feed --bus …` on a free loopback port, up once it serves the island."""

    def __init__(self, bus: str, log: Path) -> None:
        self.port = free_port()
        self.log = open(log, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                str(BURSTMARKET),
                "feed",
                "--bus",
                bus,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *KEEPALIVE,
                *ONE_ADDRESS,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        url = f"http://127.0.0.1:{self.port}/api/market/stats?island={ISLAND}"
        while True:
            try:
                if httpx.get(url).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("edge did not start")
            time.sleep(0.1)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def edges(counts: list[int], subscribers: list[int], clients: int, ticks: int) -> None:
    """The in-process feed, then 1, 2, 4 … edges behind one market process on Redis, each at
    every subscriber count; one table at the end."""
    rows = []
    bare: dict[int, Fanout] = {}
    for count in counts:
        redis = Redis() if count else None
        server = Server(bus=redis.url if redis else None)
        started: list[Edge] = []
        try:
            server.market(nodes=4, clusters=3)
            server.tick()
            with tempfile.TemporaryDirectory() as logs:
                started = (
                    [Edge(redis.url, Path(logs) / f"edge-{n}.log") for n in range(count)]
                    if redis
                    else []
                )
                ports = [edge.port for edge in started] or [server.port]
                payload = update_bytes(server)
                for n in subscribers:
                    got = measure(server, ports, n, clients, ticks, [edge.proc for edge in started])
                    where = f"{count} edges" if count else "in-process"
                    rows.append((where, n, got))
                    print(
                        f"{where:>10} {n:>6} subscribers: commit -> last p50 "
                        f"{percentile(got.commit, 0.5):6.1f} ms p99 "
                        f"{percentile(got.commit, 0.99):6.1f} ms; POST -> last p99 "
                        f"{percentile(got.last, 0.99):6.1f} ms; market CPU/tick "
                        f"{got.market_cpu:5.1f} ms; edges CPU/tick {got.edges_cpu:6.1f} ms; "
                        f"largest edge {got.edge_rss:.0f} MiB; clients CPU/tick "
                        f"{got.clients_cpu:.0f} ms"
                        f"   [{load()}]",
                        flush=True,
                    )
                for edge in started:
                    edge.close()
        finally:
            server.close()
            if redis:
                redis.close()
        for n in subscribers:  # the limit, once per count, with no market or edge running
            if n not in bare:
                bare[n] = reference(payload, n, clients, ticks)
    print(
        f"\nfeed fan-out, {ticks} ticks each, subscribers over {clients} client processes; "
        "commit -> last: from the tick's commit (a probe subscriber on the market) to the "
        "update complete at the last subscriber; POST -> last: from sending "
        "POST /api/admin/ticks (auction and commit included); bare: the same from the call "
        "on a bare websockets.broadcast server (bench/broadcast_reference.py), and the ratio "
        "of the two (goal <= 1.2)"
    )
    print(
        f"{'topology':>10} {'subscribers':>11} {'commit->last p50':>16} {'p99 ms':>7} "
        f"{'POST->last p99':>14} {'bare p99':>8} {'ratio':>5} {'market CPU/tick':>15} "
        f"{'edges CPU/tick':>14} {'edge RSS MiB':>12} {'clients CPU/tick':>16}"
    )
    for where, n, got in rows:
        ours, limit, ratio = against(got, bare[n])
        print(
            f"{where:>10} {n:>11} {percentile(got.commit, 0.5):16.1f} "
            f"{percentile(got.commit, 0.99):7.1f} {ours:14.1f} {limit:8.1f} "
            f"{ratio:5.2f} {got.market_cpu:15.1f} {got.edges_cpu:14.1f} "
            f"{got.edge_rss:12.0f} {got.clients_cpu:16.0f}"
        )
    print(f"[{load()}; {os.cpu_count()} cores]", flush=True)


# -- latest-row endpoints ----------------------------------------------------------------------


def rest_load(port: int, rate: int, seconds: float, connections: int) -> tuple[list[float], float]:
    """Open loop on keep-alive connections, one epoll loop: request n is due at n / rate on
    connection n % connections, sent when due (or when that connection's previous answer
    arrives), and its latency counts from when it was due."""
    paths = [f"/api/market/stats?island={ISLAND}", f"/api/market/ladder?island={ISLAND}"]
    requests = [f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for path in paths]
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
    poller = select.epoll()
    for sock in socks:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        poller.register(sock.fileno(), select.EPOLLIN)
    index = {sock.fileno(): n for n, sock in enumerate(socks)}
    waiting: list[list[int]] = [[] for _ in socks]
    inflight: list[int | None] = [None] * connections
    buffers = [b""] * connections
    latencies: list[float] = []
    total = int(rate * seconds)
    start = time.monotonic() + 0.2
    following = 0

    def send(conn: int) -> None:
        n = waiting[conn].pop(0)
        inflight[conn] = n
        socks[conn].sendall(requests[n % 2])

    while len(latencies) < total:
        now = time.monotonic()
        while following < total and start + following / rate <= now:
            conn = following % connections
            waiting[conn].append(following)
            if inflight[conn] is None:
                send(conn)
            following += 1
        wait = start + following / rate - now if following < total else 1.0
        for fd, _ in poller.poll(max(0.0, wait)):
            conn = index[fd]
            buffer = buffers[conn] + os.read(fd, 65536)
            head, sep, rest = buffer.partition(b"\r\n\r\n")
            if sep:
                assert head.startswith(b"HTTP/1.1 200"), head
                length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n")[0])
                if len(rest) >= length:
                    n = inflight[conn]
                    assert n is not None
                    latencies.append((time.monotonic() - (start + n / rate)) * 1000)
                    inflight[conn] = None
                    buffer = rest[length:]
                    if waiting[conn]:
                        send(conn)
            buffers[conn] = buffer
    for sock in socks:
        sock.close()
    return latencies, time.monotonic() - start


def rest(rate: int, seconds: float, connections: int) -> None:
    server = Server()
    try:
        server.market(nodes=64, clusters=40)
        server.tick()
        latencies, took = rest_load(server.port, rate, seconds, connections)
        print(
            f"rest stats+ladder (64-rung ladder): {len(latencies)} requests in {took:.1f} s "
            f"({len(latencies) / took:.0f}/s, offered {rate}/s on {connections} connections): "
            f"p50 {percentile(latencies, 0.5):.2f} ms  p99 {percentile(latencies, 0.99):.2f} ms"
            f"   [{load()}]",
            flush=True,
        )
    finally:
        server.close()


# -- the hourly series over 30 days ------------------------------------------------------------


def prefill(data: Path, end: datetime, days: int, trim: bool) -> None:
    """`days` of 10 s ticks of one island (stats of 200 clusters with drifting rates) in the
    service's own store, exported to Parquet; with `trim` the live table keeps the last hour."""
    from burstmarket.history import HistoryExporter
    from burstmarket.store import Database

    data.mkdir(parents=True)
    db = Database(data / "market.duckdb")
    start = end - timedelta(days=days)
    with db.write() as cur:
        cur.execute(
            """
            INSERT INTO ticks
            WITH t AS (SELECT range AS tick FROM range(1, $count + 1)),
                 c AS (SELECT range AS cluster FROM range(200)),
                 r AS (SELECT tick, 8 * (1 + cluster % 4) AS gpus,
                              2 + ((tick // 360 + cluster * 7) % 100) / 100 AS rate
                       FROM t, c)
            SELECT $island, tick, $start + (tick - 1) * INTERVAL 10 SECOND,
                   (sum(rate * gpus) / sum(gpus))::DECIMAL(18, 6), min(rate), max(rate),
                   sum(gpus), 200, 0, 1.5
            FROM r GROUP BY tick
            """,
            {"count": days * 8640, "island": ISLAND, "start": start},
        )
    HistoryExporter(db, data / "history").run()
    if trim:
        with db.write() as cur:
            cur.execute("DELETE FROM ticks WHERE time < $cut", {"cut": end - timedelta(hours=1)})
    db.close()


def series(runs: int, trim: bool) -> None:
    end = datetime(2026, 3, 31, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        began = time.perf_counter()
        prefill(data, end, 30, trim)
        filled = time.perf_counter() - began
        server = Server(data, env={"BURSTMARKET_CLOCK_START": end.isoformat()})
        try:
            params = {
                "island": ISLAND,
                "interval": "1h",
                "limit": "1000",
                "start": (end - timedelta(days=30)).isoformat(),
                "end": end.isoformat(),
            }
            took, body = [], b""
            for _ in range(runs):
                t0 = time.perf_counter()
                response = server.http.get("/api/market/series", params=params)
                took.append((time.perf_counter() - t0) * 1000)
                assert response.status_code == 200, response.text
                body = response.content
            candles = len(response.json())
            where = "Parquet history + last hour live" if trim else "all 30 days live too"
            print(
                f"series 1h over 30 days (259,200 ticks of 200 clusters; {where}): "
                f"{candles} candles, {len(body)} bytes JSON, median "
                f"{statistics.median(took):.0f} ms, max {max(took):.0f} ms over {runs} "
                f"requests (prefill {filled:.0f} s)   [{load()}]",
                flush=True,
            )
        finally:
            server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "which", nargs="*", default=["fanout", "rest", "series"], help="fanout, rest, series, edges"
    )
    parser.add_argument(
        "--edges",
        type=int,
        nargs="+",
        default=[0, 1, 2, 4],
        help="edges mode: edge counts (0: the in-process feed)",
    )
    parser.add_argument("--subscribers", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if "fanout" in args.which:
        for count in args.subscribers:
            fanout(count, args.clients, args.ticks)
    if "edges" in args.which:
        edges(args.edges, args.subscribers, args.clients, args.ticks)
    if "rest" in args.which:
        rest(args.rate, args.seconds, args.connections)
    if "series" in args.which:
        series(args.runs, trim=True)
        series(args.runs, trim=False)


if __name__ == "__main__":
    main()
