"""The 3.11+ exception table: parse and encode (varints of 6-bit chunks, most significant first)."""

from __future__ import annotations

from typing import Iterator, List, NamedTuple

__all__ = ["RawExnEntry", "parse_exception_table", "encode_exception_table"]


class RawExnEntry(NamedTuple):
    start: int  # byte offset of the first covered code unit
    end: int  # byte offset just past the last covered code unit
    target: int  # byte offset of the handler
    depth: int
    lasti: bool


def _read_varint(first: int, rest: Iterator[int]) -> int:
    b = first
    value = b & 63
    while b & 64:
        b = next(rest)
        value = (value << 6) | (b & 63)
    return value


def parse_exception_table(data: bytes) -> List[RawExnEntry]:
    entries: List[RawExnEntry] = []
    it = iter(data)
    for first in it:
        start = _read_varint(first, it) * 2
        length = _read_varint(next(it), it) * 2
        target = _read_varint(next(it), it) * 2
        dl = _read_varint(next(it), it)
        entries.append(RawExnEntry(start, start + length, target, dl >> 1, bool(dl & 1)))
    return entries


def _write_varint(out: bytearray, value: int, mark_start: bool) -> None:
    chunks = [value & 63]
    value >>= 6
    while value:
        chunks.append(value & 63)
        value >>= 6
    chunks.reverse()
    for i, chunk in enumerate(chunks):
        b = chunk | (64 if i < len(chunks) - 1 else 0)
        if i == 0 and mark_start:
            b |= 128
        out.append(b)


def encode_exception_table(entries: List[RawExnEntry]) -> bytes:
    out = bytearray()
    for e in entries:
        _write_varint(out, e.start // 2, True)
        _write_varint(out, (e.end - e.start) // 2, False)
        _write_varint(out, e.target // 2, False)
        _write_varint(out, (e.depth << 1) | int(e.lasti), False)
    return bytes(out)
