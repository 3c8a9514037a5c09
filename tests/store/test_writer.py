"""The group-commit writer: many jobs to a transaction, each answered only once committed; a
refusal is one job's answer, a failing job fails alone."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest

from burstmarket.errors import Conflict
from burstmarket.store import Batch, Database


def _insert(name: str) -> Callable[[Batch], str]:
    def job(batch: Batch) -> str:
        batch.cur.execute("INSERT INTO accounts VALUES ($n, 0)", {"n": name})
        return name

    return job


def test_concurrent_jobs_are_all_committed_before_they_are_answered(tmp_path: Path) -> None:
    path = tmp_path / "market.duckdb"
    db = Database(path)
    seen_when_answered: dict[str, int] = {}

    def check_committed(name: str, future: Future[str]) -> None:
        # runs as the future resolves: the row must already be visible to another reader
        cur = db.cursor()
        row = cur.execute("SELECT count(*) FROM accounts WHERE name = $n", {"n": name}).fetchone()
        cur.close()
        seen_when_answered[name] = row[0] if row else 0

    names = [f"a{i:03d}" for i in range(300)]

    def submit(name: str) -> Future[str]:
        future = db.submit(_insert(name))
        future.add_done_callback(lambda f, n=name: check_committed(n, f))
        return future

    with ThreadPoolExecutor(16) as pool:
        futures = list(pool.map(submit, names))
    assert sorted(f.result(timeout=60) for f in futures) == names
    # the writer answers a batch's jobs before it takes the next batch: once a later job is
    # answered, every callback above has run
    db.submit(lambda batch: None).result(timeout=60)
    assert seen_when_answered == dict.fromkeys(names, 1)
    db.close()
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT count(*) FROM accounts").fetchone() == (300,)
    con.close()


def test_a_refusal_and_a_failing_job_leave_the_others_committed(tmp_path: Path) -> None:
    db = Database(tmp_path / "market.duckdb")
    after_commit: list[str] = []

    def refuse(batch: Batch) -> None:
        raise Conflict("no")

    def half_then_fail(batch: Batch) -> None:
        batch.cur.execute("INSERT INTO accounts VALUES ('half', 0)")
        batch.cur.execute("INSERT INTO accounts VALUES ('half', 0)")  # primary key: fails

    def with_hooks(batch: Batch) -> str:
        batch.cur.execute("INSERT INTO accounts VALUES ('hooked', 0)")
        batch.after_commit(lambda: after_commit.append("hooked"))
        return "hooked"

    # queue them together so that they share a batch (the writer takes what is waiting)
    futures: list[Future[str] | Future[None]] = [
        db.submit(_insert("first")),
        db.submit(refuse),
        db.submit(half_then_fail),
        db.submit(with_hooks),
        db.submit(_insert("last")),
    ]
    assert futures[0].result(timeout=30) == "first"
    with pytest.raises(Conflict):
        futures[1].result(timeout=30)
    with pytest.raises(duckdb.ConstraintException):
        futures[2].result(timeout=30)
    assert futures[3].result(timeout=30) == "hooked"
    assert futures[4].result(timeout=30) == "last"
    assert after_commit == ["hooked"]
    names = db.cursor().execute("SELECT name FROM accounts ORDER BY name").fetchall()
    assert names == [("first",), ("hooked",), ("last",)]
    db.close()


def test_a_failing_after_commit_hook_fails_its_batch_and_the_writer_lives_on(
    tmp_path: Path,
) -> None:
    db = Database(tmp_path / "market.duckdb")
    forgotten: list[str] = []

    def failing_hook(batch: Batch) -> str:
        batch.cur.execute("INSERT INTO accounts VALUES ('hooked', 0)")

        def fail() -> None:
            raise RuntimeError("bookkeeping failed")

        batch.after_commit(fail)
        batch.on_rollback(lambda: forgotten.append("hooked"))
        return "hooked"

    with pytest.raises(RuntimeError, match="bookkeeping failed"):
        db.submit(failing_hook).result(timeout=60)
    assert forgotten == ["hooked"]  # what memory kept of the batch is forgotten
    # the writer still answers, batch after batch
    assert db.submit(_insert("next")).result(timeout=60) == "next"
    assert db.submit(_insert("after")).result(timeout=60) == "after"
    names = db.cursor().execute("SELECT name FROM accounts ORDER BY name").fetchall()
    assert names == [("after",), ("hooked",), ("next",)]  # the failed hook's batch committed
    db.close()
