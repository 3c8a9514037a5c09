"""The files that ship beside the code, read by name: `sql/<name>.sql`, every query and view of
the store, and `feeds/<name>.toml`, every published feed.

Both folders sit at the repository's top level and install as the packages `burstmarket.sql`
and `burstmarket.feeds` (pyproject.toml maps them there), so an editable install and a wheel
are read the same way, through importlib.resources; nothing else knows where they are.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def sql(name: str) -> str:
    """The text of `sql/<name>.sql`; a missing name is a bug, so it raises."""
    return resources.files("burstmarket.sql").joinpath(f"{name}.sql").read_text("utf-8")


def feed_files() -> dict[str, str]:
    """Every `feeds/<name>.toml`: file name -> text, by file name."""
    folder = resources.files("burstmarket.feeds")
    found = {entry.name: entry for entry in folder.iterdir() if entry.name.endswith(".toml")}
    return {name: found[name].read_text("utf-8") for name in sorted(found)}
