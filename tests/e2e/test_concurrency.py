"""Many tenants declaring at once while ticks run, through the real server: every answered
declaration is durable (kill -9 right after the last answer loses none), the market never
grants a cluster more than it declares, and every tick is whole."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import duckdb
import httpx

from tests.conftest import StartServer
from tests.e2e.support import make_account, make_cluster, make_island, ok

CLUSTERS = 12
DECLARES = 15
TICKS = 30


def test_concurrent_declares_racing_ticks_are_durable_and_consistent(
    start_server: StartServer,
) -> None:
    server = start_server("--clock", "manual", "--tick-seconds", "60")
    make_island(server, "race", nodes=6, reserve=1.0)
    make_account(server, "race-acct", balance=1_000_000)
    auths = [
        make_cluster(server, "race-acct", "race", "vm", f"race-{i:02d}") for i in range(CLUSTERS)
    ]
    acked: dict[str, tuple[int, float]] = {}
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()

    def tenant(i: int) -> None:
        rng = random.Random(i)
        with httpx.Client(base_url=server.url, timeout=60, headers=auths[i]) as client:
            for _ in range(DECLARES):
                gpus = 8 * rng.randrange(4)
                price = rng.randrange(10, 60) / 10
                body = {"max_gpus": gpus, "max_price_per_gpu_hour": price}
                answer = ok(client.put("/api/vm/capacity", json=body))
                with lock:
                    acked[answer["cluster"]] = (gpus, price)
                    answers.append(answer)

    def ticker() -> None:
        with httpx.Client(base_url=server.url, timeout=300, headers=server.operator()) as client:
            for _ in range(TICKS):
                ok(client.post("/api/admin/ticks", json={"count": 1, "island": "race"}))

    with ThreadPoolExecutor(CLUSTERS + 1) as pool:
        done = [pool.submit(tenant, i) for i in range(CLUSTERS)] + [pool.submit(ticker)]
        for future in done:
            future.result()
    server.kill()  # right after the last answer

    assert len(answers) == CLUSTERS * DECLARES
    for answer in answers:
        assert answer["held_gpus"] <= answer["max_gpus"]
        assert len(answer["nodes"]) * 8 == answer["held_gpus"]

    again = start_server("--clock", "manual", "--tick-seconds", "60", data_dir=server.data_dir)
    for i, auth in enumerate(auths):
        capacity = ok(again.client.get("/api/vm/capacity", headers=auth))
        assert (capacity["max_gpus"], capacity["max_price_per_gpu_hour"]) == acked[f"race-{i:02d}"]
        assert capacity["held_gpus"] <= capacity["max_gpus"]
    again.stop()

    con = duckdb.connect(str(server.data_dir / "market.duckdb"), read_only=True)
    try:
        assert con.execute(
            "SELECT count(*), min(tick), max(tick) FROM ticks WHERE island = 'race'"
        ).fetchone() == (TICKS, 1, TICKS)
        # every tick whole: a rate row per market cluster, an allocation per held node
        broken = con.execute(
            """
            SELECT t.tick FROM ticks t
            LEFT JOIN (SELECT tick, count(*) AS n, sum(gpus) AS g FROM cluster_rates
                       WHERE island = 'race' GROUP BY tick) r ON r.tick = t.tick
            LEFT JOIN (SELECT tick, count(*) AS n, count(DISTINCT node) AS d FROM allocations
                       WHERE island = 'race' GROUP BY tick) a ON a.tick = t.tick
            WHERE t.island = 'race' AND (coalesce(r.n, 0) != t.clusters
                OR coalesce(r.g, 0) != t.gpus OR coalesce(a.n, 0) * 8 != t.gpus
                OR coalesce(a.n, 0) != coalesce(a.d, 0))
            """
        ).fetchall()
        assert broken == []
        # one charge per cluster per tick
        charges = con.execute(
            "SELECT count(*), count(DISTINCT (tick, cluster)) FROM ledger "
            "WHERE kind = 'charge' AND island = 'race'"
        ).fetchone()
        assert charges is not None
        assert charges[0] == charges[1]
        # nobody holds more than it declares
        over = con.execute(
            """
            SELECT c.id FROM clusters c JOIN nodes n ON n.cluster = c.id
            WHERE c.island = 'race' GROUP BY c.id, c.max_gpus HAVING count(*) * 8 > c.max_gpus
            """
        ).fetchall()
        assert over == []
    finally:
        con.close()
