"""Parquet history for analysts: closed 5-minute windows of the market-data tables, compacted."""

from burstmarket.history.exporter import HistoryExporter

__all__ = ["HistoryExporter"]
