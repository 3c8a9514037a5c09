"""The OpenAPI document (`/schema/openapi.json`) is the API's contract for every route the app
serves: its request body, a typed answer, its query parameters, its refusals (each code under
its own status) and the bearer scheme where a token is needed; and the answers the service
really sends conform to it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import schemathesis
from litestar import Litestar
from litestar.handlers import HTTPRouteHandler
from litestar.params import QueryParameter
from litestar.routes import HTTPRoute

from burstmarket import contract
from burstmarket.api.bodies import decode
from burstmarket.clock import parse_time
from burstmarket.errors import Invalid, MarketError
from burstmarket.market.desks.inputs import price
from tests.api.support import OPERATOR, app_at, ok, running, vm_and_k8s
from tests.constants import OPERATIONS

Operation = tuple[str, str, HTTPRouteHandler]
FREE_FORM = {"node_spec"}
"""The one field of any JSON by design: what a node is, as the operator describes it."""


def _statuses() -> dict[str, int]:
    """Every refusal code and its status, from the error tree."""
    found: dict[str, int] = {}
    pending: list[type[MarketError]] = [MarketError]
    while pending:
        kind = pending.pop()
        found[kind.code] = kind.status
        pending += kind.__subclasses__()
    return found


def _operations(app: Litestar) -> Iterator[Operation]:
    """(path as documented, method, handler) of every documented HTTP route the app serves."""
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            if handler.resolve_include_in_schema():
                for method in handler.http_methods:
                    yield route.path_format, method.lower(), handler


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _document(tmp_path: Path, app: Litestar) -> dict[str, Any]:
    async def fetch() -> dict[str, Any]:
        async with running(tmp_path, app) as http:
            document: dict[str, Any] = await ok(http.get("/schema/openapi.json"))
            return document

    return asyncio.run(fetch())


def test_every_route_documents_body_answer_query_refusals_and_bearer(tmp_path: Path) -> None:
    app = app_at(tmp_path)
    doc = _document(tmp_path, app)
    statuses = _statuses()
    operations = list(_operations(app))
    assert len(operations) == OPERATIONS
    for path, method, handler in operations:
        where = f"{method.upper()} {path}"
        operation = doc["paths"][path][method]
        signature = handler.parsed_fn_signature.parameters
        # everything a handler reads is in its signature, none reads the raw request
        assert "request" not in signature, where
        assert "body" not in signature, where

        data = handler.parsed_data_field
        if data is None:
            assert "requestBody" not in operation, where
        else:
            body = operation["requestBody"]
            assert body["required"], where
            schema = _resolve(doc, body["content"]["application/json"]["schema"])
            assert set(schema["properties"]) == set(data.annotation.__struct_fields__), where

        answer = operation["responses"][str(handler.status_code)]
        schema = _resolve(doc, answer["content"]["application/json"]["schema"])
        if schema.get("type") == "array":
            schema = _resolve(doc, schema["items"])
        assert schema["type"] == "object", where
        assert schema["properties"], where  # typed: never an object of anything
        for name, field in schema["properties"].items():
            assert field or name in FREE_FORM, (where, name)

        sent = {
            parameter.kwarg_definition.name or name
            for name, parameter in signature.items()
            if isinstance(parameter.kwarg_definition, QueryParameter)
        }
        listed = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        assert listed == sent, where

        refusals = {int(s): r for s, r in operation["responses"].items() if int(s) >= 400}
        assert refusals, where
        assert 400 not in refusals, where  # litestar's own shape: never sent (422 instead)
        for status, refusal in refusals.items():
            schema = _resolve(doc, refusal["content"]["application/json"]["schema"])
            assert {"error", "detail"} <= set(schema["required"]), (where, status)
            error = schema["properties"]["error"]
            codes = error["enum"] if "enum" in error else [error["const"]]
            assert {statuses[code] for code in codes} == {status}, (where, status, codes)
        if data is not None:
            assert {413, 422} <= set(refusals), where

        if handler.resolve_guards():
            assert operation["security"] == [{"BearerToken": []}], where
            assert {401, 403} <= set(refusals), where
        else:
            assert "security" not in operation, where
            assert not {401, 403} & set(refusals), where

    assert doc["openapi"].startswith("3.1")
    scheme = doc["components"]["securitySchemes"]["BearerToken"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")


def _query(doc: dict[str, Any], path: str) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in doc["paths"][path]["get"]["parameters"]}


def test_the_document_describes_itself_and_names_operations_in_one_style(tmp_path: Path) -> None:
    doc = _document(tmp_path, app_at(tmp_path))
    assert "/ws/market" in doc["info"]["description"]
    ids = []
    for path, operations in doc["paths"].items():
        # `GET /api/market/stats`: getMarketStats; a path parameter `{job}`: ByJob
        words = []
        for part in path.removeprefix("/api/").split("/"):
            words += ["by", part[1:-1]] if part.startswith("{") else [part]
        tail = "".join(
            piece[:1].upper() + piece[1:] for word in words for piece in re.split(r"[-_]", word)
        )
        for method, operation in operations.items():
            assert operation["operationId"] == method + tail, (method, path)
            ids.append(operation["operationId"])
    assert len(set(ids)) == len(ids)
    assert "getMarketStats" in ids
    assert "getCluster" in ids


def test_the_market_endpoints_document_their_query_and_other_media_types(
    tmp_path: Path,
) -> None:
    doc = _document(tmp_path, app_at(tmp_path))
    assert list(_query(doc, "/api/market/stats")) == ["island"]
    assert list(_query(doc, "/api/market/rates")) == ["island"]
    ladder = _query(doc, "/api/market/ladder")
    assert list(ladder) == ["island", "max_nodes"]
    assert ladder["island"]["required"]
    assert ladder["max_nodes"]["schema"]["minimum"] == 0
    series = _query(doc, "/api/market/series")
    assert list(series) == ["island", "interval", "start", "end", "limit", "format"]
    assert series["interval"]["schema"]["enum"] == ["1m", "5m", "15m", "30m", "1h", "1d"]
    assert series["format"]["schema"]["enum"] == ["json", "csv", "arrow"]
    assert (series["limit"]["schema"]["minimum"], series["limit"]["schema"]["maximum"]) == (
        1,
        10_000,
    )
    assert series["start"]["schema"]["format"] == "date-time"
    answers = doc["paths"]["/api/market/series"]["get"]["responses"]["200"]["content"]
    assert set(answers) == {
        "application/json",
        "text/csv; charset=utf-8",
        "application/vnd.apache.arrow.stream",
    }
    billing = _query(doc, "/api/billing")
    assert list(billing) == ["start", "end", "granularity", "format"]
    assert billing["granularity"]["schema"]["enum"] == ["5m", "1h", "1d"]
    assert set(doc["paths"]["/api/billing"]["get"]["responses"]["200"]["content"]) == {
        "application/json",
        "text/csv",
    }
    # money in a body is a JSON number (read exactly), never a string
    price = doc["components"]["schemas"]["CapacityDeclaration"]["properties"][
        "max_price_per_gpu_hour"
    ]
    assert [kind["type"] for kind in price["oneOf"]] == ["number", "null"]


def _objects(doc: dict[str, Any], schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every object schema a body's schema holds: its own, its fields', its lists' items'."""
    schema = _resolve(doc, schema)
    if schema.get("type") == "object":
        yield schema
    inner = [*schema.get("properties", {}).values(), *schema.get("oneOf", [])]
    for one in [*inner, schema.get("items")]:
        if one:
            yield from _objects(doc, one)


