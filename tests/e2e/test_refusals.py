"""Every refusal: the right status and code, `{error, detail}`, exactly one REFUSED line each;
tokens act on their own cluster only; bad input is never a 500."""

from __future__ import annotations

from typing import Any

import pytest

from burstmarket.errors import MarketError
from tests.conftest import Server, StartServer
from tests.e2e.support import bearer, declare, make_account, make_cluster, make_island, ok, tick


@pytest.fixture(scope="module")
def market(shared_server: Server) -> dict[str, Any]:
    server = shared_server
    make_island(server, "ref-island", nodes=2, reserve=2.0)
    tick(server, island="ref-island")  # market data exists (the series cases need it)
    make_account(server, "rich", balance=1000)
    make_account(server, "broke", balance=0)
    vm = make_cluster(server, "rich", "ref-island", "vm", "r-vm")
    other = make_cluster(server, "rich", "ref-island", "vm", "r-other")
    k8s = make_cluster(server, "rich", "ref-island", "k8s", "r-k8s")
    poor = make_cluster(server, "broke", "ref-island", "vm", "r-poor")
    limited = make_cluster(server, "rich", "ref-island", "vm", "r-limited")
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 10}, headers=limited))
    ok(server.client.put("/api/k8s/bid", json={"limit_price_per_gpu_hour": 3}, headers=k8s))
    ok(server.client.post("/api/k8s/jobs", json={"name": "mine", "nodes": 1}, headers=k8s), 201)
    # a cluster with a live base load block, on an island of its own
    make_island(server, "block-island", nodes=1, reserve=2.0)
    operator = server.operator()
    cap = {"base_load_cap": 1}
    ok(server.client.put("/api/admin/islands/block-island", json=cap, headers=operator))
    make_cluster(server, "rich", "block-island", "k8s", "r-block")
    path = "/api/admin/clusters/r-block/base-load"
    ok(server.client.post(path, json=BLOCK, headers=operator), 201)
    # base load offers: 1 node reservable, a cell with no rate; an island not open for buying
    make_island(server, "shop-island", nodes=2, reserve=2.0)
    cells = [
        {"size_gpus": 8, "term_hours": 1, "rate_per_gpu_hour": 3},
        {"size_gpus": 8, "term_hours": 2},
        {"size_gpus": 16, "term_hours": 1, "rate_per_gpu_hour": 3},
    ]
    grid = {"buying_open": True, "reservable_nodes": 1, "cells": cells}
    path = "/api/admin/islands/shop-island/base-load-offers"
    ok(server.client.put(path, json=grid, headers=operator))
    shopper = make_cluster(server, "broke", "shop-island", "k8s", "r-shopper")
    make_island(server, "closed-island", nodes=1, reserve=2.0)
    closed = make_cluster(server, "rich", "closed-island", "k8s", "r-closed")
    return {
        "vm": vm,
        "other": other,
        "k8s": k8s,
        "poor": poor,
        "limited": limited,
        "shopper": shopper,
        "closed": closed,
    }


BLOCK = {"nodes": 1, "rate_per_gpu_hour": 3.0, "term_hours": 1}


