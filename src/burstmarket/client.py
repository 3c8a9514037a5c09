"""A small async client for burstmarket's HTTP API: what a tenant does, and the operator calls.

The simulated tenants use exactly this client, so everything they do goes through the same
HTTP paths as a real tenant's. Every refusal (4xx) raises `Refused` with the server's code,
detail and figures; a 5xx raises `httpx.HTTPStatusError` (it is a bug on the server).

Ladder-aware bidding, the example the README points to: ask for `nodes` whole nodes, paying
no more than `ceiling` per GPU-hour, at the price that would have won them on the last tick
(plus a small margin so a little more competition does not take them at once)::

    import asyncio
    from burstmarket.client import TenantClient, price_to_win

    async def main() -> None:
        async with TenantClient("http://127.0.0.1:8000", token="<cluster token>") as me:
            capacity = await me.capacity()
            ladder = await me.ladder(capacity["island"])
            win = price_to_win(ladder, nodes=4)  # None: more nodes than the market has
            if win is not None and win <= 3.0:
                # bid what it takes to win, with a 10 % margin, never above our own ceiling
                bid = min(3.0, round(win * 1.10, 4))
                await me.declare(4 * capacity["gpus_per_node"], bid)

    asyncio.run(main())

`TenantClient.declare_to_win` is that example as one call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Self

import httpx

Json = dict[str, Any]


class Refused(Exception):
    """The server refused a request: HTTP 4xx with `{"error", "detail", ...figures}`."""

    def __init__(self, status: int, body: Json) -> None:
        self.status = status
        self.code: str = str(body.get("error", "unknown"))
        self.detail: str = str(body.get("detail", ""))
        self.figures: Json = {k: v for k, v in body.items() if k not in ("error", "detail")}
        super().__init__(f"{status} {self.code}: {self.detail}")


def price_to_win(ladder: Mapping[str, Any], nodes: int) -> float | None:
    """The ladder's price per GPU-hour to win `nodes` whole nodes now, or None if the island's
    contestable supply is smaller than that."""
    for rung in ladder.get("rungs", []):
        if rung["nodes"] == nodes:
            return float(rung["price_per_gpu_hour"])
    return None


class _Api:
    """One authenticated view of the API; many can share one `httpx.AsyncClient`."""

    def __init__(
        self, base_url: str, token: str | None, *, http: httpx.AsyncClient | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        self._http = http or httpx.AsyncClient(timeout=30)
        self._owns_http = http is None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def _call(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        response = await self._http.request(
            method,
            self.base_url + path,
            json=body,
            params={k: v for k, v in (params or {}).items() if v is not None},
            headers=self._headers,
        )
        if 400 <= response.status_code < 500:
            try:
                found = response.json()
            except ValueError:
                found = {"error": "unknown", "detail": response.text}
            raise Refused(response.status_code, found if isinstance(found, dict) else {})
        response.raise_for_status()
        return response.json()

    # --- public market data (no token needed) ---------------------------------------------

    async def islands(self) -> list[Json]:
        result: list[Json] = await self._call("GET", "/api/islands")
        return result

    async def stats(self, island: str) -> Json:
        """The island's latest tick statistics (vwap, min, max, gpus, pending_gpus, ...)."""
        result: Json = await self._call("GET", "/api/market/stats", params={"island": island})
        return result

    async def ladder(self, island: str, max_nodes: int | None = None) -> Json:
        """The price-to-win ladder of the island's latest tick (see `price_to_win`)."""
        params = {"island": island, "max_nodes": max_nodes}
        result: Json = await self._call("GET", "/api/market/ladder", params=params)
        return result


