"""`burstmarket verify`: every recorded tick re-run from the Parquet history alone, compared with
what the history says it did (docs/history.md "The record").

For each tick with a record in `bids`, the engine's own code runs on it: the auction it cleared
(auction/ `clear`), the nodes stepping down at their locks (tick/clearing.py `with_step_downs`,
a lock the tick set after the auction recomputed by tick/block_terms.py `clearing_lock`), the
receipts (market/receipts.py) and the published ladder on the next tick's auction and its
releases (market/ladder.py). Compared, to the µUSD, with `ticks` (the statistics, the reserve),
`cluster_rates` (each cluster's GPUs and rate, and its amount: the interval's charge plus what
the ledger shows the tick billed before it), `allocations` (the market nodes each cluster held),
`receipts`, `ladder` and `islands` (the terms the auction priced); then the ledger against
billing recomputed from the rates (record/ledger_check.py). Each disagreement is a
`Difference` naming the island, the tick and the table.

Not re-derived from the record: the tick's pending GPUs (`ticks.pending_gpus`: what demand waits
for is the tick's, not the auction's), which unit won which node (the record names winners only
by the node counts `allocations` holds), and the clusters' own ladders (private to each cluster,
in no table).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from burstmarket.auction import Clearing, clear
from burstmarket.clock import NS_PER_MS, to_datetime
from burstmarket.history.layout import parts
from burstmarket.history.views import history_views
from burstmarket.market.auction_record import NEXT, NOW, read_auctions
from burstmarket.market.ladder import LadderRung, published_ladder
from burstmarket.market.receipts import Receipt, receipts
from burstmarket.market.tick.block_terms import clearing_lock
from burstmarket.market.tick.clearing import with_step_downs
from burstmarket.market.tick.types import AuctionRecord
from burstmarket.money import micros_to_decimal, units_to_usd
from burstmarket.record.difference import Difference
from burstmarket.record.ledger_check import check_ledger
from burstmarket.store import scratch
from burstmarket.store.rows import Cursor, fetch_tuples

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Verified:
    """What a run of verify found."""

    ticks: int
    """Recorded ticks re-run."""
    islands: int
    differences: list[Difference]

    def summary(self) -> str:
        return (
            f"verified {self.ticks} ticks on {self.islands} islands: "
            f"{len(self.differences)} differences"
        )


def recorded_islands(root: Path) -> list[str]:
    """The islands the history under `root` holds ticks of."""
    folder = root / "ticks"
    found = (p.name.removeprefix("island=") for p in folder.glob("island=*") if p.is_dir())
    return sorted(island for island in found if parts(root, "ticks", island))


CHUNK_TICKS = 720
"""Ticks of one island a worker re-runs at a time (two hours of 10-second ticks): islands and
ticks are independent of each other, so a long history spreads over every core."""


@dataclass(frozen=True, slots=True)
class _Span:
    """Consecutive recorded ticks of one island: those in [start, end) (None: open)."""

    island: str
    start: datetime | None
    end: datetime | None
    ticks: int
    first_recorded: int | None
    """The island's first tick with bids: ticks before it come from before the record was
    kept, with nothing to re-run (None: it has none)."""


def verify(
    root: Path,
    island: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> Verified:
    """Re-run every recorded tick of `island` (None: every island) in [start, end) (None:
    open) from the history under `root`; `progress(done, total)` as ticks are done."""
    with _views(root) as cur:
        spans = _spans(cur, island, start, end)
    total = sum(span.ticks for span in spans)
    progress(0, total)
    checked, done, differences = 0, 0, []
    jobs = [partial(_check_span, root, span) for span in spans]
    ledger = partial(_check_ledger, root, island, start, end)
    if total <= 2 * CHUNK_TICKS:  # not worth the workers' start (seconds: numba's kernels)
        results = ((span, job()) for span, job in zip(spans, jobs, strict=True))
        differences += ledger()
        for span, (count, found) in results:
            checked, done = checked + count, done + span.ticks
            differences += found
            progress(done, total)
    else:
        workers = min(os.cpu_count() or 1, len(jobs) + 1)
        spawn = multiprocessing.get_context("spawn")  # nothing of this process's DuckDB copied
        with ProcessPoolExecutor(max_workers=workers, mp_context=spawn) as pool:
            ledger_check = pool.submit(ledger)
            running = {pool.submit(job): span for job, span in zip(jobs, spans, strict=True)}
            for future in as_completed(running):
                count, found = future.result()
                checked, done = checked + count, done + running[future].ticks
                differences += found
                progress(done, total)
            differences += ledger_check.result()
    islands = len({span.island for span in spans})
    return Verified(checked, islands, sorted(differences))


def _spans(
    cur: Cursor, island: str | None, start: datetime | None, end: datetime | None
) -> list[_Span]:
    """The recorded ticks in range, as spans of at most CHUNK_TICKS ticks of one island that
    together cover the whole range."""
    first = dict(fetch_tuples(cur, "verify_first_bids", {"island": island}))
    times: dict[str, list[datetime]] = defaultdict(list)
    for name, when in fetch_tuples(cur, "verify_tick_times", _range(island, start, end)):
        times[name].append(when)
    spans = []
    for name, found in sorted(times.items()):
        cuts = found[::CHUNK_TICKS]
        bounds = [start, *cuts[1:], end]
        for i in range(len(cuts)):
            count = len(found[i * CHUNK_TICKS : (i + 1) * CHUNK_TICKS])
            spans.append(_Span(name, bounds[i], bounds[i + 1], count, first.get(name)))
    return spans


def _check_span(root: Path, span: _Span) -> tuple[int, list[Difference]]:
    """Re-run the ticks of `span`: how many had a record, and what they do not reproduce."""
    with _views(root) as cur:
        tables = _Tables.read(cur, _range(span.island, span.start, span.end))
    record = _IslandRecord(span.island, tables, span.first_recorded)
    checked, differences = 0, []
    for tick in sorted(tables.ticks[span.island].keys() | tables.bids[span.island].keys()):
        found = record.check(tick)
        if found is not None:
            checked += 1
            differences += found
    return checked, differences


def _check_ledger(
    root: Path, island: str | None, start: datetime | None, end: datetime | None
) -> list[Difference]:
    with _views(root) as cur:
        return check_ledger(cur, island, start, end)


@contextmanager
def _views(root: Path) -> Iterator[Cursor]:
    """A cursor of an in-memory DuckDB whose views are the history's tables (history/views.py)."""
    with scratch() as cur:
        history_views(cur, root)
        yield cur


