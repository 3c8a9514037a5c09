"""The files that ship beside the code, read by name: `sql/<name>.sql`, every query and view of
the store, and `feeds/<name>.toml`, every published feed.

Both folders sit at the repository's top level and install as the packages `burstmarket.sql`
and `burstmarket.feeds` (pyproject.toml maps them there), so an editable install and a wheel
are read the same way, through importlib.resources; nothing else knows where they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from importlib import resources

MIGRATION = re.compile(r"(schema_(\d{3}))\.sql")
"""A migration of the store: `sql/schema_NNN.sql`, NNN the schema version it brings it to."""


@cache
def sql(name: str) -> str:
    """The text of `sql/<name>.sql`; a missing name is a bug, so it raises."""
    return resources.files("burstmarket.sql").joinpath(f"{name}.sql").read_text("utf-8")


def feed_files() -> dict[str, str]:
    """Every `feeds/<name>.toml`: file name -> text, by file name."""
    folder = resources.files("burstmarket.feeds")
    found = {entry.name: entry for entry in folder.iterdir() if entry.name.endswith(".toml")}
    return {name: found[name].read_text("utf-8") for name in sorted(found)}


def migrations() -> tuple[str, ...]:
    """Every `sql/schema_NNN.sql` by name, in the order the store applies them."""
    return numbered(entry.name for entry in resources.files("burstmarket.sql").iterdir())


def numbered(files: Iterable[str]) -> tuple[str, ...]:
    """The migrations among `files`, by version; numbered 001 on with no gap and none twice,
    else a bug that raises (a store would skip or repeat a step)."""
    found = sorted((int(m[2]), m[1]) for name in files if (m := MIGRATION.fullmatch(name)))
    versions = [version for version, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"sql/schema_NNN.sql must number 001 to {len(found):03d}: {versions}")
    return tuple(name for _, name in found)
