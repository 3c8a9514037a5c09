"""Fuzzing the real server over its own OpenAPI document (schemathesis's Hypothesis strategies,
valid and invalid input for every operation, a fixed seed): never a 5xx; every 4xx has the
`{error, detail}` body and exactly one `REFUSED reason=<error>` log line; a success none."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from tests.conftest import Server
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok, tick

CASES = 300
MAX_NODES = 16
"""Islands the fuzz makes stay small, and its manual ticks few: it explores, it is no load test."""
MAX_TICKS = 2
TOKENS = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.text(
        st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
        min_size=1,
        max_size=40,
    ),
)
"""Mostly the right token for the path; sometimes any Latin-1 text (a header is bytes)."""


@pytest.fixture(scope="module")
def tokens(shared_server: Server) -> dict[str, dict[str, str]]:
    server = shared_server
    make_island(server, "fz", nodes=4)
    make_account(server, "fz-acct", balance=10_000)
    vm = make_cluster(server, "fz-acct", "fz", "vm", "fz-vm")
    k8s = make_cluster(server, "fz-acct", "fz", "k8s", "fz-k8s")
    ok(declare(server, vm, 8, 2))
    ok(
        server.client.post(
            "/api/k8s/jobs",
            json={"name": "fz-job", "nodes": 1, "limit_price_per_gpu_hour": 2},
            headers=k8s,
        ),
        201,
    )
    tick(server, 2)
    return {"vm": vm, "k8s": k8s, "operator": server.operator()}


def _auth(path: str, tokens: dict[str, dict[str, str]]) -> dict[str, str]:
    if path.startswith("/api/admin/"):
        return tokens["operator"]
    if path.startswith("/api/k8s/"):
        return tokens["k8s"]
    return tokens["vm"]


def _kept_small(case: Any) -> None:
    body = case.body
    if not isinstance(body, dict):
        return
    if case.path == "/api/admin/ticks" and isinstance(body.get("count"), int):
        body["count"] = max(-1, min(body["count"], MAX_TICKS))
    if case.path.startswith("/api/admin/islands/") and isinstance(body.get("nodes"), int):
        body["nodes"] = min(body["nodes"], MAX_NODES)


def test_fuzzing_every_operation_finds_no_5xx_and_one_refused_line_per_4xx(
    shared_server: Server, tokens: dict[str, dict[str, str]]
) -> None:
    server = shared_server
    schema = schemathesis.openapi.from_dict(ok(server.client.get("/schema/openapi.json")))
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 25
    strategy = st.one_of(
        *(
            operation.as_strategy(mode)
            for operation in operations
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        )
    )
    seen: dict[int, int] = {}
    session = requests.Session()

    @settings(
        max_examples=CASES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy, token=TOKENS)
    def check(case: Any, token: str | None) -> None:
        _kept_small(case)
        auth: dict[str, Any] = _auth(case.path, tokens)
        if token is not None:
            auth = {"Authorization": f"Bearer {token}".encode("latin-1")}
        before = len(server.refused_lines())
        response = case.call(base_url=server.url, session=session, headers=auth, timeout=60)
        status = response.status_code
        seen[status] = seen.get(status, 0) + 1
        where = f"{case.method} {case.formatted_path} -> {status}: {response.text[:300]}"
        assert status < 500, where
        new = server.refused_lines()[before:]
        if status < 400:
            assert new == [], where
            return
        body = response.json()
        assert isinstance(body.get("error"), str), where
        assert isinstance(body.get("detail"), str), where
        assert body["detail"], where
        assert len(new) == 1, (where, new)
        assert new[0].startswith(f"REFUSED reason={body['error']} "), (where, new)
        if status == 405:
            assert response.headers.get("allow"), where

    check()
    print(f"\nfuzz: {sum(seen.values())} requests, by status {dict(sorted(seen.items()))}")
    assert sum(seen.values()) >= CASES
    assert "Traceback" not in server.log()
