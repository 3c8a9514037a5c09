"""The only package that talks to DuckDB: one connection, one writer, readers on cursors; the
one read path (rows.py) and one definition per table (table.py)."""

from burstmarket.store.database import (
    PRIVATE_UMASK,
    Database,
    StoreOpenError,
    TableDriftError,
)
from burstmarket.store.faults import store_fault
from burstmarket.store.reader import Reader
from burstmarket.store.scratch import scratch
from burstmarket.store.writer import Batch

__all__ = [
    "PRIVATE_UMASK",
    "Batch",
    "Database",
    "Reader",
    "StoreOpenError",
    "TableDriftError",
    "scratch",
    "store_fault",
]
