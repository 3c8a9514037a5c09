"""The only package that talks to DuckDB: one connection, one writer, readers on cursors."""

from burstmarket.store.database import Database
from burstmarket.store.writer import Batch

__all__ = ["Batch", "Database"]
