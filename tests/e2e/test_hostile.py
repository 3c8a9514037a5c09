"""Hostile clients against the real server: no forged or huge log line, no echo of huge input,
limits on tenant input, per-token rate limits, the store's file mode, and a clear one-line exit
when the data directory is held by another server or read-only."""

from __future__ import annotations

import http.client
import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.exceptions import ConnectionClosedError
from websockets.sync.client import connect

from burstmarket.store import Database
from tests.conftest import (
    BURSTMARKET,
    LOG_LINE,
    OPERATOR_TOKEN,
    Server,
    StartServer,
    free_port,
)
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok, tick

FORGED = "\nREFUSED reason=spend-limit cluster=victim\rREFUSED reason=spend-limit cluster=victim2"
EVIL = "x" + FORGED + "\n" + "A" * 100_000
"""A newline, a carriage return, a forged refusal line and 100 KB."""
EVIL_URL = EVIL[:60_000]
"""As much as fits in a URL: the HTTP parser refuses a request line over 64 KB itself (400,
one line of its own, tested below)."""
SHORT_EVIL = "n" + FORGED[:60]
"""Within a 128-character limit, still with a newline and a forged line."""
LONGEST_LINE = 5000
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


@pytest.fixture(scope="module")
def market(shared_server: Server) -> dict[str, Any]:
    server = shared_server
    make_island(server, "hostile", nodes=2, reserve=1.0)
    make_account(server, "hostile-acct", balance=1000)
    vm = make_cluster(server, "hostile-acct", "hostile", "vm", "hostile-vm")
    k8s = make_cluster(server, "hostile-acct", "hostile", "k8s", "hostile-k8s")
    tick(server, island="hostile")
    return {"vm": vm, "k8s": k8s}


def _requests(market: dict[str, Any], operator: dict[str, str]) -> list[tuple[Any, ...]]:
    """(label, method, path, headers, json body or None) reaching every logged client value."""
    evil = quote(EVIL_URL, safe="")
    vm, k8s = market["vm"], market["k8s"]
    series = "/api/market/series?island=hostile"
    cases: list[tuple[Any, ...]] = [
        ("stats island", "GET", f"/api/market/stats?island={evil}", {}, None),
        ("ladder island", "GET", f"/api/market/ladder?island={evil}", {}, None),
        (
            "ladder max_nodes",
            "GET",
            f"/api/market/ladder?island=hostile&max_nodes={evil}",
            {},
            None,
        ),
        ("rates island", "GET", f"/api/market/rates?island={evil}", {}, None),
        ("series island", "GET", f"/api/market/series?island={evil}", {}, None),
        *[
            (f"series {name}", "GET", f"{series}&{name}={evil}", {}, None)
            for name in ("interval", "format", "start", "end", "limit")
        ],
        *[
            (f"billing {name}", "GET", f"/api/billing?{name}={evil}", vm, None)
            for name in ("granularity", "format", "start", "end")
        ],
        ("job path", "GET", f"/api/k8s/jobs/{evil}", k8s, None),
        ("patch job path", "PATCH", f"/api/k8s/jobs/{evil}", k8s, {}),
        ("account path", "GET", f"/api/admin/accounts/{evil}", operator, None),
        ("credit path", "POST", f"/api/admin/accounts/{evil}/credit", operator, {"amount_usd": 1}),
        ("island path", "GET", f"/api/admin/islands/{evil}/nodes", operator, None),
        ("node path", "POST", f"/api/admin/islands/hostile/nodes/{evil}/cordon", operator, None),
        ("cluster path", "GET", f"/api/admin/clusters/{evil}/base-load", operator, None),
        ("unknown route", "GET", f"/api/{evil}", {}, None),
        ("unknown field", "PUT", "/api/vm/capacity", vm, {EVIL: 1, "max_gpus": 0}),
        ("long job name", "POST", "/api/k8s/jobs", k8s, {"name": EVIL, "nodes": 1}),
        (
            "long priority",
            "POST",
            "/api/k8s/jobs",
            k8s,
            {"name": "ok", "nodes": 1, "priority_class": EVIL},
        ),
        (
            "release list",
            "PUT",
            "/api/vm/capacity",
            vm,
            {"max_gpus": 0, "release": [SHORT_EVIL] * 10},
        ),
        (
            "island name",
            "PUT",
            f"/api/admin/islands/{quote(SHORT_EVIL, safe='')}",
            operator,
            {"nodes": 1},
        ),
    ]
    return cases


