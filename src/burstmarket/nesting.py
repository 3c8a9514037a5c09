"""How deep a client's JSON may nest: one check for request bodies (api/bodies.py) and feed
messages (feed/protocol.py), made on the text before anything decodes it.

msgspec, like any JSON decoder, recurses once per array or object it enters; a text nested a
thousand deep ran it out of stack (a RecursionError, a 500 or a dropped connection) instead of
being refused. No message of the contract nests more than a few levels, so MAX_NESTING leaves
room for any node_spec an operator writes, and the check costs nothing for a text with fewer
brackets than that (docs/api.md "Limits").
"""

from __future__ import annotations

from burstmarket.errors import Invalid

MAX_NESTING = 32
"""Arrays and objects open at once, at most."""

_OPENERS = frozenset(b"[{")
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")


def nested_too_deep(text: str | bytes) -> bool:
    """Whether `text` opens more than MAX_NESTING arrays and objects at once, outside strings
    (counted the way a decoder would meet them, malformed or not)."""
    if _brackets_open(text) <= MAX_NESTING:
        return False
    raw = text.encode() if isinstance(text, str) else text
    # Strings may hold brackets: drop escaped backslashes and quotes, then every "..." span.
    unquoted = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unquoted.split(b'"')[::2])
    depth = 0
    for byte in outside.translate(None, _NOT_BRACKETS):
        if byte in _OPENERS:
            depth += 1
            if depth > MAX_NESTING:
                return True
        else:
            depth -= 1
    return False


def _brackets_open(text: str | bytes) -> int:
    """Every `[` and `{`, in strings too: an upper bound of the depth, counted at C speed."""
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def check_nesting(text: str | bytes, field: str) -> None:
    """Invalid naming `field` (the body, the frame) when `text` nests too deep."""
    if nested_too_deep(text):
        raise Invalid(field, f"nests arrays and objects more than {MAX_NESTING} deep")
