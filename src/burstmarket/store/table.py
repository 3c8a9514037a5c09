"""One definition per table: its columns as the store holds them, mapped to a Python row type.

From a `Table` come the three things that used to be spelled out by hand, table by table:
- the check that the store, after its migrations, holds exactly these columns, with these types
  and nullability (`Database.check_tables`, run by whoever owns the tables when it starts);
- the explicit Arrow schema of its batches, non-nullable where the column is NOT NULL;
- the row mapping, both ways: dataclass rows to an Arrow batch written by one INSERT or UPDATE
  made from the definition, and store rows (a DB-API dict, an Arrow table) to dataclass rows.

A column maps to the row type's field of the same name unless it names another (`field=`); an
`unmapped` column is the store's own (a token hash, a creation time): never read into the row
type nor written from it. A table without a row type is read and written by named SQL
only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from operator import attrgetter
from typing import Any, Final, Generic, TypeVar

import numpy as np
import pyarrow as pa

from burstmarket.store.rows import Cursor, write_batch

R = TypeVar("R")

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class SqlType:
    sql: str
    """As DuckDB names the type in `duckdb_columns()`."""
    arrow: pa.DataType
    """What a batch carries for it."""


VARCHAR: Final = SqlType("VARCHAR", pa.string())
INTEGER: Final = SqlType("INTEGER", pa.int32())
BIGINT: Final = SqlType("BIGINT", pa.int64())
HUGEINT: Final = SqlType("HUGEINT", pa.decimal128(38, 0))
"""Arrow has no 128-bit integer: a batch carries DECIMAL(38, 0), cast to HUGEINT on insert."""
BOOLEAN: Final = SqlType("BOOLEAN", pa.bool_())
TIMESTAMPTZ: Final = SqlType("TIMESTAMP WITH TIME ZONE", pa.timestamp("us", tz="UTC"))


def decimal(precision: int, scale: int) -> SqlType:
    return SqlType(f"DECIMAL({precision},{scale})", pa.decimal128(precision, scale))


def struct_list(**members: SqlType) -> SqlType:
    """A list of structs, `STRUCT(a INTEGER, ...)[]`; its items and their members non-null."""
    sql = ", ".join(f"{name} {kind.sql}" for name, kind in members.items())
    item = pa.struct([pa.field(name, kind.arrow, nullable=False) for name, kind in members.items()])
    return SqlType(f"STRUCT({sql})[]", pa.list_(pa.field("item", item, nullable=False)))


def struct(**members: SqlType) -> SqlType:
    """A struct, `STRUCT(a BIGINT, ...)`, each member nullable (member names that are no SQL
    keyword: DuckDB quotes those when it names the type)."""
    sql = ", ".join(f"{name} {kind.sql}" for name, kind in members.items())
    return SqlType(
        f"STRUCT({sql})", pa.struct([pa.field(name, kind.arrow) for name, kind in members.items()])
    )


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: SqlType
    null: bool = False
    """The column allows NULL (as the store has it; a batch's Arrow field follows it)."""
    field: str | None = None
    """The row type's field it maps to, when that is not the column's own name."""
    unmapped: bool = False
    """The store's own column (a token hash, a creation time): no field of the row type."""


class Table(Generic[R]):
    """A store table: its columns, the ones an update finds rows by, and the dataclass its
    rows map to (every field of which must be a column)."""

    def __init__(
        self, name: str, row: type[R] | None, columns: Sequence[Column], key: Sequence[str] = ()
    ) -> None:
        if row is not None and not is_dataclass(row):
            raise TypeError(f"table {name}: the row type {row!r} is not a dataclass")
        if not all(_IDENTIFIER.match(n) for n in (name, *(c.name for c in columns))):
            raise ValueError(f"table {name}: a name is not a plain SQL identifier")
        self.name = name
        self.row = row
        self.columns = tuple(columns)
        self.key = tuple(key)
        by_field = {c.field or c.name: c for c in columns if not c.unmapped}
        names = [] if row is None else [f.name for f in fields(row)]
        if sorted(by_field) != sorted(names):
            raise ValueError(f"table {name}: columns map {sorted(by_field)}, the row has {names}")
        self.mapped = tuple(by_field[n] for n in names)
        """The columns the row type maps, in the order of its fields."""
        self._get = {c.name: attrgetter(f) for f, c in by_field.items()}
        if not set(self.key) <= set(self._get):
            raise ValueError(f"table {name}: the key {self.key} is not mapped")
        self.batch_name = f"new_{name}"
        """What a batch of rows is registered as while its statement runs."""

    def drift(self, found: Mapping[str, tuple[str, bool]]) -> list[str]:
        """How the table as the store holds it (`found`: column -> (type, nullable)) differs
        from this definition; empty when they match exactly."""
        wanted = {c.name: (c.type.sql, c.null) for c in self.columns}
        lines = [f"{self.name}.{n} is not in the store" for n in wanted if n not in found]
        lines += [f"{self.name}.{n} is not defined" for n in found if n not in wanted]
        lines += [
            f"{self.name}.{n} is {_shown(found[n])} in the store, defined {_shown(wanted[n])}"
            for n in wanted
            if n in found and found[n] != wanted[n]
        ]
        return lines

    # --- store rows to dataclass rows ------------------------------------------------------

    def from_row(self, row: Mapping[str, Any]) -> R:
        """The row type of one store row read by name (a DB-API dict)."""
        return self._make(*[row[c.name] for c in self.mapped])

    def from_tuples(self, names: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> list[R]:
        """The row types of a read's tuples (`names`: its columns, in order): what the tick's
        bulk reads use, as DuckDB's tuples cost less than Arrow converted column by column
        (measured 25-30 % less at 74 to 9,560 node rows)."""
        make = self._make
        order = [names.index(c.name) for c in self.mapped]
        if order == list(range(len(names))):
            return [make(*row) for row in rows]
        return [make(*[row[i] for i in order]) for row in rows]

    @property
    def _make(self) -> type[R]:
        assert self.row is not None, f"{self.name} has no row type"
        return self.row

    # --- dataclass rows to the store -------------------------------------------------------

    def schema(self, names: Sequence[str] | None = None) -> pa.Schema:
        """The Arrow schema of a batch: every mapped column, or only `names`."""
        return _schema(self, None if names is None else tuple(names))

    def to_arrow(self, rows: Sequence[R], names: Sequence[str] | None = None) -> pa.Table:
        """A batch of `rows`: every mapped column, or only `names`."""
        schema = self.schema(names)
        arrays = [pa.array(list(map(self._get[f.name], rows)), type=f.type) for f in schema]
        return pa.Table.from_arrays(arrays, schema=schema)

    def from_columns(self, columns: Mapping[str, Sequence[Any] | pa.Array]) -> pa.Table:
        """A batch of every mapped column from its values, column by column (`columns`: name
        -> values or an Arrow array): for thousands of rows never made into row objects."""
        schema = self.schema()
        if sorted(columns) != sorted(schema.names):
            raise ValueError(f"table {self.name}: columns {sorted(columns)}, mapped {schema.names}")
        arrays = [
            v if isinstance(v := columns[f.name], pa.Array) else pa.array(v, type=f.type)
            for f in schema
        ]
        return pa.Table.from_arrays(arrays, schema=schema)

    def insert(self, cur: Cursor, rows: Sequence[R]) -> None:
        """Append `rows` in one statement."""
        if rows:
            write_batch(cur, _insert_sql(self), self.batch_name, self.to_arrow(rows))

    def insert_batch(self, cur: Cursor, batch: pa.Table) -> None:
        """Append a batch made by `from_columns` in one statement."""
        if batch.num_rows:
            write_batch(cur, _insert_sql(self), self.batch_name, batch)

    def update(self, cur: Cursor, rows: Sequence[R], names: Sequence[str]) -> None:
        """Set the columns `names` of the stored rows with the keys of `rows`, in one
        statement."""
        if rows:
            batch = self.to_arrow(rows, (*self.key, *names))
            write_batch(cur, _update_sql(self, tuple(names)), self.batch_name, batch)


def scaled_decimals(values: Sequence[int | None], kind: SqlType) -> pa.Array:
    """A DECIMAL column from integers in units of its scale (µUSD for DECIMAL(18,6); None:
    NULL), exact: each integer is the decimal's own 128-bit value, with no Decimal made."""
    assert pa.types.is_decimal128(kind.arrow)
    ints = pa.array(values, type=pa.int64())
    low = np.frombuffer(ints.buffers()[1], dtype=np.int64, count=len(ints))
    words = np.empty((len(ints), 2), dtype=np.int64)  # little-endian: low word, then sign
    words[:, 0] = low
    words[:, 1] = low >> 63
    validity = ints.buffers()[0]
    return pa.Array.from_buffers(
        kind.arrow, len(ints), [validity, pa.py_buffer(words)], null_count=ints.null_count
    )


def _shown(kind: tuple[str, bool]) -> str:
    return f"{kind[0]} {'NULL' if kind[1] else 'NOT NULL'}"


@cache
def _schema(table: Table[Any], names: tuple[str, ...] | None) -> pa.Schema:
    by_name = {c.name: c for c in table.mapped}
    chosen = table.mapped if names is None else [by_name[n] for n in names]
    return pa.schema([pa.field(c.name, c.type.arrow, nullable=c.null) for c in chosen])


# The statements are made of the definitions' names (checked to be plain identifiers), never
# of anything a client sent.


@cache
def _insert_sql(table: Table[Any]) -> str:
    return f"INSERT INTO {table.name} BY NAME SELECT * FROM {table.batch_name}"  # noqa: S608


@cache
def _update_sql(table: Table[Any], names: tuple[str, ...]) -> str:
    new = table.batch_name
    sets = ", ".join(f"{n} = {new}.{n}" for n in names)
    where = " AND ".join(f"{table.name}.{k} = {new}.{k}" for k in table.key)
    return f"UPDATE {table.name} SET {sets} FROM {new} WHERE {where}"  # noqa: S608
