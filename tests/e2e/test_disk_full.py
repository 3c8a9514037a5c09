"""A disk that fills up under the real server, on a tmpfs of its own: a checkpoint that fails
for want of room neither stops the service nor loses or repeats a tick. Meanwhile writes are
refused `store-unavailable` (one REFUSED line each); once there is room again ticks go on, reads
answer and `/readyz` is 200, without a restart (docs/api.md "Errors")."""

from __future__ import annotations

from pathlib import Path

import duckdb
import httpx

from burstmarket.market.ledger import BALANCE
from burstmarket.money import units_to_usd
from tests.conftest import StartServer
from tests.e2e.support import (
    account,
    declare,
    eventually,
    make_account,
    make_cluster,
    make_island,
    ok,
    small_disk,
)

CHECKPOINT_MIB = 1
MAX_TICKS = 2000
"""Bounds every loop of ticks below."""


def test_a_checkpoint_on_a_full_disk_stops_nothing_and_no_tick_is_lost_or_repeated(
    tmp_path: Path, start_server: StartServer
) -> None:
    with small_disk(tmp_path / "disk", "48m") as disk:
        data = disk.path / "data"
        wal = data / "market.duckdb.wal"
        server = start_server(
            "--clock", "manual", "--checkpoint-mib", str(CHECKPOINT_MIB), data_dir=data
        )
        try:
            make_island(server, "full", nodes=16)
            make_account(server, "full-acct", balance=1_000_000)
            clusters = {
                name: make_cluster(server, "full-acct", "full", "vm", name)
                for name in ("vm-a", "vm-b", "vm-c")
            }
            for auth, gpus, price in zip(clusters.values(), (64, 48, 32), (3, 2, 4), strict=True):
                ok(declare(server, auth, gpus, price))
            answered: list[int] = []

            def tick() -> httpx.Response:
                answer = server.client.post(
                    "/api/admin/ticks", json={"count": 1}, headers=server.operator()
                )
                if answer.status_code == 200:
                    answered.append(answer.json()["islands"][0]["tick"])
                # refused partway (the process ticks its default island too): what committed
                elif "full" in (committed := answer.json().get("committed", {})):
                    answered.append(committed["full"])
                return answer

            # the log grows towards the first checkpoint, which will have to grow the file
            threshold = CHECKPOINT_MIB * 2**20
            while wal.stat().st_size < 0.9 * threshold:
                ok(tick())
                assert len(answered) < MAX_TICKS
            # room for the log to pass the threshold, not for the file to take it in
            disk.fill(leave=threshold - wal.stat().st_size + 150_000)

            refused: list[httpx.Response] = []

            def answered_or_refused(answer: httpx.Response) -> bool:
                """Whether it answered; a refusal must be `store-unavailable`."""
                if answer.status_code != 200:
                    assert answer.status_code == 503, answer.text
                    assert answer.json()["error"] == "store-unavailable", answer.text
                    refused.append(answer)
                return answer.status_code == 200

            seen = len(server.refused_lines())
            while len(refused) < 3:  # the checkpoint fails; then the log cannot grow either
                answered_or_refused(tick())
                assert len(answered) < MAX_TICKS
            assert "store: checkpoint failed" in server.log()
            # reads need no room: once the store is reopened they answer, the disk still full
            billing = {"granularity": "1d"}
            read = lambda: server.client.get(  # noqa: E731
                "/api/billing", params=billing, headers=clusters["vm-a"]
            )
            eventually(lambda: answered_or_refused(read()), "a read answered", server)

            disk.empty()
            eventually(lambda: answered_or_refused(tick()), "a tick committed", server)
            for _ in range(3):
                ok(tick())
            ok(read())
            lines = server.refused_lines()[seen:]
            assert len(lines) == len(refused), lines  # one line per refusal, and no other
            assert all(line.startswith("REFUSED reason=store-unavailable") for line in lines)
            assert "Traceback" not in server.log()
            stats = ok(server.client.get("/api/market/stats", params={"island": "full"}))
            assert stats["tick"] == answered[-1]
            ready = server.client.get("/readyz")
            assert ready.status_code == 200, ready.text
            balance = account(server, "full-acct")["balance_usd"]
        finally:
            server.stop()

        con = duckdb.connect(str(data / "market.duckdb"), read_only=True)
        try:
            numbers = [
                n
                for (n,) in con.execute(
                    "SELECT tick FROM ticks WHERE island = 'full' ORDER BY tick"
                ).fetchall()
            ]
            charged = con.execute(
                "SELECT tick, cluster, count(*), sum(units) FROM ledger WHERE kind = 'charge' "
                "GROUP BY tick, cluster"
            ).fetchall()
            rates = con.execute(
                "SELECT tick, cluster, amount_usd FROM cluster_rates WHERE amount_usd > 0"
            ).fetchall()
            units = con.execute(
                "SELECT -sum(units) FROM ledger WHERE list_contains($kinds, kind)",
                {"kinds": list(BALANCE)},
            ).fetchone()
        finally:
            con.close()
    # every tick answered committed once, none refused did; each billed once, what it published
    assert numbers == answered == list(range(1, len(answered) + 1))
    assert charged
    assert {count for *_, count, _ in charged} == {1}
    assert {(t, c, units_to_usd(int(u))) for t, c, _, u in charged} == set(rates)
    assert units is not None
    assert balance == float(units_to_usd(int(units[0])))
