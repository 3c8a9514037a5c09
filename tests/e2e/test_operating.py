"""Operating the real server: health and readiness, the version, the metrics a scrape reads
after real ticks, the access line and both log formats, HTTP manners (401, ETag, CORS)."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import threading
import time
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from burstmarket.store.database import MIGRATIONS
from tests.conftest import BURSTMARKET, OPERATOR_TOKEN, Server, StartServer, free_port, records
from tests.e2e.support import (
    Scrape,
    bearer,
    declare,
    eventually,
    make_account,
    make_cluster,
    make_island,
    ok,
    tick,
)


def test_health_readiness_version_and_banner_on_the_manual_clock(server: Server) -> None:
    assert ok(server.client.get("/healthz")) == {"status": "ok"}
    ready = ok(server.client.get("/readyz"))
    assert (ready["ready"], ready["failing"]) == (True, [])
    schema = len(MIGRATIONS)
    assert ready["checks"]["store"] == {"ok": True, "detail": f"open, schema version {schema}"}
    assert ready["checks"]["ticks"]["ok"]
    assert "manual clock" in ready["checks"]["ticks"]["detail"]

    installed = version("burstmarket")
    assert ok(server.client.get("/version")) == {"version": installed, "schema_version": schema}
    cli = subprocess.run(
        [str(BURSTMARKET), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (cli.returncode, cli.stdout, cli.stderr) == (0, f"burstmarket {installed}\n", "")

    # the banner tells the clock as it is
    dashboard, console, pace, engine = server.messages("burstmarket.serve")
    assert dashboard.startswith(f"burstmarket {installed}: dashboard {server.url}/")
    assert console.startswith(f"console {server.url}/console")
    assert pace.startswith("market time on the manual clock: it moves only with POST")
    assert "real time" not in pace
    # then the engine, compiled before the first tick
    assert engine.startswith("auction engine compiled before the first tick in ")


def test_the_banner_comes_first_and_the_store_migrates_in_one_line_after(server: Server) -> None:
    lines = records(server.log())
    assert [name for name, _ in lines[:3]] == ["burstmarket.serve"] * 3, lines[:5]
    assert lines[0][1].startswith("burstmarket ")
    migrated = [message for _, message in lines if message.startswith("store: migrated")]
    assert len(migrated) == 1, lines
    assert migrated[0].endswith(f"from schema 0 to {len(MIGRATIONS)}")


@pytest.fixture(scope="module")
def market(shared_server: Server) -> dict[str, Any]:
    """Island `op` with a VM cluster `op-vm`, ticked once."""
    server = shared_server
    make_island(server, "op", nodes=2)
    make_account(server, "op-acct")
    vm = make_cluster(server, "op-acct", "op", "vm", "op-vm")
    tick(server, island="op")
    return {"vm": vm}


def test_a_401_names_the_bearer_scheme_and_a_403_does_not(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    for path, headers in [
        ("/api/vm/capacity", {}),
        ("/api/vm/capacity", bearer("not-a-token")),
        ("/api/admin/accounts/op-acct", {}),
    ]:
        answer = server.client.get(path, headers=headers)
        assert answer.status_code == 401, (path, answer.text)
        assert answer.headers["www-authenticate"] == 'Bearer realm="burstmarket"'
    forbidden = server.client.get("/api/admin/accounts/op-acct", headers=market["vm"])
    assert forbidden.status_code == 403
    assert "www-authenticate" not in forbidden.headers


def test_every_request_has_an_access_line_with_its_cluster_and_never_a_token(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    ok(server.client.get("/api/vm/capacity", headers=market["vm"]))
    assert server.client.get("/api/no-such-route").status_code == 404
    lines = server.messages("burstmarket.access")
    pattern = r"method=GET path={} status={} duration_ms=\d+(\.\d+)? cluster={}"
    assert any(re.fullmatch(pattern.format("/api/vm/capacity", 200, "op-vm"), m) for m in lines)
    assert any(re.fullmatch(pattern.format("/api/no-such-route", 404, "-"), m) for m in lines)
    token = market["vm"]["Authorization"].removeprefix("Bearer ")
    assert token not in server.log()
    assert server.token not in server.log()


def test_a_scrape_after_real_ticks_moves_as_they_did(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server, vm = shared_server, market["vm"]
    before = Scrape(server.client)
    ok(declare(server, vm, 8, 2.0))
    ok(declare(server, vm, 16, 2.5))
    assert declare(server, vm, 4, 2.0).status_code == 422  # off-grid
    tick(server, count=3)
    with connect(server.url.replace("http://", "ws://") + "/ws/market") as ws:
        ws.send(json.dumps({"op": "subscribe", "channels": ["stats:op"]}))
        assert json.loads(ws.recv(timeout=30))["type"] == "subscribed"
        assert Scrape(server.client).value("burstmarket_feed_subscribers") == 1
    eventually(
        lambda: Scrape(server.client).value("burstmarket_feed_subscribers") == 0,
        "the subscriber gauge back at 0",
    )
    after = Scrape(server.client)

    def moved(name: str, **labels: str) -> float:
        return after.value(name, **labels) - before.value(name, **labels)

    assert after.value("burstmarket_tick", island="op") == 4  # one before, three now
    assert moved("burstmarket_tick_duration_seconds_count", island="op") == 3
    parts = ("read", "clear", "commit")
    for part in parts:
        assert moved("burstmarket_tick_part_duration_seconds_count", island="op", part=part) == 3
        assert moved("burstmarket_tick_part_duration_seconds_sum", island="op", part=part) > 0
    total = moved("burstmarket_tick_duration_seconds_sum", island="op")
    assert total == pytest.approx(
        sum(
            moved("burstmarket_tick_part_duration_seconds_sum", island="op", part=part)
            for part in parts
        )
    )
    assert moved("burstmarket_declares_total") == 2
    assert moved("burstmarket_refusals_total", code="off-grid") == 1
    requests = "burstmarket_http_requests_total"
    assert moved(requests, method="PUT", route="/api/vm/capacity", status="200") == 2
    assert moved(requests, method="PUT", route="/api/vm/capacity", status="422") == 1
    assert moved("burstmarket_store_writer_commit_seconds_count") >= 2  # one per answered declare
    assert after.value("burstmarket_store_writer_queue_depth") == 0
    assert after.value("burstmarket_ticks_late_total") == 0  # the manual clock is never late
    # five minutes of market time have closed: the history exporter writes and compacts
    eventually(
        lambda: (
            (scrape := Scrape(server.client)).value(
                "burstmarket_history_files_written_total", table="ticks"
            )
            > before.value("burstmarket_history_files_written_total", table="ticks")
            and scrape.value("burstmarket_history_compaction_seconds_count")
            > before.value("burstmarket_history_compaction_seconds_count")
        ),
        "history files written and compacted",
    )


def test_latest_rows_revalidate_by_etag_and_a_tick_changes_it(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    for path, params in [
        ("/api/market/stats", {"island": "op"}),
        ("/api/market/ladder", {"island": "op"}),
        ("/api/market/ladder", {"island": "op", "max_nodes": "1"}),
        ("/api/market/rates", {"island": "op"}),
    ]:
        first = server.client.get(path, params=params)
        assert first.status_code == 200
        etag = first.headers["etag"]
        assert first.headers["cache-control"] == "public, no-cache"
        for sent in (etag, f"W/{etag}", f'"other", {etag}'):
            again = server.client.get(path, params=params, headers={"If-None-Match": sent})
            assert again.status_code == 304, (path, sent)
            assert again.content == b""
            assert (again.headers["etag"], again.headers["cache-control"]) == (
                etag,
                "public, no-cache",
            )
        tick(server)
        moved = server.client.get(path, params=params, headers={"If-None-Match": etag})
        assert moved.status_code == 200
        assert moved.json()["tick"] == first.json()["tick"] + 1
        assert moved.headers["etag"] != etag
    whole = server.client.get("/api/market/ladder", params={"island": "op"})
    cut = server.client.get("/api/market/ladder", params={"island": "op", "max_nodes": "1"})
    assert whole.headers["etag"] != cut.headers["etag"]  # each representation its own tag


ELSEWHERE = "https://charts.example"


def test_public_market_data_is_open_to_other_origins_and_nothing_else(
    shared_server: Server, market: dict[str, Any]
) -> None:
    server = shared_server
    origin = {"Origin": ELSEWHERE}
    answer = server.client.get("/api/market/stats", params={"island": "op"}, headers=origin)
    assert answer.headers["access-control-allow-origin"] == "*"
    assert answer.headers["access-control-expose-headers"] == "ETag"
    preflight = {**origin, "Access-Control-Request-Method": "GET"}
    revalidate = server.client.options(
        "/api/market/stats",
        headers={**preflight, "Access-Control-Request-Headers": "if-none-match"},
    )
    assert revalidate.status_code == 204
    assert revalidate.headers["access-control-allow-origin"] == "*"
    # a page elsewhere cannot send a token, nor write
    for path, headers in [
        ("/api/vm/capacity", {"Access-Control-Request-Headers": "authorization"}),
        ("/api/admin/ticks", {"Access-Control-Request-Method": "POST"}),
    ]:
        refused = server.client.options(path, headers={**preflight, **headers})
        assert "access-control-allow-origin" not in refused.headers, path


def test_cors_takes_the_origins_configured(start_server: StartServer) -> None:
    server = start_server("--clock", "manual", "--cors-origins", f"{ELSEWHERE},https://b.example")
    for origin in (ELSEWHERE, "https://b.example"):
        answer = server.client.get("/api/islands", headers={"Origin": origin})
        assert answer.headers["access-control-allow-origin"] == origin
    other = server.client.get("/api/islands", headers={"Origin": "https://other.example"})
    assert "access-control-allow-origin" not in other.headers


def test_json_logs_parse_line_by_line(start_server: StartServer) -> None:
    server = start_server("--clock", "manual", "--log-format", "json")
    make_island(server, "js", nodes=1)
    make_account(server, "js-acct")
    vm = make_cluster(server, "js-acct", "js", "vm", "js-vm")
    ok(declare(server, vm, 8, 2.0))
    assert server.client.get("/api/vm/capacity").status_code == 401
    assert server.client.get("/api/market/stats", params={"island": "x\ny"}).status_code == 404
    tick(server)
    with connect(server.url.replace("http://", "ws://") + "/ws/market") as ws:
        ws.send("not json")
        assert json.loads(ws.recv(timeout=30))["type"] == "error"
    server.stop()  # the shutdown's lines too

    lines = server.log().splitlines()
    records = [json.loads(line) for line in lines]  # every line, start to shutdown
    for record in records:
        assert {"time", "level", "logger", "message"} <= set(record), record
        assert record["time"].endswith("Z")
        datetime.fromisoformat(record["time"])
    loggers = {record["logger"] for record in records}
    assert {
        "burstmarket.serve",
        "burstmarket.access",
        "burstmarket.refused",
        "uvicorn.error",
    } <= loggers
    refused = [r["message"] for r in records if r["logger"] == "burstmarket.refused"]
    assert len(refused) == 3  # the 401, the 404 and the feed's invalid frame
    assert all(message.startswith("REFUSED reason=") for message in refused)
    access = [r for r in records if r["logger"] == "burstmarket.access"]
    declared = next(r for r in access if r["path"] == "/api/vm/capacity" and r["method"] == "PUT")
    assert (declared["path"], declared["status"], declared["cluster"]) == (
        "/api/vm/capacity",
        200,
        "js-vm",
    )
    assert declared["duration_ms"] > 0
    assert declared["message"].startswith("method=PUT path=/api/vm/capacity status=200 ")
    assert any(r["path"] == "/ws/market" and r["status"] == 101 for r in access)
    assert vm["Authorization"].removeprefix("Bearer ") not in server.log()


class PipedServer:
    """`burstmarket serve` on the real clock, its log read from a pipe: a file limit put on the
    process to fail its store's writes must not fail its log's."""

    def __init__(self, tmp_path: Path, *flags: str) -> None:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("BURSTMARKET_")}
        env["BURSTMARKET_OPERATOR_TOKEN"] = OPERATOR_TOKEN
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [
                str(BURSTMARKET),
                "serve",
                "--data-dir",
                str(tmp_path / "data"),
                "--port",
                str(port),
                *flags,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def readiness(self, status: int) -> dict[str, Any] | None:
        """`/readyz`'s body if it answers with `status`."""
        try:
            answer = self.client.get("/readyz")
        except httpx.TransportError:  # not listening yet
            return None
        return answer.json() if answer.status_code == status else None

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # in case a failed test left it stopped
            self.process.terminate()
            self.process.wait(30)
        self._reader.join(30)
        assert self.process.stdout is not None
        self.process.stdout.close()


