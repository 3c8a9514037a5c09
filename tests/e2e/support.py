"""Small helpers over the real server's HTTP API for the end-to-end tests."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Server, StartServer

T = TypeVar("T")
DEADLINE_SECONDS = 90


CLOCK_START = "2030-01-01T00:00:00+00:00"
"""A new store's market time (BURSTMARKET_CLOCK_START) for tests that read clock figures as an
operator would, from midnight: with 10-second ticks the first tick is at 00:00:10."""


def at(hms: str, day: int = 0) -> datetime:
    """The market time `hms` ("00:41:10") on `day` days after CLOCK_START's midnight."""
    hours, minutes, seconds = (int(part) for part in hms.split(":"))
    return datetime.fromisoformat(CLOCK_START) + timedelta(
        days=day, hours=hours, minutes=minutes, seconds=seconds
    )


def when(value: str | None) -> datetime | None:
    """A time of an answer (RFC 3339), comparable with `at`."""
    return None if value is None else datetime.fromisoformat(value)


def five_minute_ticks(start_server: StartServer, clock_start: str) -> Server:
    """A manual-clock server of 5-minute ticks from `clock_start`: each tick closes the history
    window of the one before, so the history is written as the test ticks."""
    return start_server(
        "--clock", "manual", "--tick-seconds", "300", env={"BURSTMARKET_CLOCK_START": clock_start}
    )


def eventually(check: Callable[[], T | None], what: str, server: Server | None = None) -> T:
    """Poll until `check()` gives something truthy, and return it: bounded, never a timing
    assertion. Giving up shows the end of `server`'s log."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never saw {what}" + (f":\n{server.log()[-3000:]}" if server else ""))


def read_history(sql: str) -> list[tuple[Any, ...]]:
    """A DuckDB query over the live history, run again if a file it listed was merged away
    before it opened it (docs/history.md "How it is written": a compaction swaps the files in
    while the server runs). Bounded: a file missing for any other reason still fails."""
    for _ in range(5):
        try:
            return duckdb.sql(sql).fetchall()
        except duckdb.IOException as exc:
            if "No such file" not in str(exc):
                raise
            time.sleep(0.2)
    return duckdb.sql(sql).fetchall()


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def billed_by_kind(rows: list[dict[str, Any]]) -> dict[str, Decimal]:
    """A billing report's amounts, exact, summed per kind: a daily report has a row for each
    UTC day a term touches (a manual clock starts at the wall time, so a run near midnight
    crosses one)."""
    total: dict[str, Decimal] = {}
    for row in rows:
        total[row["kind"]] = total.get(row["kind"], Decimal(0)) + Decimal(str(row["amount_usd"]))
    return total


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def make_island(
    server: Server, island: str, nodes: int, gpus_per_node: int = 8, reserve: float = 1.0
) -> Any:
    body = {"gpus_per_node": gpus_per_node, "nodes": nodes, "reserve_price": reserve}
    return ok(
        server.client.put(f"/api/admin/islands/{island}", json=body, headers=server.operator())
    )


def make_account(server: Server, name: str, balance: float = 1000.0) -> Any:
    body = {"name": name, "balance_usd": balance}
    return ok(server.client.post("/api/admin/accounts", json=body, headers=server.operator()), 201)


def make_cluster(server: Server, account: str, island: str, kind: str, name: str) -> dict[str, str]:
    """The new cluster's auth headers."""
    body = {"account": account, "island": island, "kind": kind, "name": name}
    created = ok(
        server.client.post("/api/admin/clusters", json=body, headers=server.operator()), 201
    )
    return bearer(created["token"])


def refused_for(server: Server, code: str, cluster: str) -> list[str]:
    """The server's REFUSED lines of `code` for `cluster`."""
    return [
        line
        for line in server.refused_lines()
        if f"reason={code} " in line and f" cluster={cluster} " in line
    ]


def tick(server: Server, count: int = 1, island: str | None = None) -> Any:
    body: dict[str, Any] = {"count": count}
    if island is not None:
        body["island"] = island
    return ok(server.client.post("/api/admin/ticks", json=body, headers=server.operator()))


def ticks(server: Server, count: int, island: str, per_request: int = 20) -> Any:
    """`count` ticks of `island` in requests of at most `per_request` ticks, each well inside
    the client's timeout on a busy machine; the last tick's statistics."""
    done = None
    for start in range(0, count, per_request):
        done = tick(server, min(per_request, count - start), island)
    return done


