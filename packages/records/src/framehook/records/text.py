"""Text taken from a record, made safe to print on a terminal or in a log."""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` with every non-printable character written as a Python escape (``\\x1b``,
    ``\\n``, ``\\u202e``...): control characters, line and paragraph separators and format
    characters such as bidirectional overrides. A record's label or message can then
    neither start a new line of output nor move the cursor or hide text."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
