"""The history as DuckDB views: one per table, named as the table, over its Parquet files.

What a check of the record reads (record/: `verify` and its ledger check), and what an analyst
can open the same way: `history_views(con, root)`, then `SELECT ... FROM ledger`. Every view has
the dictionary's columns and the partitions `island` and `month`, in every case: a table with no
file yet (a history written before it existed) is an empty view of the same columns, so a query
of it finds nothing rather than failing.
"""

from __future__ import annotations

from pathlib import Path

from burstmarket.history.dictionary import HISTORY, PARTITIONS
from burstmarket.store.rows import Cursor, run_filled


def history_views(con: Cursor, root: Path) -> None:
    """Create (or replace) a view per history table on `con`, over the files under `root`."""
    for table in HISTORY:
        folder = root / table.name
        if any(folder.glob("**/*.parquet")):
            files = _literal(f"{folder}/**/*.parquet")
            run_filled(con, "history_view", {"table": table.name, "files": files})
        else:
            columns = [*table.columns, *PARTITIONS]
            typed = ", ".join(f'NULL::{c.type} AS "{c.name}"' for c in columns)
            run_filled(con, "history_empty_view", {"table": table.name, "columns": typed})


def _literal(text: str) -> str:
    """A SQL string literal (a view's definition takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"