def declare(
    server: Server, auth: dict[str, str], gpus: int, price: float | None, **extra: Any
) -> Any:
    body = {"max_gpus": gpus, "max_price_per_gpu_hour": price, **extra}
    return server.client.put("/api/vm/capacity", json=body, headers=auth)


def set_bid(server: Server, auth: dict[str, str], price: float) -> Any:
    body = {"limit_price_per_gpu_hour": price}
    return ok(server.client.put("/api/k8s/bid", json=body, headers=auth))


def submit_job(server: Server, auth: dict[str, str], name: str, nodes: int) -> Any:
    body = {"name": name, "nodes": nodes}
    return ok(server.client.post("/api/k8s/jobs", json=body, headers=auth), 201)


def read_job(server: Server, auth: dict[str, str], name: str) -> Any:
    return ok(server.client.get(f"/api/k8s/jobs/{name}", headers=auth))


def post_offers(
    server: Server,
    island: str,
    cells: list[tuple[int, int, float | None]],
    reservable_nodes: int,
    buying_open: bool = True,
) -> Any:
    """The island's base load offer grid: (size in GPUs, term in hours, rate or None) cells."""
    body = {
        "buying_open": buying_open,
        "reservable_nodes": reservable_nodes,
        "cells": [
            {"size_gpus": size, "term_hours": term, "rate_per_gpu_hour": rate}
            for size, term, rate in cells
        ],
    }
    path = f"/api/admin/islands/{island}/base-load-offers"
    return ok(server.client.put(path, json=body, headers=server.operator()))


def buy(server: Server, auth: dict[str, str], size_gpus: int, term_hours: int) -> httpx.Response:
    body = {"size_gpus": size_gpus, "term_hours": term_hours}
    return server.client.post("/api/base-load", json=body, headers=auth)


def base_load(server: Server, auth: dict[str, str]) -> Any:
    return ok(server.client.get("/api/base-load", headers=auth))


def account(server: Server, name: str) -> Any:
    return ok(server.client.get(f"/api/admin/accounts/{name}", headers=server.operator()))


def refused(server: Server, response: httpx.Response, status: int, code: str, since: int) -> Any:
    """`response` is the refusal `code` with `status`, and the log has exactly one line for it
    since the `since`-th REFUSED line."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    lines = [line for line in server.refused_lines()[since:] if f"reason={code} " in line]
    assert len(lines) == 1, lines
    return body


class Scrape:
    """One scrape of `GET /metrics`, parsed by the client library's own parser."""

    def __init__(self, client: httpx.Client) -> None:
        answer = client.get("/metrics")
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("text/plain; version=")
        self.samples = {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(answer.text)
            for sample in family.samples
        }

    def value(self, name: str, **labels: str) -> float:
        """A sample's value; 0 for a labelled series not seen yet (a counter before its first
        count)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)


class SmallDisk:
    """A tmpfs of its own, mounted at `path` for one test and unmounted after
    (`small_disk`): a disk that fills up for real. Mounting needs root, as CI and `make test`
    run."""

    FILLER = "filler"

    def __init__(self, path: Path) -> None:
        self.path = path

    def free_bytes(self) -> int:
        stat = os.statvfs(self.path)
        return stat.f_bavail * stat.f_frsize

    def fill(self, leave: int = 0) -> None:
        """Take all the room but about `leave` bytes, with a file of zeros (tmpfs keeps every
        page of it)."""
        room = self.free_bytes() - leave
        chunk = b"\0" * (1 << 20)
        with (self.path / self.FILLER).open("ab") as filler:
            while room > 0:
                try:
                    filler.write(chunk[: min(room, len(chunk))])
                    filler.flush()
                except OSError:  # full already
                    return
                room -= len(chunk)

    def empty(self) -> None:
        """Give the room back."""
        (self.path / self.FILLER).unlink(missing_ok=True)


@contextmanager
def small_disk(path: Path, size: str) -> Iterator[SmallDisk]:
    """A tmpfs of `size` (`mount`'s syntax: `64m`) at `path`. Stop every server using it
    before leaving the block: a busy mount does not unmount."""
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield SmallDisk(path)
    finally:
        subprocess.run(["umount", str(path)], check=True)
