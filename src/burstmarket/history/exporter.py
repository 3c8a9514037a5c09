"""Writes the market-data tables to Parquet for every closed 5 minutes, and compacts the parts.

Export: for each island, every window of market time that has closed (a later tick exists) and
is not yet in the history is written per table, `ticks` last, each file under a temporary name
and then renamed, so no reader ever sees half a file. The `ticks` parts are the record of what is
exported, so `ticks` gets a part for every window; another table gets one only for a window it
has rows in, and for its island's first (so a glob over every table finds a file of each, its
columns typed, before it has any row). After a crash or a failed run, parts of the other tables
past the `ticks` point are leftovers and are removed before the window is written again.

Compaction keeps a year to a handful of files: the parts of a closed UTC day merge into one file,
and the parts of a closed month into one file, sorted by time. The merged month directory is
built beside the tree (hard links for the untouched parts) and swapped in with one atomic
`renameat2(RENAME_EXCHANGE)`, so a reader sees either the old parts or the new ones, never both
and never neither. The replaced parts are deleted at once: a query that already opened one
reads on (the file lives while it is open), and one that only listed it would not find it at
its old path anyway, kept or not. The work directory beside the tree is removed when a run
ends, so a reader's glob over the data dir (`**/*.parquet`) finds the history and nothing else.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import uuid
from datetime import datetime, timedelta
from pathlib import Path

from burstmarket import metrics
from burstmarket.history.layout import (
    ACCOUNT_ROWS,
    TABLES,
    WINDOW,
    Part,
    day_end,
    exported_through,
    floor_time,
    month_dir,
    month_end,
    month_start,
    part_name,
    parts,
)
from burstmarket.store import Database, Reader

log = logging.getLogger(__name__)

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> None:
    """Swap two directories atomically (Linux `renameat2`, RENAME_EXCHANGE)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno), str(a), None, str(b))