class TenantClient(_Api):
    """A cluster's view of the market (its cluster token)."""

    def __init__(self, base_url: str, token: str, *, http: httpx.AsyncClient | None = None) -> None:
        super().__init__(base_url, token, http=http)

    # --- VM clusters ----------------------------------------------------------------------

    async def capacity(self) -> Json:
        """What the cluster declared and holds: max_gpus, held_gpus, pending_gpus, nodes, rate."""
        result: Json = await self._call("GET", "/api/vm/capacity")
        return result

    async def declare(
        self, max_gpus: int, max_price_per_gpu_hour: float | None, release: Iterable[str] = ()
    ) -> Json:
        """Declare how many GPUs the cluster wants and the most it pays per GPU-hour; a lower
        `max_gpus` is a scale-down (nominated `release` nodes go first)."""
        body: Json = {"max_gpus": max_gpus, "max_price_per_gpu_hour": max_price_per_gpu_hour}
        nominated = list(release)
        if nominated:
            body["release"] = nominated
        result: Json = await self._call("PUT", "/api/vm/capacity", body)
        return result

    async def declare_to_win(self, nodes: int, ceiling: float, margin: float = 0.10) -> Json:
        """Ladder-aware declaration: bid the last tick's price to win `nodes` nodes plus
        `margin`, never above `ceiling`; at the ceiling when the ladder is out of reach."""
        capacity = await self.capacity()
        ladder = await self.ladder(capacity["island"], max_nodes=nodes)
        win = price_to_win(ladder, nodes)
        bid = ceiling if win is None else min(ceiling, round(win * (1 + margin), 4))
        return await self.declare(nodes * capacity["gpus_per_node"], bid)

    # --- Kubernetes clusters --------------------------------------------------------------

    async def bid(self) -> Json:
        result: Json = await self._call("GET", "/api/k8s/bid")
        return result

    async def set_bid(self, limit_price_per_gpu_hour: float) -> Json:
        """The cluster's limit price, used by every job that does not set its own."""
        body = {"limit_price_per_gpu_hour": limit_price_per_gpu_hour}
        result: Json = await self._call("PUT", "/api/k8s/bid", body)
        return result

    async def submit_job(
        self,
        name: str,
        nodes: int,
        *,
        priority_class: str | None = None,
        limit_price_per_gpu_hour: float | None = None,
    ) -> Json:
        """A job of `nodes` whole-node pods: one gang, granted whole or not at all."""
        body: Json = {"name": name, "nodes": nodes}
        if priority_class is not None:
            body["priority_class"] = priority_class
        if limit_price_per_gpu_hour is not None:
            body["limit_price_per_gpu_hour"] = limit_price_per_gpu_hour
        result: Json = await self._call("POST", "/api/k8s/jobs", body)
        return result

    async def jobs(self) -> list[Json]:
        result: list[Json] = await self._call("GET", "/api/k8s/jobs")
        return result

    async def job(self, name: str) -> Json:
        result: Json = await self._call("GET", f"/api/k8s/jobs/{name}")
        return result

    async def finish_job(self, name: str) -> Json:
        """The job is done (or crashed): its nodes go idle, then back to the market."""
        result: Json = await self._call("DELETE", f"/api/k8s/jobs/{name}")
        return result

    # --- money ----------------------------------------------------------------------------

    async def set_spend_limit(self, usd_per_day: float | None) -> Json:
        result: Json = await self._call("PUT", "/api/spend-limit", {"usd_per_day": usd_per_day})
        return result

    async def spend_limit(self) -> Json:
        result: Json = await self._call("GET", "/api/spend-limit")
        return result

    async def billing(
        self, start: str | None = None, end: str | None = None, granularity: str = "1h"
    ) -> list[Json]:
        params = {"start": start, "end": end, "granularity": granularity}
        result: list[Json] = await self._call("GET", "/api/billing", params=params)
        return result


class OperatorClient(_Api):
    """The operator's calls (operator token): accounts, clusters, islands, manual ticks."""

    async def create_account(self, name: str, balance_usd: float) -> Json:
        body = {"name": name, "balance_usd": balance_usd}
        result: Json = await self._call("POST", "/api/admin/accounts", body)
        return result

    async def account(self, name: str) -> Json:
        result: Json = await self._call("GET", f"/api/admin/accounts/{name}")
        return result

    async def credit(self, name: str, amount_usd: float) -> Json:
        body = {"amount_usd": amount_usd}
        result: Json = await self._call("POST", f"/api/admin/accounts/{name}/credit", body)
        return result

    async def create_cluster(self, account: str, island: str, kind: str, name: str) -> Json:
        """A new cluster: `{id, token}` (the token is shown only here)."""
        body = {"account": account, "island": island, "kind": kind, "name": name}
        result: Json = await self._call("POST", "/api/admin/clusters", body)
        return result

    async def put_island(
        self,
        island: str,
        *,
        gpus_per_node: int | None = None,
        nodes: int | None = None,
        reserve_price: float | None = None,
    ) -> Json:
        """Create an island, or change its size or reserve price."""
        body = {"gpus_per_node": gpus_per_node, "nodes": nodes, "reserve_price": reserve_price}
        result: Json = await self._call(
            "PUT", f"/api/admin/islands/{island}", {k: v for k, v in body.items() if v is not None}
        )
        return result

    async def ticks(self, count: int = 1) -> Json:
        """Run `count` ticks now (manual clock only): every island's statistics of the last."""
        result: Json = await self._call("POST", "/api/admin/ticks", {"count": count})
        return result
