"""`burstmarket replay --speed max` of a cached simulated day: messages per second through the
feed, to one client and to many. Prints figures; asserts nothing.

    .venv/bin/python bench/bench_replay.py                        # 1 and 50 clients
    .venv/bin/python bench/bench_replay.py --clients 1 10 100 --processes 2
    .venv/bin/python bench/bench_replay.py --history data/simulated/history

The day is `burstmarket simulate --days 1 --tick-seconds 10` (the demo islands, 8,640 ticks
each), simulated once into data/bench/day-10s/ and read from there on every later run (about
40 minutes on 2 cores the first time; `--history` replays any other history instead).

Each run starts its own `burstmarket replay --speed max` (a replay plays its record once) and
opens every client first; then all of them subscribe, in one burst, to every channel of every
island: a snapshot each, then every tick as an update, the ladder's as its changes. The server
publishes the next tick once every client has taken the last, so the pace is the slowest
client's. (Subscribing with `from_tick` instead would cost each client a replay read from the
recording first; a subscribe without it costs none.) Clients are raw websocket sockets on one
epoll loop per process (frames counted, no JSON), spread over `--processes`; a client is done
once it has the last recorded tick of every channel. The figure is the messages the clients got
over the wall time from the subscribe to the last message at the last client; also the server's
CPU per message (/proc/PID/stat).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import select
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

import duckdb

from bench_feed import connect, cpu_seconds, free_port, load, masked, split_frames

BURSTMARKET = Path(sys.executable).parent / "burstmarket"
DAY = Path("data/bench/day-10s")
CHANNELS = ("ladder", "rates", "stats")


def cached_day() -> Path:
    """The simulated day's history, simulated the first time only."""
    history = DAY / "history"
    if not (history / "ticks").is_dir():
        print(f"simulating a day of 10 s ticks into {DAY} (once; later runs read it)", flush=True)
        subprocess.run(
            [
                str(BURSTMARKET),
                "simulate",
                "--days",
                "1",
                "--tick-seconds",
                "10",
                "--out",
                str(DAY),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return history


def recorded(history: Path) -> dict[str, tuple[int, int]]:
    """island -> (its last tick, its ticks) in the history."""
    rows = duckdb.sql(
        f"SELECT island, max(tick), count(*) FROM read_parquet('{history}/ticks/**/*.parquet', "
        "hive_partitioning = true, hive_types = {'island': VARCHAR}) GROUP BY island"
    ).fetchall()
    return {island: (int(last), int(count)) for island, last, count in rows}


def subscribe_frame(islands: dict[str, tuple[int, int]]) -> bytes:
    channels = [f"{c}:{island}" for island in sorted(islands) for c in CHANNELS]
    frame = json.dumps({"op": "subscribe", "channels": channels}, separators=(",", ":"))
    return masked(frame.encode())  # under 126 bytes for the demo islands (masked's limit)


def last_frames(islands: dict[str, tuple[int, int]]) -> tuple[bytes, ...]:
    """How the last recorded tick's update of each channel begins."""
    return tuple(
        b'{"type":"update","channel":"%s:%s","tick":%d,' % (c.encode(), island.encode(), last)
        for island, (last, _) in islands.items()
        for c in CHANNELS
    )


def client_process(
    port: int, count: int, frame: bytes, ends: tuple[bytes, ...], pipe: Connection
) -> None:
    """`count` clients on one epoll loop: subscribes when told, then counts every `snapshot`
    and `update` frame until each has had the last tick of every channel; sends (subscribed
    at, last arrival, messages, bytes)."""
    socks = [connect(port)[0] for _ in range(count)]
    poller = select.epoll()
    buffers: dict[int, bytes] = {}
    got: dict[int, int] = {}
    ended: dict[int, int] = {}
    for sock in socks:
        sock.setblocking(False)
        poller.register(sock.fileno(), select.EPOLLIN)
        buffers[sock.fileno()] = b""
        got[sock.fileno()] = ended[sock.fileno()] = 0
    pipe.send("ready")
    pipe.recv()
    began = time.time()
    for sock in socks:
        sock.sendall(frame)
    done, received, last = 0, 0, began
    while done < count:
        for fd, _ in poller.poll(1.0):
            chunk = os.read(fd, 1 << 20)
            received += len(chunk)
            found, buffers[fd] = split_frames(buffers[fd] + chunk)
            for opcode, payload in found:
                if opcode == 0x9:  # the server's keepalive ping: answer it
                    os.write(fd, masked(payload, 0xA))
                elif payload.startswith((b'{"type":"update"', b'{"type":"snapshot"')):
                    got[fd] += 1
                    if payload.startswith(ends):
                        ended[fd] += 1
                        if ended[fd] == len(ends):
                            done += 1
                            last = time.time()
    pipe.send((began, last, sum(got.values()), received))
    for sock in socks:
        sock.close()


def run(history: Path, clients: int, processes: int) -> None:
    islands = recorded(history)
    port = free_port()
    command = [str(BURSTMARKET), "replay", "--history", str(history), "--speed", "max"]
    command += ["--port", str(port), "--feed-ping-seconds", "600"]
    command += ["--connections-per-address", "0"]
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as folder:
        log = Path(folder) / "replay.log"
        with log.open("wb") as out:
            server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            while b"Application startup complete" not in log.read_bytes():
                if server.poll() is not None:
                    raise SystemExit(log.read_text())
                time.sleep(0.1)
            measure(server.pid, port, islands, clients, processes)
        finally:
            server.terminate()
            server.wait(10)


def measure(
    pid: int,
    port: int,
    islands: dict[str, tuple[int, int]],
    clients: int,
    processes: int,
) -> None:
    frame, ends = subscribe_frame(islands), last_frames(islands)
    pipes, workers = [], []
    for n in range(processes):
        share = clients // processes + (1 if n < clients % processes else 0)
        if not share:
            continue
        ours, theirs = mp.Pipe()
        worker = mp.Process(target=client_process, args=(port, share, frame, ends, theirs))
        worker.start()
        pipes.append(ours)
        workers.append(worker)
    for pipe in pipes:
        assert pipe.recv() == "ready"
    cpu_before = cpu_seconds(pid)
    for pipe in pipes:
        pipe.send("go")
    results = [pipe.recv() for pipe in pipes]
    cpu = cpu_seconds(pid) - cpu_before
    for worker in workers:
        worker.join()
    began = min(r[0] for r in results)
    ended = max(r[1] for r in results)
    messages = sum(r[2] for r in results)
    mib = sum(r[3] for r in results) / 2**20
    seconds = ended - began
    ticks = sum(count for _, count in islands.values())
    print(
        f"{clients:>5} clients: {messages:>10,} messages (of {ticks:,} ticks x "
        f"{len(CHANNELS)} channels each) in {seconds:6.2f} s = {messages / seconds:>9,.0f} "
        f"messages/s, {ticks / seconds:>7,.0f} ticks/s, {mib / seconds:6.1f} MiB/s; "
        f"server CPU {cpu / messages * 1e6:5.2f} µs/message; {load()}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--history", type=Path, help="replay this history, not the cached day")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 50])
    parser.add_argument("--processes", type=int, default=1, help="client processes")
    args = parser.parse_args()
    history = args.history or cached_day()
    islands = recorded(history)
    print(
        f"replaying {history}: "
        + ", ".join(f"{island} {count:,} ticks" for island, (_, count) in sorted(islands.items())),
        flush=True,
    )
    for clients in args.clients:
        run(history, clients, args.processes)


if __name__ == "__main__":
    main()
