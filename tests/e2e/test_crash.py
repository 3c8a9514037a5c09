"""kill -9 at any moment, restart on the same data dir: nothing committed is lost, no tick is
half-written, tick numbers continue, nothing is billed twice. Real clock, real subprocesses."""

from __future__ import annotations

import random
import time

import duckdb

from tests.conftest import StartServer
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok

TICK = "0.05"


def test_kill_9_mid_run_loses_no_committed_tick_and_bills_nothing_twice(
    start_server: StartServer,
) -> None:
    rng = random.Random(7)
    server = start_server("--clock", "real", "--tick-seconds", TICK)
    data_dir = server.data_dir
    make_island(server, "crash", nodes=3, reserve=1.0)
    make_account(server, "crash-acct", balance=10_000)
    a = make_cluster(server, "crash-acct", "crash", "vm", "crash-a")
    b = make_cluster(server, "crash-acct", "crash", "vm", "crash-b")
    ok(server.client.put("/api/spend-limit", json={"usd_per_day": 1000}, headers=b))
    ok(declare(server, a, 16, 4))
    ok(declare(server, b, 16, 3))
    for _ in range(3):
        time.sleep(0.4 + rng.random() * 0.6)
        server.kill()
        server = start_server("--clock", "real", "--tick-seconds", TICK, data_dir=data_dir)
        # tenants keep declaring while ticks run
        ok(declare(server, a, rng.choice([8, 16, 24]), 4))
    time.sleep(0.5)
    billed = ok(server.client.get("/api/billing", params={"granularity": "1d"}, headers=a))
    server.stop()

    con = duckdb.connect(str(data_dir / "market.duckdb"), read_only=True)
    try:
        for island, count, low, high in con.execute(
            "SELECT island, count(*), min(tick), max(tick) FROM ticks GROUP BY island"
        ).fetchall():
            assert (low, high) == (1, count), island  # consecutive, none lost, none twice
        ticks = con.execute("SELECT count(*) FROM ticks WHERE island = 'crash'").fetchone()
        assert ticks is not None
        assert ticks[0] > 10
        # every tick's rows are all there: rates for its clusters, allocations for its GPUs
        broken = con.execute(
            """
            SELECT t.tick FROM ticks t
            LEFT JOIN (SELECT tick, count(*) AS n, sum(gpus) AS g FROM cluster_rates
                       WHERE island = 'crash' GROUP BY tick) r ON r.tick = t.tick
            LEFT JOIN (SELECT tick, count(*) AS n FROM allocations
                       WHERE island = 'crash' GROUP BY tick) a ON a.tick = t.tick
            LEFT JOIN (SELECT tick, count(*) AS n FROM ladder
                       WHERE island = 'crash' GROUP BY tick) l ON l.tick = t.tick
            WHERE t.island = 'crash' AND (
                coalesce(r.n, 0) != t.clusters OR coalesce(r.g, 0) != t.gpus
                OR coalesce(a.n, 0) * 8 != t.gpus OR coalesce(l.n, 0) > 3)
            """
        ).fetchall()
        assert broken == []
        # one charge per cluster per tick for its interval, exactly the rate × GPUs × tick
        # length (a late tick also bills the held time since the last interval ended)
        charges = con.execute(
            """
            SELECT count(*), count(DISTINCT (l.tick, l.cluster)),
                   sum(CASE WHEN l.units = CAST(r.rate * 1000000 AS HUGEINT) * r.gpus * 50
                            THEN 0 ELSE 1 END)
            FROM ledger l JOIN cluster_rates r
              ON r.island = l.island AND r.tick = l.tick AND r.cluster = l.cluster
            WHERE l.kind = 'charge' AND l.island = 'crash'
              AND l.period_start = epoch_us(r.time) * 1000
            """
        ).fetchone()
        # held time is billed once: what a tick bills before its own interval starts where the
        # previous tick's interval ended (or later, after a restart: downtime is not billed)
        overlaps = con.execute(
            """
            SELECT count(*) FROM ledger l JOIN ticks t ON t.island = l.island AND t.tick = l.tick
            JOIN ticks p ON p.island = t.island AND p.tick = t.tick - 1
            WHERE l.kind = 'charge' AND l.island = 'crash' AND l.node IS NULL
              AND l.period_end = epoch_us(t.time) * 1000
              AND l.period_start < epoch_us(p.time) * 1000 + 50000000
            """
        ).fetchone()
        assert overlaps == (0,)
        rates = con.execute("SELECT count(*) FROM cluster_rates WHERE island = 'crash'").fetchone()
        orphans = con.execute(
            """
            SELECT count(*) FROM ledger l WHERE l.kind = 'charge' AND l.tick IS NOT NULL
              AND NOT EXISTS (
                SELECT 1 FROM ticks t WHERE t.island = l.island AND t.tick = l.tick)
            """
        ).fetchone()
        assert charges is not None
        assert rates is not None
        assert orphans is not None
        assert charges[0] == charges[1] == rates[0]
        assert charges[2] == 0
        assert orphans[0] == 0
        # every grant's worst case was committed in the grant's own tick, once; no commitment
        # outlives a lost tick
        missing = con.execute(
            """
            WITH held AS (SELECT tick, cluster, count(*) AS n FROM allocations
                          WHERE island = 'crash' GROUP BY tick, cluster),
            grew AS (SELECT h.tick, h.cluster FROM held h LEFT JOIN held p
                       ON p.cluster = h.cluster AND p.tick = h.tick - 1
                     WHERE h.n > coalesce(p.n, 0))
            SELECT count(*) FROM grew g WHERE NOT EXISTS (
                SELECT 1 FROM ledger l WHERE l.kind = 'commitment' AND l.island = 'crash'
                  AND l.cluster = g.cluster AND l.tick = g.tick)
            """
        ).fetchone()
        doubled = con.execute(
            """
            SELECT count(*) - count(DISTINCT (cluster, tick)),
                   count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM ticks t
                       WHERE t.island = ledger.island AND t.tick = ledger.tick))
            FROM ledger WHERE kind = 'commitment' AND island = 'crash'
            """
        ).fetchone()
        assert missing == (0,)
        assert doubled == (0, 0)
        held = con.execute(
            "SELECT count(*) FROM nodes WHERE island = 'crash' AND cluster IS NOT NULL"
        ).fetchone()
        assert held is not None
        assert held[0] <= 3
        ledger_total = con.execute(
            "SELECT sum(units) FROM ledger WHERE cluster = 'crash-a' "
            "AND kind IN ('charge', 'refund', 'hold')"
        ).fetchone()
    finally:
        con.close()
    assert ledger_total is not None
    assert sum(r["amount_units"] for r in billed) <= int(ledger_total[0])