def _cases(m: dict[str, Any], operator: dict[str, str]) -> list[tuple[Any, ...]]:
    """(method, path, headers, json body or raw bytes, status, code)"""
    vm, k8s = m["vm"], m["k8s"]
    return [
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": 12, "max_price_per_gpu_hour": 5},
            422,
            "off-grid",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": 8, "max_price_per_gpu_hour": 1.5},
            409,
            "bid-too-low",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            m["limited"],
            {"max_gpus": 8, "max_price_per_gpu_hour": 5},
            402,
            "spend-limit",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            m["poor"],
            {"max_gpus": 8, "max_price_per_gpu_hour": 5},
            402,
            "billing-hold",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": 8, "max_price_per_gpu_hour": 5.00001},
            422,
            "invalid",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": 8, "max_price_per_gpu_hour": -1},
            422,
            "invalid",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": 8, "max_price_per_gpu_hour": 1001},
            422,
            "invalid",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": "8", "max_price_per_gpu_hour": 5},
            422,
            "invalid",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": -8, "max_price_per_gpu_hour": 5},
            422,
            "invalid",
        ),
        ("PUT", "/api/vm/capacity", vm, {"max_gpus": 8, "price": 5}, 422, "invalid"),
        ("PUT", "/api/vm/capacity", vm, {"max_price_per_gpu_hour": 5}, 422, "invalid"),
        ("PUT", "/api/vm/capacity", vm, b"{not json", 422, "invalid"),
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            b'{"max_gpus": 8, "max_price_per_gpu_hour": 1e400}',
            422,
            "invalid",
        ),
        (
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": 8, "max_price_per_gpu_hour": 5, "release": ["nope"]},
            422,
            "invalid",
        ),
        ("GET", "/api/billing?granularity=2h", vm, None, 422, "invalid"),
        ("GET", "/api/billing?start=yesterday", vm, None, 422, "invalid"),
        ("POST", "/api/k8s/jobs", k8s, {"name": "Bad Name", "nodes": 1}, 422, "invalid"),
        (
            "POST",
            "/api/k8s/jobs",
            k8s,
            {"name": "cheap", "nodes": 1, "limit_price_per_gpu_hour": 1},
            409,
            "bid-too-low",
        ),
        ("POST", "/api/k8s/jobs", k8s, {"name": "mine", "nodes": 1}, 409, "conflict"),
        ("PUT", "/api/k8s/bid", k8s, {"limit_price_per_gpu_hour": 0.5}, 409, "bid-too-low"),
        ("PUT", "/api/spend-limit", vm, {"usd_per_day": 0}, 422, "invalid"),
        ("GET", "/api/vm/capacity", {}, None, 401, "unauthorized"),
        ("GET", "/api/vm/capacity", bearer("not-a-token"), None, 401, "unauthorized"),
        ("GET", "/api/vm/capacity", operator, None, 403, "forbidden"),
        ("GET", "/api/vm/capacity", k8s, None, 403, "forbidden"),
        ("GET", "/api/k8s/bid", vm, None, 403, "forbidden"),
        ("POST", "/api/admin/accounts", vm, {"name": "x", "balance_usd": 1}, 403, "forbidden"),
        ("POST", "/api/admin/accounts", {}, {"name": "x", "balance_usd": 1}, 401, "unauthorized"),
        (
            "POST",
            "/api/admin/accounts",
            operator,
            {"name": "rich", "balance_usd": 1},
            409,
            "conflict",
        ),
        (
            "POST",
            "/api/admin/clusters",
            operator,
            {"account": "rich", "island": "nowhere", "kind": "vm", "name": "zz"},
            404,
            "not-found",
        ),
        (
            "POST",
            "/api/admin/clusters",
            operator,
            {"account": "rich", "island": "ref-island", "kind": "gpu", "name": "zz"},
            422,
            "invalid",
        ),
        ("PUT", "/api/admin/islands/fresh", operator, {"nodes": 2}, 422, "invalid"),
        ("POST", "/api/admin/ticks", operator, {"count": 0}, 422, "invalid"),
        ("GET", "/api/k8s/jobs/theirs", k8s, None, 404, "not-found"),
        ("GET", "/api/no-such-endpoint", vm, None, 404, "not-found"),
        ("GET", "/api/market/stats?island=nowhere", {}, None, 404, "unknown-island"),
        # made after the market fixture's one tick: it exists, and has not ticked yet
        ("GET", "/api/market/stats?island=closed-island", {}, None, 404, "not-ticked-yet"),
        ("DELETE", "/api/vm/capacity", vm, None, 405, "method-not-allowed"),
        ("PUT", "/api/vm/capacity", vm, b"[" * (1 << 20) + b"]" * 8, 413, "too-large"),
        (
            "POST",
            "/api/k8s/jobs",
            k8s,
            {"name": "j", "nodes": 1, "priority_class": "p" * 254},
            422,
            "invalid",
        ),
        ("PUT", "/api/vm/capacity", vm, {"max_gpus": 0, "release": ["n"] * 10_001}, 422, "invalid"),
        ("GET", "/static/%00", {}, None, 404, "not-found"),
        ("GET", "/static/" + "a" * 5000, {}, None, 404, "not-found"),
        (
            "GET",
            "/api/vm/capacity",
            {"Authorization": "Bearer jeton-é".encode()},
            None,
            401,
            "unauthorized",
        ),
        (
            "GET",
            "/api/admin/accounts/rich",
            {"Authorization": "Bearer jeton-é".encode()},
            None,
            401,
            "unauthorized",
        ),
        (
            "GET",
            "/api/market/series?island=ref-island&end=0001-01-02&interval=1d&limit=10",
            {},
            None,
            422,
            "invalid",
        ),
        (
            "GET",
            "/api/market/series?island=ref-island&start=0001-01-01T00:00:00%2B01:00",
            {},
            None,
            422,
            "invalid",
        ),
        ("GET", "/api/billing?end=0001-01-02", vm, None, 422, "invalid"),
        ("POST", "/api/admin/clusters/r-block/base-load", operator, BLOCK, 409, "one-per-cluster"),
        (
            "POST",
            "/api/base-load",
            m["shopper"],
            {"size_gpus": 16, "term_hours": 1},
            409,
            "not-available",
        ),
        (
            "POST",
            "/api/base-load",
            m["shopper"],
            {"size_gpus": 8, "term_hours": 2},
            409,
            "sold-out",
        ),
        (
            "POST",
            "/api/base-load",
            m["shopper"],
            {"size_gpus": 8, "term_hours": 1},
            402,
            "insufficient-balance",
        ),
        (
            "POST",
            "/api/base-load",
            m["closed"],
            {"size_gpus": 8, "term_hours": 1},
            409,
            "buying-closed",
        ),
    ]


