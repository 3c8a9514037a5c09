"""Log lines that no client can forge or flood, in the one format the process writes.

Every value a client controls (a query parameter, a channel name, a job name, a path, a token's
cluster) may hold a newline, a carriage return or megabytes. In a log line it is written by
`value`: bare when it is a plain word, else quoted with every control character escaped, and cut
after `MAX_VALUE` characters. `LineFormatter` is the last guard for any other log record: every
record becomes exactly one line, `text` or `json` (`serve --log-format`), with its time, level
and logger.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from datetime import UTC, datetime
from typing import Any

from burstmarket.settings import LogFormat

MAX_VALUE = 256
"""Characters of one client value in a log line (an error's figures, cut to 200 characters and
a mark by errors.echo, pass whole)."""
MAX_LINE = 4096
"""Characters of one log message (a traceback's lines are counted apiece)."""

_BARE = re.compile(r"[A-Za-z0-9_.,:/@+=-]+")
_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a mark saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters)"


def value(item: Any, limit: int = MAX_VALUE) -> str:
    """`item` as one token of a `key=value` log line."""
    if item is None or isinstance(item, bool | int | float):
        return json.dumps(item)
    text = item if isinstance(item, str) else json.dumps(item, default=str)
    if len(text) <= limit and _BARE.fullmatch(text):
        return text
    cut_text = json.dumps(text[:limit])  # escapes quotes, backslashes and every control character
    return cut_text if len(text) <= limit else f"{cut_text}...({len(text)} characters)"


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """`text` with every line break and control character escaped, cut after `limit`."""
    return cut(_BREAKS.sub(lambda found: json.dumps(found.group())[1:-1], text), limit)


class LineFormatter(logging.Formatter):
    """One line per record, whatever text it carries.

    `text`: `TIME LEVEL LOGGER: MESSAGE`, the message's control characters escaped and a
    traceback's lines indented under it, so none of them can pass for a line of its own.
    `json`: `{"time", "level", "logger", "message", ...fields, "exception"?}`, JSON's own escaping
    keeping it one line; `fields` are a record's structured figures (`extra={"fields": ...}`,
    the access line's). Either way a refusal's message starts `REFUSED reason=`, greppable, and
    the time is UTC to the millisecond.
    """

    def __init__(self, style: LogFormat = "text") -> None:
        super().__init__()
        self.json = style == "json"

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def format(self, record: logging.LogRecord) -> str:
        when, message = self.formatTime(record), record.getMessage()
        trace = self.formatException(record.exc_info) if record.exc_info else None
        if self.json:
            line: dict[str, Any] = {
                "time": when,
                "level": record.levelname,
                "logger": record.name,
                "message": cut(message, MAX_LINE),
            }
            for key, item in getattr(record, "fields", {}).items():
                line.setdefault(key, cut(item, MAX_VALUE) if isinstance(item, str) else item)
            if trace is not None:
                line["exception"] = cut(trace, 16 * MAX_LINE)
            return json.dumps(line, default=str)  # ASCII only: no character a reader splits on
        text = f"{when} {record.levelname} {record.name}: {one_line(message)}"
        if trace is not None:
            text += "".join(f"\n  | {one_line(part)}" for part in trace.splitlines())
        return text


def configure(style: LogFormat = "text", handler: logging.Handler | None = None) -> None:
    """Send every log record of the process, INFO and up, to `handler` (default: stderr) in
    `style`; warnings and a worker thread's uncaught exception become records too."""
    handler = handler or logging.StreamHandler()
    handler.setFormatter(LineFormatter(style))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    logging.captureWarnings(True)

    def thread_failed(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None or isinstance(args.exc_value, SystemExit):
            return
        name = args.thread.name if args.thread is not None else "?"
        info = (args.exc_type, args.exc_value, args.exc_traceback)
        logging.getLogger(__name__).error("thread %s failed", name, exc_info=info)

    threading.excepthook = thread_failed
