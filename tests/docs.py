"""The code blocks of the README and the docs pages, as the tests that run them read them.

A page is a path from the repository's root (`README.md`, `docs/client.md`); a section is a
heading line as written (`## Base load`), and reaches to the next heading of the same or a
higher level. tests/test_docs.py checks that every block a reader would run is run by a test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).parents[1]
PAGES = ("README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
HEADING = re.compile(r"^(#+) .*$", re.M)


@dataclass(frozen=True)
class Block:
    page: str
    section: str  # the nearest heading above the block
    language: str  # the fence's info string; "" when it has none
    code: str


def page_blocks(page: str) -> list[Block]:
    text = (REPO / page).read_text()
    found = []
    for fence in FENCE.finditer(text):
        headings = HEADING.findall(text, 0, fence.start())
        above = [m.group(0) for m in HEADING.finditer(text, 0, fence.start())]
        found.append(Block(page, above[-1] if headings else "", fence.group(1), fence.group(2)))
    return found


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in page_blocks(page)]


def section_text(page: str, section: str) -> str:
    """The text under the heading `section` up to the next heading of its level or higher."""
    text = (REPO / page).read_text()
    level = len(section.split(" ", 1)[0])
    body = text.split(section + "\n", 1)[1]
    end = re.search(rf"^#{{1,{level}}} ", body, re.M)
    return body[: end.start()] if end else body


def code(page: str, language: str, section: str | None = None) -> list[str]:
    """The blocks of `language` on `page` (under `section` if given), in order."""
    text = section_text(page, section) if section else (REPO / page).read_text()
    return [m.group(2) for m in FENCE.finditer(text) if m.group(1) == language]