def test_the_cases_cover_every_refusal_code() -> None:
    every = {cls.code for cls in _subclasses(MarketError)}
    clusters = dict.fromkeys(("vm", "k8s", "limited", "poor", "shopper", "closed"))
    cases = {case[-1] for case in _cases(clusters, {})}
    # each needs a server of its own: manual-clock-only a real clock (below), rate-limited a
    # low limit, store-unavailable a fault (tests/e2e/test_hostile.py), request-timeout and
    # too-many-connections a short header timeout and a low limit per address
    # (tests/e2e/test_connections.py)
    assert every - cases == {
        "manual-clock-only",
        "rate-limited",
        "store-unavailable",
        "request-timeout",
        "too-many-connections",
    }


def _subclasses(cls: type[MarketError]) -> list[type[MarketError]]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]


def test_every_refusal_has_its_code_and_exactly_one_line(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    for method, path, headers, body, status, code in _cases(market, server.operator()):
        before = [line for line in server.refused_lines() if f"reason={code} " in line]
        kwargs: dict[str, Any] = {"headers": headers}
        if isinstance(body, bytes):
            kwargs["content"] = body
        elif body is not None:
            kwargs["json"] = body
        response = server.client.request(method, path, **kwargs)
        assert response.status_code == status, (method, path, response.text)
        payload = response.json()
        assert payload["error"] == code, (path, payload)
        assert isinstance(payload["detail"], str)
        assert payload["detail"]
        after = [line for line in server.refused_lines() if f"reason={code} " in line]
        assert len(after) == len(before) + 1, (code, path, after[len(before) :])
        if code == "invalid":
            assert "field" in payload, payload
        if code == "method-not-allowed":
            allowed = set(response.headers["allow"].split(", "))
            assert {"GET", "PUT"} <= allowed, allowed
            assert method not in allowed
        if path.startswith("/static/"):
            assert len(response.text) < 2000  # the 5,000-character path is not echoed whole
    log = server.log()
    assert "Traceback" not in log
    for token in (market["vm"]["Authorization"].split()[1], server.token):
        assert token not in log


def test_a_token_sees_and_changes_its_own_cluster_only(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    ok(declare(server, market["other"], 8, 4))
    mine = ok(server.client.get("/api/vm/capacity", headers=market["vm"]))
    assert mine["cluster"] == "r-vm"
    assert mine["max_gpus"] == 0
    theirs = ok(server.client.get("/api/vm/capacity", headers=market["other"]))
    assert theirs["cluster"] == "r-other"
    assert theirs["max_gpus"] == 8
    # another cluster's job is invisible, and cannot be finished or patched
    k8s_other = make_cluster(server, "rich", "ref-island", "k8s", "r-k8s-other")
    for method in ("GET", "DELETE", "PATCH"):
        response = server.client.request(
            method, "/api/k8s/jobs/mine", headers=k8s_other, json={} if method == "PATCH" else None
        )
        assert response.status_code == 404
        assert response.json()["error"] == "not-found"
    assert ok(server.client.get("/api/k8s/jobs", headers=k8s_other)) == []
    assert ok(server.client.get("/api/k8s/jobs/mine", headers=market["k8s"]))["name"] == "mine"


def test_a_standing_bid_overtaken_by_the_reserve_reads_bid_too_low(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    make_island(server, "moving", nodes=1, reserve=1.0)
    c = make_cluster(server, "rich", "moving", "vm", "mv-c")
    late = make_cluster(server, "rich", "moving", "vm", "mv-late")
    ok(declare(server, c, 8, 3))
    ok(declare(server, late, 8, 2))
    tick(server, island="moving")
    assert ok(server.client.get("/api/vm/capacity", headers=late))["bid_too_low"] is False
    make_island(server, "moving", nodes=1, reserve=2.5)
    assert ok(server.client.get("/api/vm/capacity", headers=late))["bid_too_low"] is True
    stats = tick(server, island="moving")
    assert stats["reserve_price"] == 2.5


def test_openapi_is_served(shared_server: Server) -> None:
    schema = ok(shared_server.client.get("/schema/openapi.json"))
    assert schema["openapi"].startswith("3.1")
    for path in ("/api/vm/capacity", "/api/k8s/jobs/{job}", "/api/admin/ticks", "/api/billing"):
        assert path in schema["paths"], path


def test_operator_endpoints_are_closed_without_the_token(start_server: StartServer) -> None:
    server = start_server(operator_token=None)
    response = server.client.post("/api/admin/accounts", json={"name": "a"})
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert len([x for x in server.refused_lines() if "reason=forbidden" in x]) == 1


def test_manual_ticks_are_refused_on_the_real_clock(start_server: StartServer) -> None:
    server = start_server("--clock", "real", "--tick-seconds", "3600")
    response = server.client.post("/api/admin/ticks", json={"count": 1}, headers=server.operator())
    assert response.status_code == 409
    assert response.json()["error"] == "manual-clock-only"
    assert len([x for x in server.refused_lines() if "reason=manual-clock-only" in x]) == 1