class HistoryExporter:
    def __init__(self, db: Database, root: Path) -> None:
        self._store = Reader(db)
        self.root = root
        # Beside the history tree, never under it: `history/**/*.parquet` must not see it.
        self._work = root.with_name(root.name + ".work")
        self._clean = False
        """Whether the last run ended without an error (none since start): then no part lies
        past the `ticks` point, and there are no leftovers to look for."""
        self._parted: set[tuple[str, str]] = set()
        """(table, partition) known to have a part: its empty windows need no file."""
        self._account_rows_done: datetime | None = None
        """How far the ledger rows of no island are exported, once this exporter has."""
        self._compacted: dict[str, datetime] = {}
        """Partition -> the UTC day of the `through` its last compaction ran to: until a later
        day, no day or month closes, so there is nothing new to merge."""

    def run(self, through: datetime | None = None) -> None:
        """Export every closed window of every island, then compact. Blocking; idempotent.

        A window is closed once a later tick exists; `through` also closes every window that
        ends by then, for a caller that knows no tick before it is still to come (`simulate`,
        its market stopped: its last tick's window is history too)."""
        clean, self._clean = self._clean, False
        try:
            latest: datetime | None = through
            for island, first, last in self._store.query("history_spans", {}):
                until = floor_time(last, WINDOW)
                if through is not None:
                    until = max(until, floor_time(through, WINDOW))
                latest = until if latest is None else max(latest, until)
                done = exported_through(self.root, island) or floor_time(first, WINDOW)
                if not clean:
                    self._drop_leftovers(island, done)
                start = done
                while start < until:
                    end = min(until, day_end(start))
                    self._export(island, start, end)
                    start = end
                self._compact(island, max(done, until))
            if latest is not None:
                self._export_account_rows(floor_time(latest, WINDOW))
            self._clean = True
        finally:
            # what a compaction cut short leaves here is only unswapped copies: never data
            shutil.rmtree(self._work, ignore_errors=True)

    def _export(self, island: str, start: datetime, end: datetime) -> None:
        filled = self._filled(island, start, end)
        for table in TABLES:
            if table == "ticks" or table in filled or not self._has_part(table, island):
                self._write_part(table, island, island, start, end)
        log.info("history: exported island=%s %s..%s", island, start, end)

    def _export_account_rows(self, until: datetime) -> None:
        """The ledger rows of no island, in their own partition (layout.ACCOUNT_ROWS), span by
        span up to `until`, where the furthest island is exported: market time has passed it,
        so no row can still be written before it. A span without such rows gets no part, so
        the partition's last part says how far it was done only up to its last row: from there
        a restarted exporter finds the empty spans empty again."""
        done = self._account_rows_done or self._account_rows_start()
        if done is None:
            return  # no account has a row of its own yet
        start = done
        while start < until:
            end = min(until, day_end(start))
            filled = "ledger" in self._filled(None, start, end)
            if filled or not self._has_part("ledger", ACCOUNT_ROWS):
                self._write_part("ledger", ACCOUNT_ROWS, None, start, end)
            start = end
        self._account_rows_done = max(done, until)
        self._compact(ACCOUNT_ROWS, max(done, until))

    def _account_rows_start(self) -> datetime | None:
        """Where the account rows' export resumes: the end of their last part, else the window
        of their first row (None: there is none)."""
        found = parts(self.root, "ledger", ACCOUNT_ROWS)
        if found:
            return max(part.end for part in found)
        ((first,),) = self._store.query("history_account_rows", {})
        return None if first is None else floor_time(first, WINDOW)

    def _filled(self, island: str | None, start: datetime, end: datetime) -> set[str]:
        """The tables with rows of `island` (None: of no island) in [start, end)
        (sql/history_window_tables.sql)."""
        params = {"island": island, "start": start, "end": end}
        return {name for (name,) in self._store.query("history_window_tables", params)}

    def _has_part(self, table: str, partition: str) -> bool:
        key = (table, partition)
        if key not in self._parted and parts(self.root, table, partition):
            self._parted.add(key)
        return key in self._parted

    def _write_part(
        self, table: str, partition: str, island: str | None, start: datetime, end: datetime
    ) -> None:
        """One part of `table` under `island=<partition>`: the rows of `island` (None: of no
        island) in [start, end)."""
        folder = month_dir(self.root, table, partition, start)
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / part_name(start, end)
        temp = final.with_suffix(".tmp")
        params = {"island": island, "start": start, "end": end, "path": str(temp)}
        self._store.query(f"history_{table}", params)
        os.replace(temp, final)
        self._parted.add((table, partition))
        metrics.HISTORY_FILES.labels(table).inc()

    def _drop_leftovers(self, island: str, done: datetime) -> None:
        """Parts written past the last complete window (a crash mid-export) are rewritten."""
        for table in TABLES[:-1]:
            for part in parts(self.root, table, island):
                if part.start >= done:
                    part.path.unlink()
                    self._parted.discard((table, island))  # looked for again when needed

    def _compact(self, island: str, through: datetime) -> None:
        day = floor_time(through, timedelta(days=1))
        if self._compacted.get(island) == day:
            return
        with metrics.HISTORY_COMPACTION_SECONDS.time():
            self._merge_closed(island, through)
        self._compacted[island] = day

    def _merge_closed(self, island: str, through: datetime) -> None:
        for table in TABLES:
            months: dict[Path, list[Part]] = {}
            for part in parts(self.root, table, island):
                months.setdefault(part.path.parent, []).append(part)
            for folder, found in months.items():
                groups = self._merges(found, month_start(found[0].start), through)
                if groups:
                    self._swap_in(folder, groups)

    @staticmethod
    def _merges(found: list[Part], first: datetime, through: datetime) -> list[list[Part]]:
        """The groups of parts to merge: the whole month once closed, else each closed day."""
        if month_end(first) <= through:
            return [found] if len(found) > 1 else []
        days: dict[datetime, list[Part]] = {}
        for part in found:
            if day_end(part.start) <= through:
                days.setdefault(day_end(part.start), []).append(part)
        return [group for group in days.values() if len(group) > 1]

    def _swap_in(self, folder: Path, groups: list[list[Part]]) -> None:
        merged = {part.path.name for group in groups for part in group}
        stage = self._work / "stage" / uuid.uuid4().hex
        fresh = stage / folder.name
        fresh.mkdir(parents=True)
        for path in folder.iterdir():
            if path.name not in merged and Part.parse(path) is not None:
                os.link(path, fresh / path.name)
        for group in groups:
            name = part_name(min(p.start for p in group), max(p.end for p in group))
            params = {"files": [str(p.path) for p in group], "path": str(fresh / name)}
            self._store.query("history_compact", params)
        exchange(fresh, folder)
        shutil.rmtree(stage)  # `fresh` now holds the replaced parts
        log.info("history: compacted %d parts into %d in %s", len(merged), len(groups), folder)