def _kinds(schema: dict[str, Any]) -> set[str]:
    return {schema.get("type"), *(one.get("type") for one in schema.get("oneOf", []))} - {None}


def _refuses(kind: type[msgspec.Struct], name: str, value: Any) -> bool:
    """Whether decoding refuses `value` for the field `name` of `kind` (the field comes first, so
    it is the one named if it is at fault)."""
    try:
        decode(msgspec.json.encode({name: value}), kind)
    except Invalid as refused:
        return bool(refused.figures["field"] == name)
    return False


def test_the_document_says_what_the_server_holds_a_body_to(tmp_path: Path) -> None:
    """Unknown fields refused, the bounds of every count, price and amount, the time range: the
    document states each, and states it as the server enforces it."""
    app = app_at(tmp_path)
    doc = _document(tmp_path, app)
    bodies: dict[str, dict[str, Any]] = {}
    for path, method, handler in _operations(app):
        if handler.parsed_data_field is not None:
            body = doc["paths"][path][method]["requestBody"]["content"]["application/json"]
            for schema in _objects(doc, body["schema"]):
                assert schema["additionalProperties"] is False, (path, method, schema["title"])
                bodies[schema["title"]] = schema
    assert {"NewJob", "OfferGrid", "PostedCell", "Wire"} <= set(bodies)

    # a count: above 0 (or not negative) in the document exactly where decoding says so
    positive = set()
    for title, schema in bodies.items():
        kind = getattr(contract, title)
        for name, field in schema["properties"].items():
            if "integer" not in _kinds(field):
                continue
            above_zero = field.get("exclusiveMinimum") == 0
            at_least_zero = above_zero or field.get("minimum") == 0
            assert _refuses(kind, name, 0) == above_zero, (title, name, field)
            assert _refuses(kind, name, -1) == at_least_zero, (title, name, field)
            if above_zero:
                positive.add(f"{title}.{name}")
    assert {
        "NewJob.nodes",
        "NewJob.pods",
        "NewJob.gpus_per_pod",
        "IslandChange.gpus_per_node",
        "IslandChange.nodes",
        "NewBlock.nodes",
        "NewBlock.term_hours",
        "BlockChange.nodes",
        "PostedCell.size_gpus",
        "PostedCell.term_hours",
        "NewPurchase.size_gpus",
        "NewPurchase.term_hours",
        "TickRequest.count",
    } == positive
    assert bodies["TickRequest"]["properties"]["count"]["maximum"] == contract.MAX_TICKS

    # money: every price above 0 and at most the maximum, as `price` holds it; a spend limit and
    # a wire above 0
    prices = 0
    for title, schema in bodies.items():
        for name, field in schema["properties"].items():
            numbers = [
                one for one in [field, *field.get("oneOf", [])] if one.get("type") == "number"
            ]
            if not numbers:
                continue
            (number,) = numbers
            assert "maximum" in number, (title, name)
            if name.endswith(("price", "price_per_gpu_hour", "rate_per_gpu_hour")):
                prices += 1
                top = Decimal(str(number["maximum"]))
                assert number["exclusiveMinimum"] == 0, (title, name)
                assert price(name, top) == top * 1_000_000
                for refused in (top + Decimal("0.0001"), Decimal(0)):
                    with pytest.raises(Invalid):
                        price(name, refused)
    assert prices == 8
    for title, name in (("SpendLimitChange", "usd_per_day"), ("Wire", "amount_usd")):
        field = bodies[title]["properties"][name]
        (number,) = [one for one in [field, *field.get("oneOf", [])] if one.get("type") == "number"]
        assert number["exclusiveMinimum"] == 0, (title, name)

    # times: the range in the document is the range clock.parse_time takes
    times = [
        (f"{path} {p['name']}", p["schema"])
        for path, item in doc["paths"].items()
        for operation in item.values()
        for p in operation.get("parameters", [])
        if p["schema"].get("format") == "date-time"
    ]
    times.append(("BlockChange.ends_at", bodies["BlockChange"]["properties"]["ends_at"]))
    assert len(times) == 7
    for where, schema in times:
        assert schema["format"] == "date-time", where
        first = datetime.fromisoformat(schema["formatMinimum"])
        end = datetime.fromisoformat(schema["formatExclusiveMaximum"])
        assert (first.year, end.year) == (1970, 2200), where
        micro = timedelta(microseconds=1)
        for inside in (first, end - micro):
            parse_time(where, inside.isoformat())
        for outside in (first - micro, end):
            with pytest.raises(Invalid):
                parse_time(where, outside.isoformat())


