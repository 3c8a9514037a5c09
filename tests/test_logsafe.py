"""The one log formatter: whatever a record carries, `text` and `json` give it one line (a
traceback's lines indented under it in text, a field in JSON), with time, level and logger."""

from __future__ import annotations

import json
import logging
import re
import sys

from burstmarket.logsafe import MAX_LINE, LineFormatter

FORGED = "x\nREFUSED reason=spend-limit cluster=victim\u2028" + "A" * (2 * MAX_LINE)


def record(message: str, failed: bool = False, **fields: object) -> logging.LogRecord:
    info = None
    if failed:
        try:
            raise ValueError("a bug\nsplit over lines")
        except ValueError:
            info = sys.exc_info()
    made = logging.LogRecord("burstmarket.test", logging.WARNING, __file__, 1, message, None, info)
    if fields:
        made.fields = fields
    return made


def test_text_is_one_line_per_record_with_time_level_and_logger() -> None:
    line = LineFormatter("text").format(record(FORGED))
    assert "\n" not in line
    assert "\u2028" not in line
    time, level, rest = line.split(" ", 2)
    assert time.endswith("Z")
    assert level == "WARNING"
    assert rest.startswith("burstmarket.test: x\\nREFUSED")
    assert re.search(r"\.\.\.\(\d+ characters\)$", line)  # cut, its length said
    assert len(line) < MAX_LINE + 100

    first, *trace = LineFormatter("text").format(record("failed", failed=True)).splitlines()
    assert first.endswith("WARNING burstmarket.test: failed")
    assert trace
    assert all(part.startswith("  | ") for part in trace)
    assert trace[-2:] == ["  | ValueError: a bug", "  | split over lines"]


def test_json_is_one_object_per_line_with_the_record_whole() -> None:
    line = LineFormatter("json").format(record(FORGED, failed=True, status=200, path="/a\nb"))
    assert "\n" not in line
    assert "\u2028" not in line
    parsed = json.loads(line)
    assert (parsed["level"], parsed["logger"]) == ("WARNING", "burstmarket.test")
    assert parsed["time"].endswith("Z")
    assert parsed["message"].startswith(FORGED[:50])  # the text itself, not escaped twice
    assert parsed["message"].endswith(f"...({len(FORGED)} characters)")
    assert (parsed["status"], parsed["path"]) == (200, "/a\nb")
    assert parsed["exception"].endswith("ValueError: a bug\nsplit over lines")
