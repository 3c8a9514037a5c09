"""The service's app in-process (httpx.ASGITransport, as `burstmarket simulate` runs it), for
tests that change a piece of it: a store that fails on demand, a smaller limit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from litestar import Litestar

from burstmarket.api.app import create_app
from burstmarket.settings import Settings

TOKEN = "in-process-operator"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


def app_at(tmp_path: Path) -> Litestar:
    """The service's app on the manual clock, its store under `tmp_path`."""
    settings = Settings(clock="manual", data_dir=tmp_path / "data", operator_token=TOKEN)
    return create_app(settings)


@asynccontextmanager
async def running(tmp_path: Path, app: Litestar | None = None) -> AsyncIterator[httpx.AsyncClient]:
    app = app or app_at(tmp_path)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with (
        app.lifespan(),
        httpx.AsyncClient(transport=transport, base_url="http://market") as http,
    ):
        yield http


async def ok(response: Any, status: int = 200) -> Any:
    answer = await response
    assert answer.status_code == status, answer.text
    return answer.json()


async def vm_and_k8s(http: httpx.AsyncClient, island: str) -> tuple[dict[str, str], ...]:
    """An island of 2 nodes with a VM and a Kubernetes cluster of one account: their auth."""
    body = {"gpus_per_node": 8, "nodes": 2, "reserve_price": 1}
    await ok(http.put(f"/api/admin/islands/{island}", json=body, headers=OPERATOR))
    account = {"name": f"{island}-acct", "balance_usd": 100}
    await ok(http.post("/api/admin/accounts", json=account, headers=OPERATOR), 201)
    auth = []
    for kind in ("vm", "k8s"):
        made = {
            "account": f"{island}-acct",
            "island": island,
            "kind": kind,
            "name": f"{island}-{kind}",
        }
        token = await ok(http.post("/api/admin/clusters", json=made, headers=OPERATOR), 201)
        auth.append({"Authorization": f"Bearer {token['token']}"})
    return tuple(auth)