def test_a_stalled_tick_makes_readyz_fail_until_ticks_commit_again(tmp_path: Path) -> None:
    server = PipedServer(tmp_path, "--clock", "real", "--tick-seconds", "0.25")
    pid = server.process.pid
    try:
        eventually(lambda: server.readiness(200), "the service ready")
        eventually(
            lambda: Scrape(server.client).value("burstmarket_tick", island="ref") >= 2,
            "ticks on the real clock",
        )
        assert "market time real time, a tick every 0.25 s; simulated tenants off" in "\n".join(
            server.lines
        )

        # held up for a second (four intervals), the tick loop runs late once, and counts it
        os.kill(pid, signal.SIGSTOP)
        time.sleep(1.0)
        os.kill(pid, signal.SIGCONT)
        eventually(
            lambda: Scrape(server.client).value("burstmarket_ticks_late_total") >= 1,
            "a late tick counted",
        )

        # the store can no longer write (a file size limit of 0 fails every write as a full
        # disk does): ticks stop committing, and three intervals later the service is not ready
        limits = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, limits[1]))
        body = eventually(lambda: server.readiness(503), "readyz failing")
        assert (body["ready"], body["failing"]) == (False, ["ticks"])
        assert body["checks"]["store"]["ok"]  # it still answers: reads need no write
        ticks = body["checks"]["ticks"]
        assert ticks["detail"].startswith("island ref last ticked ")
        assert ticks["detail"].endswith("(limit 0.75 s: 3 intervals of 0.25 s)")
        assert ticks["overdue_seconds"]["ref"] > 0.75
        # a write meets the same fault: 503 store-unavailable, not a bug
        account = server.client.post(
            "/api/admin/accounts", json={"name": "stalled"}, headers=bearer(OPERATOR_TOKEN)
        )
        assert (account.status_code, account.json()["error"]) == (503, "store-unavailable")

        resource.prlimit(pid, resource.RLIMIT_FSIZE, limits)
        eventually(lambda: server.readiness(200), "the service ready again")
    finally:
        server.stop()
    log = "\n".join(line for line in server.lines if "burstmarket.access" not in line)
    assert "tick of island ref not committed: the store cannot write now" in log
    assert "Traceback" not in log, log
