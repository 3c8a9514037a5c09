"""Log lines that no client can forge or flood.

Every value a client controls (a query parameter, a channel name, a job name, a path, a token's
cluster) may hold a newline, a carriage return or megabytes. In a log line it is written by
`value`: bare when it is a plain word, else quoted with every control character escaped, and cut
after `MAX_VALUE` characters. `one_line` is the last guard for any other log record: the
formatter in server.py passes every message through it.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_VALUE = 256
"""Characters of one client value in a log line (an error's figures, cut to 200 characters and
a mark by errors.echo, pass whole)."""
MAX_LINE = 4096
"""Characters of one log line (a traceback's lines are counted apiece)."""

_BARE = re.compile(r"[A-Za-z0-9_.,:/@+=-]+")
_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def value(item: Any, limit: int = MAX_VALUE) -> str:
    """`item` as one token of a `key=value` log line."""
    if item is None or isinstance(item, bool | int | float):
        return json.dumps(item)
    text = item if isinstance(item, str) else json.dumps(item, default=str)
    if len(text) <= limit and _BARE.fullmatch(text):
        return text
    cut = json.dumps(text[:limit])  # escapes quotes, backslashes and every control character
    return cut if len(text) <= limit else f"{cut}...({len(text)} characters)"


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """`text` with every line break and control character escaped, cut after `limit`."""
    flat = _BREAKS.sub(lambda found: json.dumps(found.group())[1:-1], text)
    return flat if len(flat) <= limit else f"{flat[:limit]}...({len(flat)} characters)"
