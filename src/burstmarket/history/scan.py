"""A history table as a Polars `LazyFrame`, typed as the data dictionary says (docs/analysts.md).

`scan("ticks", "data/history")` reads every part of the table, with the hive partitions
`island` and `month` as columns, each column of the type history/dictionary.py states, in
Polars' terms: decimals stay exact (`pl.Decimal`), times are `pl.Datetime("us", "UTC")`,
lists of structs keep their fields' types. The partitions are strings whatever an island is
called (Polars, like DuckDB, would otherwise read `island=7` as a number), and a part written
before a column existed reads it as null (docs/history.md "Stores and files from before").
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from burstmarket.history.dictionary import HISTORY, PARTITIONS, HistoryColumn

_SCALARS: dict[str, pl.DataType] = {
    "BIGINT": pl.Int64(),
    "INTEGER": pl.Int32(),
    "VARCHAR": pl.String(),
    "BOOLEAN": pl.Boolean(),
    "TIMESTAMP WITH TIME ZONE": pl.Datetime("us", "UTC"),
}


def polars_type(duckdb_type: str) -> pl.DataType:
    """The Polars type of a dictionary type (DuckDB's spelling, history/dictionary.py)."""
    text = duckdb_type.strip()
    if text.endswith("[]"):
        return pl.List(polars_type(text[:-2]))
    if text.startswith("DECIMAL(") and text.endswith(")"):
        precision, scale = (int(part) for part in text[len("DECIMAL(") : -1].split(","))
        return pl.Decimal(precision, scale)
    if text.startswith("STRUCT(") and text.endswith(")"):
        fields = []
        for member in _top_level(text[len("STRUCT(") : -1]):
            name, _, kind = member.strip().partition(" ")
            fields.append(pl.Field(name, polars_type(kind)))
        return pl.Struct(fields)
    try:
        return _SCALARS[text]
    except KeyError:
        raise ValueError(f"no Polars type for the history type {duckdb_type!r}") from None


def _top_level(text: str) -> list[str]:
    """`text` split at the commas outside parentheses (a struct's members)."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:at])
            start = at + 1
    parts.append(text[start:])
    return parts


def schema(table: str) -> pl.Schema:
    """The table's columns, then the partitions, each with its Polars type."""
    found = {t.name: t for t in HISTORY}
    if table not in found:
        raise ValueError(f"no history table {table!r}; tables are {', '.join(found)}")
    columns: tuple[HistoryColumn, ...] = (*found[table].columns, *PARTITIONS)
    return pl.Schema({c.name: polars_type(c.type) for c in columns})


def scan(table: str, root: Path | str) -> pl.LazyFrame:
    """Every part of `table` under the history directory `root` (`data/history`), lazily. A
    part whose column is not of the dictionary's type fails the query (Polars' SchemaError):
    the dictionary is checked, never cast to."""
    types = schema(table)
    partitions = {c.name: types.pop(c.name) for c in PARTITIONS}
    return pl.scan_parquet(
        Path(root) / table / "**" / "*.parquet",
        hive_partitioning=True,
        schema=types,
        hive_schema=partitions,
        missing_columns="insert",
    )