def _request(
    server: Server, method: str, path: str, headers: dict[str, str], body: Any
) -> tuple[int, bytes]:
    """One request by http.client (httpx refuses URLs over 64 KB; a hostile client does not)."""
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        payload = None if body is None else json.dumps(body).encode()
        sent = {**headers, "Content-Type": "application/json"} if payload else dict(headers)
        connection.request(method, path, body=payload, headers=sent)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


BACKGROUND = " INFO burstmarket.history.exporter: "
"""The history's export runs in the background after a tick (docs/history.md), so its lines
may fall between a request's: they are not the request's, and no client value reaches them."""


def _new_lines(server: Server, before: int) -> list[str]:
    """The lines written since `before`, but the background export's."""
    return [line for line in server.log().splitlines()[before:] if BACKGROUND not in line]


def _check_one_clean_line(server: Server, before: int, label: str) -> str:
    """The request's lines: one refusal, and its access line if it was an HTTP request; each
    of them one line, whole, short, with nothing of the client's outside quotes."""
    lines = _new_lines(server, before)
    found = [LOG_LINE.fullmatch(line) for line in lines]
    assert all(found), (label, [line[:200] for line in lines])
    loggers = [match["logger"] for match in found if match]
    assert sorted(loggers) in (
        ["burstmarket.refused"],
        ["burstmarket.access", "burstmarket.refused"],
    ), (label, loggers)
    for line in lines:
        assert len(line) < LONGEST_LINE, (label, len(line))
        # outside its quoted values, a line holds nothing of the client's
        bare = QUOTED.sub('""', line)
        assert bare.count("REFUSED") == ("burstmarket.refused:" in bare), bare
        assert "victim" not in bare, bare
        assert "\\" not in bare, bare
    (refused,) = server.messages("burstmarket.refused")[-1:]
    assert refused.startswith("REFUSED reason="), (label, refused[:200])
    return refused


