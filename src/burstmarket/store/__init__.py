"""The only package that talks to DuckDB: one connection, one writer, readers on cursors."""

from burstmarket.store.database import Database

__all__ = ["Database"]
