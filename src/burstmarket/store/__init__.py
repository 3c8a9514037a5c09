"""The only package that talks to DuckDB: one connection, one writer, readers on cursors."""

from burstmarket.store.database import PRIVATE_UMASK, Database, StoreOpenError
from burstmarket.store.faults import store_fault
from burstmarket.store.writer import Batch

__all__ = ["PRIVATE_UMASK", "Batch", "Database", "StoreOpenError", "store_fault"]