def test_client_values_never_forge_a_log_line_nor_flood_it(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    for label, method, path, headers, body in _requests(market, server.operator()):
        before = len(server.log().splitlines())
        status, content = _request(server, method, path, headers, body)
        assert 400 <= status < 500, (label, status)
        assert len(content) < 4000, (label, len(content))
        payload = json.loads(content)
        assert set(payload) >= {"error", "detail"}, (label, payload)
        _check_one_clean_line(server, before, label)
    # a URL over the HTTP parser's limit never reaches the service
    before = len(server.log().splitlines())
    status, _ = _request(server, "GET", f"/api/market/stats?island={quote(EVIL)}", {}, None)
    assert status == 400
    (line,) = _new_lines(server, before)
    assert line.endswith("WARNING uvicorn.error: Invalid HTTP request received.")
    # a websocket channel name and an island in a channel
    url = server.url.replace("http://", "ws://") + "/ws/market"
    with connect(url, max_size=None) as ws:
        for channel in (EVIL, f"stats:{EVIL}"):
            before = len(server.log().splitlines())
            ws.send(json.dumps({"op": "subscribe", "channels": [channel]}))
            answer = json.loads(ws.recv(timeout=30))
            assert answer["type"] == "error", answer
            assert len(json.dumps(answer)) < 4000
            _check_one_clean_line(server, before, channel[:20])
    lines = server.log().splitlines()
    assert not any(line.startswith("REFUSED") for line in lines)  # every line starts with a time
    assert not any(
        line.startswith("REFUSED reason=spend-limit cluster=victim")
        for line in server.refused_lines()
    )
    assert max(len(line) for line in lines) < LONGEST_LINE


def test_tenant_input_has_limits_named_in_the_refusal(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    vm, k8s, operator = market["vm"], market["k8s"], server.operator()
    cases = [
        ("/api/k8s/jobs", k8s, {"name": "a" * 64, "nodes": 1}, "name", 63),
        (
            "/api/k8s/jobs",
            k8s,
            {"name": "j", "nodes": 1, "priority_class": "p" * 254},
            "priority_class",
            253,
        ),
        ("/api/admin/accounts", operator, {"name": "a" * 64}, "name", 63),
    ]
    for path, headers, body, field, limit in cases:
        answer = server.client.post(path, json=body, headers=headers)
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == field
        assert answer.json()["limit"] == limit
    big = {"max_gpus": 0, "release": ["n"] * 10_001}
    answer = server.client.put("/api/vm/capacity", json=big, headers=vm)
    assert (answer.status_code, answer.json()["field"], answer.json()["limit"]) == (
        422,
        "release",
        10_000,
    )
    spec = {"gpus_per_node": 8, "nodes": 1, "reserve_price": 1, "node_spec": {"x": "y" * 5000}}
    answer = server.client.put("/api/admin/islands/spec", json=spec, headers=operator)
    assert (answer.status_code, answer.json()["field"], answer.json()["limit"]) == (
        422,
        "node_spec",
        4096,
    )
    # a priority class within the limit is kept as sent
    job = {"name": "fair", "nodes": 1, "priority_class": "p" * 253, "limit_price_per_gpu_hour": 2}
    created = ok(server.client.post("/api/k8s/jobs", json=job, headers=k8s), 201)
    assert created["priority_class"] == "p" * 253


DEEP = b"[" * 1000 + b"]" * 1000
"""Arrays nested 1,000 deep: past a decoder's stack, far past the 32 levels the service takes."""


def test_a_number_no_decimal_holds_or_a_body_nested_1000_deep_is_invalid_not_a_500(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    vm, operator = market["vm"], server.operator()
    island = b'"gpus_per_node": 8, "nodes": 1, "reserve_price": 1'
    cases = [
        (
            "a price",
            "PUT",
            "/api/vm/capacity",
            vm,
            b'{"max_gpus": 8, "max_price_per_gpu_hour": 1e99999999999999999999}',
            "max_price_per_gpu_hour",
        ),
        (
            "an amount",
            "POST",
            "/api/admin/accounts",
            operator,
            b'{"name": "huge", "balance_usd": -1e99999999999999999999}',
            "balance_usd",
        ),
        (
            "a node_spec",
            "PUT",
            "/api/admin/islands/deep",
            operator,
            b'{%s, "node_spec": %s}' % (island, DEEP),
            "body",
        ),
        ("a whole body", "PUT", "/api/vm/capacity", vm, DEEP, "body"),
        (
            "an unknown field",
            "PUT",
            "/api/vm/capacity",
            vm,
            b'{"max_gpus": 8, "x": %s}' % DEEP,
            "body",
        ),
        ("a list item", "PUT", "/api/vm/capacity", vm, b'{"release": [%s]}' % DEEP, "body"),
    ]
    for label, method, path, headers, raw, field in cases:
        before = len(server.log().splitlines())
        sent = {**headers, "Content-Type": "application/json"}
        answer = server.client.request(method, path, content=raw, headers=sent)
        assert answer.status_code == 422, (label, answer.text)
        assert (answer.json()["error"], answer.json()["field"]) == ("invalid", field), label
        refused = _check_one_clean_line(server, before, label)
        assert refused.startswith("REFUSED reason=invalid cluster="), refused
    # nothing of it was made
    assert server.client.get("/api/admin/accounts/huge", headers=operator).status_code == 404
    assert server.client.get("/api/admin/islands/deep/nodes", headers=operator).status_code == 404


def test_a_feed_message_nested_1000_deep_is_refused_and_the_connection_stays(
    shared_server: Server,
) -> None:
    server = shared_server
    url = server.url.replace("http://", "ws://") + "/ws/market"
    deep = DEEP.decode()
    with connect(url) as ws:
        for frame in (
            f'{{"op": "ping", "id": 1, "x": {deep}}}',
            f'{{"op": "subscribe", "channels": ["stats:hostile"], "id": {deep}}}',
            deep,
        ):
            before = len(server.log().splitlines())
            ws.send(frame)
            answer = json.loads(ws.recv(timeout=30))
            assert (answer["type"], answer["error"], answer["field"]) == (
                "error",
                "invalid",
                "frame",
            ), answer
            _check_one_clean_line(server, before, frame[:30])
        ws.send(json.dumps({"op": "ping", "id": 2}))
        assert json.loads(ws.recv(timeout=30))["id"] == 2


def test_a_text_frame_that_is_not_utf8_is_closed_1007_with_one_refused_line(
    shared_server: Server,
) -> None:
    server = shared_server
    url = server.url.replace("http://", "ws://") + "/ws/market"
    before = len(server.log().splitlines())
    with connect(url) as ws:
        ws.send(b"\xff\xfe{}", text=True)
        with pytest.raises(ConnectionClosedError) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1007
    lines = _new_lines(server, before)
    found = [LOG_LINE.fullmatch(line) for line in lines]
    assert all(found), lines  # no traceback
    assert not [m for m in found if m and m["level"] == "ERROR"], lines
    refused = [m["message"] for m in found if m and m["logger"] == "burstmarket.refused"]
    assert len(refused) == 1, lines
    assert refused[0].startswith("REFUSED reason=invalid cluster=- field=frame "), refused


def test_metrics_name_their_charset_once(shared_server: Server) -> None:
    for accept in ("", "application/openmetrics-text; version=1.0.0"):
        answer = shared_server.client.get("/metrics", headers={"Accept": accept})
        assert answer.status_code == 200
        assert answer.headers["content-type"].count("charset=") == 1, accept


def test_metrics_for_an_accept_header_it_cannot_read_are_the_text_format(
    shared_server: Server,
) -> None:
    server = shared_server
    plain = server.client.get("/metrics")
    assert plain.status_code == 200
    before = len(server.log().splitlines())
    for accept in (
        "application/openmetrics-text; version=abc",
        "application/openmetrics-text; version=1.0.0-rc1",
        "text/plain; version=1.x",
    ):
        answer = server.client.get("/metrics", headers={"Accept": accept})
        assert answer.status_code == 200, (accept, answer.text[:200])
        assert answer.headers["content-type"] == plain.headers["content-type"], accept
        names = {family.name for family in text_string_to_metric_families(answer.text)}
        assert "burstmarket_refusals" in names, accept
    assert not [line for line in _new_lines(server, before) if "ERROR" in line]
    # a version it can read is still answered in OpenMetrics
    asked = {"Accept": "application/openmetrics-text; version=1.0.0"}
    answer = server.client.get("/metrics", headers=asked)
    assert answer.headers["content-type"].startswith("application/openmetrics-text")


def test_options_lists_every_method_of_the_path(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    document = ok(server.client.get("/schema/openapi.json"))
    verbs = {"get", "put", "post", "delete", "patch"}
    for path, item in document["paths"].items():
        url = re.sub(r"\{[^}]+\}", "x", path)
        if path.startswith("/api/admin/"):
            headers = server.operator()
        else:
            headers = market["vm"] if path.startswith("/api/vm/") else market["k8s"]
        answer = server.client.options(url, headers=headers)
        assert answer.status_code == 204, (path, answer.text)
        methods = {verb.upper() for verb in item if verb in verbs} | {"OPTIONS"}
        assert set(answer.headers["allow"].split(", ")) == methods, path
        # the same as a 405 of the path says
        other = server.client.request("TRACE", url, headers=headers)
        assert other.status_code == 405, (path, other.text)
        assert set(other.headers["allow"].split(", ")) == methods, path


def test_a_token_over_its_rate_is_answered_429_with_retry_after(
    start_server: StartServer,
) -> None:
    server = start_server("--clock", "manual", "--rate-limit", "0.2", "--rate-burst", "3")
    make_island(server, "rl", nodes=1)
    make_account(server, "rl-acct")
    fast = make_cluster(server, "rl-acct", "rl", "vm", "rl-fast")
    calm = make_cluster(server, "rl-acct", "rl", "vm", "rl-calm")
    for _ in range(3):
        ok(server.client.get("/api/vm/capacity", headers=fast))
    refused = server.client.get("/api/vm/capacity", headers=fast)
    assert refused.status_code == 429
    body = refused.json()
    assert body["error"] == "rate-limited"
    assert int(refused.headers["retry-after"]) == body["retry_after_seconds"] >= 1
    assert [line for line in server.refused_lines() if "reason=rate-limited" in line] == [
        line for line in server.refused_lines() if "cluster=rl-fast" in line
    ]
    # another token, and the operator, are not held back by it
    ok(server.client.get("/api/vm/capacity", headers=calm))
    for _ in range(5):
        tick(server)


def test_the_store_is_created_private(server: Server) -> None:
    make_island(server, "private", nodes=1)
    make_account(server, "private-acct")
    auth = make_cluster(server, "private-acct", "private", "vm", "private-vm")
    ok(declare(server, auth, 8, 2))
    tick(server)
    wal = server.data_dir / "market.duckdb.wal"
    assert wal.exists()  # ticks have been written, not yet checkpointed
    for path in (server.data_dir / "market.duckdb", wal):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def _serve(data_dir: Path, *wrap: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BURSTMARKET_")}
    env["BURSTMARKET_OPERATOR_TOKEN"] = OPERATOR_TOKEN
    command = [
        str(BURSTMARKET),
        "serve",
        "--clock",
        "manual",
        "--data-dir",
        str(data_dir),
        "--port",
        str(free_port()),
    ]
    return subprocess.run(
        [*wrap, *command], capture_output=True, text=True, timeout=60, env=env, check=False
    )


def test_a_second_server_on_a_live_data_dir_exits_with_one_line(server: Server) -> None:
    second = _serve(server.data_dir)
    assert second.returncode != 0
    errors = second.stderr.strip().splitlines()
    assert len(errors) == 1, second.stderr
    assert str(server.data_dir.resolve()) in errors[0]
    assert f"process {server.process.pid}" in errors[0]
    assert "Traceback" not in second.stdout + second.stderr
    assert server.client.get("/api/islands").status_code == 200  # the first one runs on


def test_a_read_only_data_dir_exits_with_one_line(tmp_path: Path) -> None:
    data = tmp_path / "readonly"
    Database(data / "market.duckdb").close()  # it holds a store
    wrap: tuple[str, ...] = ()
    if os.geteuid() == 0:
        # root writes through any mode bits: mount the directory read-only for the server alone
        wrap = (
            "unshare",
            "--mount",
            "sh",
            "-c",
            'mount --bind -o ro "$0" "$0" && exec "$@"',
            str(data),
        )
    else:
        data.chmod(0o555)
    try:
        result = _serve(data, *wrap)
    finally:
        data.chmod(0o755)
    assert result.returncode != 0
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1, result.stderr
    assert str(data.resolve()) in errors[0]
    assert "read-only" in errors[0].lower() or "permission" in errors[0].lower(), errors[0]
    assert "Traceback" not in result.stdout + result.stderr


def test_a_store_whose_tables_drifted_exits_with_one_line(tmp_path: Path) -> None:
    data = tmp_path / "drifted"
    db = Database(data / "market.duckdb")
    with db.write() as cur:  # a column no migration made
        cur.execute("ALTER TABLE ticks ADD COLUMN extra INTEGER")
    db.close()
    result = _serve(data)
    assert result.returncode != 0
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1, result.stderr
    assert "ticks.extra is not defined" in errors[0]
    assert "Traceback" not in result.stdout + result.stderr
