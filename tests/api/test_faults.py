"""A fault of the store (a full disk) is `store-unavailable`, 503 with Retry-After and one
REFUSED line, no traceback; the service carries on by itself once the disk has room. The app
runs in-process on a real DuckDB file whose writer fails on demand, as a full disk fails it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from burstmarket.api import app as app_module
from burstmarket.store import Database
from tests.api.support import OPERATOR, ok, running, vm_and_k8s

QUIET = ("httpx", "burstmarket.history.exporter")


class FullDisk(Database):
    """The real store, whose write transactions fail at their end while `full` is set (the
    error DuckDB raises when its WAL cannot grow)."""

    full = False

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with super().write() as cur:
            yield cur
            if FullDisk.full:
                raise duckdb.IOException(
                    f'IO Error: Could not write file "{self.path}.wal": No space left on device'
                )


def test_a_full_disk_is_503_with_retry_after_and_the_service_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(app_module, "Database", FullDisk)

    async def scenario() -> None:
        async with running(tmp_path) as http:
            vm_auth, k8s_auth = await vm_and_k8s(http, "disk")
            await ok(http.post("/api/admin/ticks", json={"count": 1}, headers=OPERATOR))

            FullDisk.full = True
            caplog.clear()
            declare = {"max_gpus": 8, "max_price_per_gpu_hour": 2}
            job = {"name": "j1", "nodes": 1, "limit_price_per_gpu_hour": 2}
            failing = [
                # the group commit, a direct write, and a tick
                http.put("/api/vm/capacity", json=declare, headers=vm_auth),
                http.post("/api/k8s/jobs", json=job, headers=k8s_auth),
                http.post("/api/admin/ticks", json={"count": 1}, headers=OPERATOR),
            ]
            for request in failing:
                answer = await request
                assert answer.status_code == 503, answer.text
                assert answer.json()["error"] == "store-unavailable"
                assert "No space left on device" in answer.json()["detail"]
                assert int(answer.headers["retry-after"]) >= 1
            # the client's own lines, and the history exporter's: its runs follow 5-minute
            # windows of market time, which starts at the wall clock's now, so a run at the
            # end of a window logs its line among these (a file it wrote, not the store)
            served = [r for r in caplog.records if r.name not in QUIET]
            lines = [r.getMessage() for r in served]
            assert len(lines) == 3, lines  # one line each, and nothing else
            assert all(line.startswith("REFUSED reason=store-unavailable") for line in lines)
            assert not any(r.exc_info for r in served)

            FullDisk.full = False
            held = await ok(http.put("/api/vm/capacity", json=declare, headers=vm_auth))
            assert held["max_gpus"] == 8
            await ok(http.post("/api/k8s/jobs", json=job, headers=k8s_auth), 201)
            stats = await ok(http.post("/api/admin/ticks", json={"count": 1}, headers=OPERATOR))
            assert stats["tick"] == 2  # the failed tick left no gap
            assert (await ok(http.get("/api/vm/capacity", headers=vm_auth)))["held_gpus"] == 8

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