def test_every_answer_conforms_to_the_document(tmp_path: Path) -> None:
    """One real call of every operation (and a refusal of several), each answer validated
    against the document: status, content type and body."""
    app = app_at(tmp_path)

    async def scenario() -> tuple[dict[str, Any], list[httpx.Response]]:
        answers: list[httpx.Response] = []
        async with running(tmp_path, app) as http:

            async def call(method: str, url: str, status: int = 200, **kw: Any) -> Any:
                response = await http.request(method, url, **kw)
                assert response.status_code == status, (method, url, response.text)
                answers.append(response)
                return response.json()

            island = {
                "gpus_per_node": 8,
                "nodes": 4,
                "reserve_price": 1,
                "base_load_cap": 2,
                "node_spec": {"gpus": "8x test"},
            }
            await call("PUT", "/api/admin/islands/docs", json=island, headers=OPERATOR)
            vm, k8s = await vm_and_k8s(http, "docs")
            await call("GET", "/api/admin/accounts/docs-acct", headers=OPERATOR)
            await call(
                "POST",
                "/api/admin/accounts/docs-acct/credit",
                json={"amount_usd": 5},
                headers=OPERATOR,
            )
            await call("POST", "/api/admin/accounts", 201, json={"name": "spare"}, headers=OPERATOR)
            await call(
                "POST",
                "/api/admin/clusters",
                201,
                headers=OPERATOR,
                json={"account": "spare", "island": "docs", "kind": "vm", "name": "spare-vm"},
            )
            await call(
                "PUT",
                "/api/vm/capacity",
                headers=vm,
                json={"max_gpus": 8, "max_price_per_gpu_hour": 2.5},
            )
            await call("PUT", "/api/k8s/bid", headers=k8s, json={"limit_price_per_gpu_hour": 2})
            job = {"name": "train", "nodes": 1, "priority_class": "high"}
            await call("POST", "/api/k8s/jobs", 201, json=job, headers=k8s)
            await call(
                "POST", "/api/admin/ticks", json={"count": 2, "island": "docs"}, headers=OPERATOR
            )
            for path in (
                "/api/vm/capacity",
                "/api/spend-limit",
                "/api/billing",
                "/api/account",
                "/api/ladder",
                "/api/receipts",
                "/api/ladder",
            ):
                await call("GET", path, headers=vm)
            for path in ("/api/k8s/bid", "/api/k8s/jobs", "/api/k8s/jobs/train"):
                await call("GET", path, headers=k8s)
            await call("GET", "/api/cluster", headers=k8s)
            await call(
                "PATCH", "/api/k8s/jobs/train", json={"limit_price_per_gpu_hour": 3}, headers=k8s
            )
            await call("PUT", "/api/spend-limit", json={"usd_per_day": 100}, headers=vm)
            await call("GET", "/api/islands")
            for feed in ("stats", "ladder", "rates"):
                await call("GET", f"/api/market/{feed}", params={"island": "docs"})
            await call("GET", "/api/market/series", params={"island": "docs", "limit": 3})
            nodes = await call("GET", "/api/admin/islands/docs/nodes", headers=OPERATOR)
            node = f"/api/admin/islands/docs/nodes/{nodes[0]['id']}"
            for action in ("cordon", "dark", "uncordon"):
                await call("POST", f"{node}/{action}", headers=OPERATOR)
            # base load: the grid, a purchase, a change, a wire, a job smaller than a node
            grid = {
                "buying_open": True,
                "reservable_nodes": 2,
                "cells": [{"size_gpus": 8, "term_hours": 1, "rate_per_gpu_hour": 2}],
            }
            await call(
                "PUT", "/api/admin/islands/docs/base-load-offers", json=grid, headers=OPERATOR
            )
            await call(
                "PUT",
                "/api/admin/clusters/docs-k8s/base-load/packing",
                json={"enabled": True},
                headers=OPERATOR,
            )
            await call("GET", "/api/base-load/offers", headers=k8s)
            bought = await call(
                "POST", "/api/base-load", 201, headers=k8s, json={"size_gpus": 8, "term_hours": 1}
            )
            await call(
                "PATCH",
                f"/api/admin/base-load/{bought['id']}",
                headers=OPERATOR,
                json={"rate_per_gpu_hour": 2.5, "notes": "docs"},
            )
            await call("GET", "/api/base-load", headers=k8s)
            await call(
                "POST",
                "/api/admin/accounts/docs-acct/wires",
                json={"amount_usd": 10},
                headers=OPERATOR,
            )
            small = {"name": "eval", "pods": 2, "gpus_per_pod": 2}
            await call("POST", "/api/k8s/jobs", 201, json=small, headers=k8s)
            # the account team's block, for another cluster
            await call(
                "POST",
                "/api/admin/clusters",
                201,
                headers=OPERATOR,
                json={"account": "spare", "island": "docs", "kind": "k8s", "name": "spare-k8s"},
            )
            block = {"nodes": 1, "rate_per_gpu_hour": 1.5, "term_hours": 1}
            blocks = "/api/admin/clusters/docs-k8s/base-load"
            await call(
                "POST", "/api/admin/clusters/spare-k8s/base-load", 201, json=block, headers=OPERATOR
            )
            await call("GET", blocks, headers=OPERATOR)
            await call("DELETE", "/api/k8s/jobs/train", headers=k8s)
            # refusals, each under its status
            await call("POST", blocks, 409, json=block, headers=OPERATOR)  # one-per-cluster
            await call(
                "POST", "/api/base-load", 409, headers=k8s, json={"size_gpus": 8, "term_hours": 1}
            )  # one-per-cluster
            await call("GET", "/api/base-load", 403, headers=vm)  # Kubernetes clusters only
            await call(
                "PUT",
                "/api/vm/capacity",
                422,
                headers=vm,
                json={"max_gpus": 3, "max_price_per_gpu_hour": 2},
            )  # off-grid
            await call(
                "PUT", "/api/k8s/bid", 409, headers=k8s, json={"limit_price_per_gpu_hour": 0.5}
            )  # bid-too-low
            await call("GET", "/api/k8s/jobs/nope", 404, headers=k8s)
            await call("GET", "/api/vm/capacity", 401)
            await call("GET", "/api/k8s/bid", 403, headers=vm)
            await call("GET", "/api/admin/accounts/docs-acct", 403, headers=vm)
            await call("GET", "/api/market/stats", 422)
            await call("GET", "/api/market/stats", 404, params={"island": "nowhere"})
            document = await ok(http.get("/schema/openapi.json"))
        return document, answers

    document, answers = asyncio.run(scenario())
    schema = schemathesis.openapi.from_dict(document)
    called: set[tuple[str, str]] = set()
    for answer in answers:
        path = answer.request.url.path
        route = next(
            (p, m)
            for p, m, h in _operations(app)
            if m == answer.request.method.lower() and _matches(p, path)
        )
        schema[route[0]][answer.request.method].validate_response(answer)
        if answer.status_code < 400:
            called.add(route)
    assert called == {(p, m) for p, m, _ in _operations(app)}


def _matches(template: str, path: str) -> bool:
    parts, wanted = template.strip("/").split("/"), path.strip("/").split("/")
    return len(parts) == len(wanted) and all(
        p == w or p.startswith("{") for p, w in zip(parts, wanted, strict=True)
    )


def test_the_answer_types_are_what_the_feed_publishes() -> None:
    """`POST /api/admin/ticks` answers with the contract's TickStats; the stats feed publishes
    the same fields from its catalog: one set of names."""
    from burstmarket.contract import TickStats
    from burstmarket.feed.catalog import load_catalog

    stats = next(spec for spec in load_catalog() if spec.name == "stats")
    assert msgspec.structs.fields(TickStats)[0].name == "island"
    assert TickStats.__struct_fields__ == ("island", "tick", "time", *stats.fields)