def _range(island: str | None, start: datetime | None, end: datetime | None) -> dict[str, Any]:
    return {"island": island, "start": start, "end": end}


@dataclass(slots=True)
class _Tables:
    """The recorded rows verify compares, by island and tick."""

    ticks: dict[str, dict[int, Row]]
    bids: dict[str, dict[int, list[dict[str, Any]]]]
    rates: dict[str, dict[int, list[Row]]]
    allocations: dict[str, dict[int, dict[str, int]]]
    held_charges: dict[str, dict[int, dict[str, int]]]
    receipts: dict[str, dict[int, list[Row]]]
    ladder: dict[str, dict[int, list[Row]]]
    islands: dict[str, list[Row]] = field(default_factory=dict)

    @classmethod
    def read(cls, cur: Cursor, params: dict[str, Any]) -> _Tables:
        def by_tick(name: str) -> dict[str, dict[int, list[Row]]]:
            out: dict[str, dict[int, list[Row]]] = defaultdict(lambda: defaultdict(list))
            for row in fetch_tuples(cur, name, params):
                out[row[0]][row[1]].append(row)
            return out

        def per_cluster(name: str) -> dict[str, dict[int, dict[str, int]]]:
            out: dict[str, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
            for i, t, cluster, value in fetch_tuples(cur, name, params):
                out[i][t][cluster] = int(value)
            return out

        ticks: dict[str, dict[int, Row]] = defaultdict(dict)
        for row in fetch_tuples(cur, "verify_ticks", params):
            ticks[row[0]][row[1]] = row
        bids: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        names = ("auction", "part", "cluster", "unit", "nodes", "price", "age", "ends_at")
        for row in fetch_tuples(cur, "verify_bids", params):
            part = dict(zip(names, row[2:10], strict=True))
            part["locked_by_clearing"], part["gpus_per_node"] = row[10], row[11]
            bids[row[0]][row[1]].append(part)
        islands: dict[str, list[Row]] = defaultdict(list)
        for row in fetch_tuples(cur, "verify_islands", {"island": params["island"]}):
            islands[row[0]].append(row)
        return cls(
            ticks=ticks,
            bids=bids,
            rates=by_tick("verify_rates"),
            allocations=per_cluster("verify_allocations"),
            held_charges=per_cluster("verify_held_charges"),
            receipts=by_tick("verify_receipts"),
            ladder=by_tick("verify_ladder"),
            islands=islands,
        )


class _IslandRecord:
    """One island's recorded ticks, checked one by one."""

    def __init__(self, island: str, tables: _Tables, first_recorded: int | None) -> None:
        self.island = island
        self.t = tables
        self.first_recorded = first_recorded

    def check(self, tick: int) -> list[Difference] | None:
        """What tick `tick` does not reproduce; None when it has no record to re-run."""
        if self.first_recorded is None or tick < self.first_recorded:
            return None
        found = _Found(self.island, tick)
        row = self.t.ticks[self.island].get(tick)
        bids = self.t.bids[self.island].get(tick)
        if row is None:
            found.add("ticks", "no ticks row for a tick with bids")
            return found.differences
        if not bids:
            found.add("bids", "no bids recorded for the tick")
            return found.differences
        try:
            auctions = read_auctions(bids)
            now, coming = auctions[NOW], auctions[NEXT]
        except (KeyError, ValueError, TypeError) as exc:
            found.add("bids", f"the record cannot be read back: {type(exc).__name__} {exc}")
            return found.differences
        time_ns, interval_ns = row[2], row[9] * NS_PER_MS
        clearing = self._cleared(found, now)
        self._check_stats(found, row, now, clearing)
        self._check_terms(found, tick, now)
        self._check_rates(found, tick, clearing, interval_ns)
        self._check_allocations(found, tick, clearing)
        self._check_receipts(found, tick, time_ns, now, clearing, interval_ns)
        self._check_ladder(found, tick, time_ns, coming)
        return found.differences

    def _cleared(self, found: _Found, now: AuctionRecord) -> Clearing:
        """The tick's clearing re-run: the auction, then the step-downs at their locks."""
        clearing = clear(now.auction)
        lock = clearing_lock(now.auction.reserve_price, clearing.stats.min)
        for d in now.step_downs:
            if d.locked_by_clearing and d.locked_price != lock:
                found.add(
                    "bids",
                    f"cluster {d.cluster} step-down lock: recorded {_usd(d.locked_price)}, "
                    f"re-run {_usd(lock)}",
                )
        return with_step_downs(clearing, now.step_downs, now.auction.gpus_per_node)

    def _check_stats(self, found: _Found, row: Row, now: AuctionRecord, c: Clearing) -> None:
        stats = c.stats
        recorded = dict(zip(("vwap", "min", "max", "gpus", "clusters"), row[3:8], strict=True))
        rerun = {
            "vwap": stats.vwap,
            "min": stats.min,
            "max": stats.max,
            "gpus": stats.gpus,
            "clusters": stats.clusters,
        }
        for name, value in rerun.items():
            found.compare(
                "ticks", name, recorded[name], value, money=name in ("vwap", "min", "max")
            )
        found.compare("ticks", "reserve_price", row[8], now.auction.reserve_price, money=True)

    def _check_terms(self, found: _Found, tick: int, now: AuctionRecord) -> None:
        terms = [r for r in self.t.islands.get(self.island, []) if r[1] <= tick]
        if not terms:
            found.add("islands", "no terms recorded at or before the tick")
            return
        _, _, gpus_per_node, reserve = terms[-1]
        found.compare("islands", "gpus_per_node", gpus_per_node, now.auction.gpus_per_node)
        found.compare("islands", "reserve_price", reserve, now.auction.reserve_price, money=True)

    def _check_rates(self, found: _Found, tick: int, c: Clearing, interval_ns: int) -> None:
        recorded = {r[2]: r for r in self.t.rates[self.island].get(tick, [])}
        held = self.t.held_charges[self.island].get(tick, {})
        for cluster in sorted(recorded.keys() | c.clusters.keys()):
            r, cc = recorded.get(cluster), c.clusters.get(cluster)
            if r is None or cc is None:
                found.presence("cluster_rates", cluster, r is not None)
                continue
            found.compare("cluster_rates", f"cluster {cluster} gpus", r[3], cc.gpus)
            found.compare("cluster_rates", f"cluster {cluster} rate", r[4], cc.rate, money=True)
            units = cc.rate * cc.gpus * (interval_ns // NS_PER_MS) + held.get(cluster, 0)
            found.compare(
                "cluster_rates", f"cluster {cluster} amount_usd", r[5], units_to_usd(units)
            )

    def _check_allocations(self, found: _Found, tick: int, c: Clearing) -> None:
        recorded = self.t.allocations[self.island].get(tick, {})
        rerun = {cid: cc.nodes for cid, cc in c.clusters.items() if cc.nodes}
        for cluster in sorted(recorded.keys() | rerun.keys()):
            found.compare(
                "allocations",
                f"cluster {cluster} market nodes",
                recorded.get(cluster, 0),
                rerun.get(cluster, 0),
            )

    def _check_receipts(
        self,
        found: _Found,
        tick: int,
        time_ns: int,
        now: AuctionRecord,
        c: Clearing,
        interval_ns: int,
    ) -> None:
        a = now.auction
        rerun = {
            r.cluster: r
            for r in receipts(
                self.island,
                tick,
                to_datetime(time_ns),
                c,
                a.reserve_price,
                a.gpus_per_node,
                interval_ns,
            )
        }
        recorded = {r[2]: r for r in self.t.receipts[self.island].get(tick, [])}
        for cluster in sorted(recorded.keys() | rerun.keys()):
            r, receipt = recorded.get(cluster), rerun.get(cluster)
            if r is None or receipt is None:
                found.presence("receipts", cluster, r is not None)
                continue
            for name, was, again in _receipt_fields(r, receipt):
                found.compare("receipts", f"cluster {cluster} {name}", was, again)

    def _check_ladder(self, found: _Found, tick: int, time_ns: int, coming: AuctionRecord) -> None:
        rerun = published_ladder(coming.auction, coming.releases, time_ns)
        recorded = self.t.ladder[self.island].get(tick, [])
        if [_rung(r) for r in recorded] == [
            (r.nodes, r.gpus, r.price, r.contestable_at, r.later) for r in rerun
        ]:
            return  # the usual case, at once: what differs is named below
        if len(recorded) != len(rerun):
            found.add("ladder", f"rungs: recorded {len(recorded)}, re-run {len(rerun)}")
        for r, rung in zip(recorded, rerun, strict=False):
            for name, was, again in _rung_fields(r, rung):
                found.compare("ladder", f"rung {rung.nodes} {name}", was, again)


def _receipt_fields(r: Row, receipt: Receipt) -> Iterable[tuple[str, object, object]]:
    """(name, recorded, re-run) of each figure of a receipt, in the history's terms."""
    yield "nodes", r[3], receipt.nodes
    yield "gpus", r[4], receipt.gpus
    yield "rate", _usd(r[5]), receipt.rate
    yield "amount_usd", r[6], units_to_usd(receipt.amount)
    yield "amount_units", r[7], receipt.amount
    yield "reserve_units", r[8], receipt.reserve
    yield "displaced_units", r[9], receipt.displaced
    yield "core_units", r[10], receipt.core
    yield "protected_units", r[11], receipt.protected
    yield "displaced", _levels(r[12]), _levels(receipt.displaced_levels)
    yield "coalition", _levels(r[13]), _levels(receipt.coalition)
    yield "coalition_value", r[14], receipt.coalition_value
    yield "protected_displaced", _levels(r[15]), _levels(receipt.protected_levels)
    yield "capped", r[16], receipt.capped


def _levels(levels: Iterable[Any] | None) -> list[tuple[int, int]] | None:
    if levels is None:
        return None
    return [
        (int(x["price"]), int(x["nodes"])) if isinstance(x, dict) else (int(x[0]), int(x[1]))
        for x in levels
    ]


def _rung(r: Row) -> tuple[Any, ...]:
    """A recorded rung as the engine's figures: (nodes, gpus, price, contestable_at, later)."""
    return (r[2], r[3], r[4], r[5], tuple((at, price) for at, price in r[6] or ()))


def _rung_fields(r: Row, rung: LadderRung) -> Iterable[tuple[str, object, object]]:
    yield "nodes", r[2], rung.nodes
    yield "gpus", r[3], rung.gpus
    yield "price", _usd(r[4]), _usd(rung.price)
    yield "contestable_at", _when(r[5]), _when(rung.contestable_at)
    later = [(_when(at), _usd(price)) for at, price in r[6] or []]
    yield "later", later, [(_when(at), _usd(price)) for at, price in rung.later]


class _Found:
    """The differences of one tick, as they are found."""

    def __init__(self, island: str, tick: int) -> None:
        self.island, self.tick = island, tick
        self.differences: list[Difference] = []

    def add(self, table: str, what: str) -> None:
        self.differences.append(Difference(self.island, self.tick, table, what))

    def compare(
        self, table: str, name: str, recorded: object, rerun: object, money: bool = False
    ) -> None:
        if recorded != rerun:
            if money:
                recorded, rerun = _usd(recorded), _usd(rerun)
            self.add(table, f"{name}: recorded {recorded}, re-run {rerun}")

    def presence(self, table: str, cluster: str, recorded: bool) -> None:
        if recorded:
            self.add(table, f"cluster {cluster}: recorded, and the re-run has no such row")
        else:
            self.add(table, f"cluster {cluster}: not recorded, and the re-run has one")


def _usd(micros: object) -> object:
    """µUSD as USD for a message (None and anything else as it is)."""
    return micros_to_decimal(micros) if isinstance(micros, int) else micros


def _when(ns: int | None) -> str | None:
    return None if ns is None else to_datetime(ns).isoformat()
