"""Parquet history for analysts: closed 5-minute windows of the market-data tables, compacted;
`scan` reads a table back as a Polars LazyFrame with the data dictionary's types."""

from burstmarket.history.exporter import HistoryExporter
from burstmarket.history.scan import scan

__all__ = ["HistoryExporter", "scan"]
