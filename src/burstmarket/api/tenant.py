"""Tenant endpoints (cluster token): VM capacity, Kubernetes bid and jobs, spend limit, billing.

Handlers are sync and run in a worker thread: every one of them touches DuckDB. Except the hot
path, `PUT /api/vm/capacity`: it stays on the event loop and awaits the store's group commit.
"""

from __future__ import annotations

import csv
import io
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, delete, get, patch, post, put
from litestar.params import QueryParameter

from burstmarket.api.auth import cluster_of
from burstmarket.api.bodies import (
    Bid,
    Capacity,
    JobPatch,
    NewJob,
    SpendLimitBody,
    amount,
    decode,
    optional_price,
    price,
)
from burstmarket.api.services import Services
from burstmarket.api.threads import threaded
from burstmarket.apidoc import documented
from burstmarket.clock import from_datetime, parse_time
from burstmarket.errors import Invalid
from burstmarket.market.report import GRANULARITIES

AnyRequest = Request[Any, Any, Any]
Json = dict[str, Any]


def _me(request: AnyRequest, services: Services) -> str:
    return cluster_of(
        request, services.market, services.settings.operator_token, services.limits
    )


@get("/api/vm/capacity")
@threaded
def get_capacity(request: AnyRequest, services: Services) -> Json:
    return services.tenant.vm_capacity(_me(request, services))


@put("/api/vm/capacity", operation_class=documented(Capacity))
async def put_capacity(request: AnyRequest, services: Services, body: bytes) -> Json:
    me = _me(request, services)
    data = decode(body, Capacity)
    return await services.tenant.declare_vm(
        me,
        data.max_gpus,
        optional_price("max_price_per_gpu_hour", data.max_price_per_gpu_hour),
        data.release,
    )


@get("/api/k8s/bid")
@threaded
def get_bid(request: AnyRequest, services: Services) -> Json:
    return services.tenant.k8s_bid(_me(request, services))


@put("/api/k8s/bid", operation_class=documented(Bid))
@threaded
def put_bid(request: AnyRequest, services: Services, body: bytes) -> Json:
    me = _me(request, services)
    data = decode(body, Bid)
    return services.tenant.set_k8s_bid(
        me, price("limit_price_per_gpu_hour", data.limit_price_per_gpu_hour)
    )


@post("/api/k8s/jobs", status_code=201, operation_class=documented(NewJob))
@threaded
def post_job(request: AnyRequest, services: Services, body: bytes) -> Json:
    me = _me(request, services)
    data = decode(body, NewJob)
    return services.tenant.create_job(
        me,
        data.name,
        data.nodes,
        data.priority_class,
        optional_price("limit_price_per_gpu_hour", data.limit_price_per_gpu_hour),
    )


@get("/api/k8s/jobs")
@threaded
def get_jobs(request: AnyRequest, services: Services) -> list[Json]:
    return services.tenant.jobs(_me(request, services))


@get("/api/k8s/jobs/{job:str}")
@threaded
def get_job(request: AnyRequest, services: Services, job: str) -> Json:
    return services.tenant.job(_me(request, services), job)


@patch("/api/k8s/jobs/{job:str}", operation_class=documented(JobPatch))
@threaded
def patch_job(request: AnyRequest, services: Services, job: str, body: bytes) -> Json:
    me = _me(request, services)
    data = decode(body, JobPatch)
    new_price = data.limit_price_per_gpu_hour
    new_class = data.priority_class
    return services.tenant.patch_job(
        me,
        job,
        None
        if new_price is msgspec.UNSET
        else optional_price("limit_price_per_gpu_hour", new_price),
        new_price is not msgspec.UNSET,
        None if new_class is msgspec.UNSET else new_class,
        new_class is not msgspec.UNSET,
    )


@delete("/api/k8s/jobs/{job:str}", status_code=200)
@threaded
def delete_job(request: AnyRequest, services: Services, job: str) -> Json:
    return services.tenant.finish_job(_me(request, services), job)


@get("/api/spend-limit")
@threaded
def get_spend_limit(request: AnyRequest, services: Services) -> Json:
    return services.tenant.spend_limit(_me(request, services))


@put("/api/spend-limit", operation_class=documented(SpendLimitBody))
@threaded
def put_spend_limit(request: AnyRequest, services: Services, body: bytes) -> Json:
    me = _me(request, services)
    data = decode(body, SpendLimitBody)
    limit = None if data.usd_per_day is None else amount("usd_per_day", data.usd_per_day)
    return services.tenant.set_spend_limit(me, limit)


def _time(field: str, value: str | None) -> int | None:
    return None if value is None else from_datetime(parse_time(field, value))


@get("/api/billing")
@threaded
def get_billing(
    request: AnyRequest,
    services: Services,
    start: str | None = None,
    end: str | None = None,
    granularity: str = "1h",
    output: Annotated[str, QueryParameter(name="format")] = "json",
) -> Response[Any]:
    me = _me(request, services)
    if granularity not in GRANULARITIES:
        raise Invalid("granularity", "must be 5m, 1h or 1d", value=granularity)
    if output not in ("json", "csv"):
        raise Invalid("format", "must be json or csv", value=output)
    rows = services.tenant.billing(me, _time("start", start), _time("end", end), granularity)
    if output == "json":
        return Response(rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["start", "end", "gpu_hours", "amount_usd", "kind"])
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row[k] for k in writer.fieldnames})
    return Response(buffer.getvalue(), media_type="text/csv")


ROUTES = [
    get_capacity,
    put_capacity,
    get_bid,
    put_bid,
    post_job,
    get_jobs,
    get_job,
    patch_job,
    delete_job,
    get_spend_limit,
    put_spend_limit,
    get_billing,
]
