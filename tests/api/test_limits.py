"""Limits on what a tenant may pile up, each refused `invalid` with the limit in the figures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from burstmarket.market.desks import jobs_desk
from tests.api.support import ok, running, vm_and_k8s


def test_jobs_not_finished_per_cluster_are_limited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs_desk, "MAX_LIVE_JOBS", 3)  # the real limit is 1,000

    async def scenario() -> None:
        async with running(tmp_path) as http:
            _, k8s = await vm_and_k8s(http, "jobs")
            for n in range(3):
                job = {"name": f"j{n}", "nodes": 1, "limit_price_per_gpu_hour": 2}
                await ok(http.post("/api/k8s/jobs", json=job, headers=k8s), 201)
            job = {"name": "j3", "nodes": 1, "limit_price_per_gpu_hour": 2}
            refused = await http.post("/api/k8s/jobs", json=job, headers=k8s)
            assert refused.status_code == 422
            assert (refused.json()["field"], refused.json()["limit"]) == ("jobs", 3)
            # a finished job no longer counts
            await ok(http.delete("/api/k8s/jobs/j0", headers=k8s))
            await ok(http.post("/api/k8s/jobs", json=job, headers=k8s), 201)
            assert len(await ok(http.get("/api/k8s/jobs", headers=k8s))) == 4

    asyncio.run(scenario())
