"""Line tables: 3.9 co_lnotab, 3.10 co_linetable, 3.11+ location table. Encoders take one
Positions (or None) per code unit; ``unit_positions`` reads them back from a code object
and ``relocate`` gives a code object other line numbers and another file."""

from __future__ import annotations

import dis
import types
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .behaviour import BEHAVIOUR
from .instructions import Positions

__all__ = [
    "encode_lnotab",
    "encode_linetable_310",
    "encode_location_table",
    "encode",
    "runs",
    "unit_positions",
    "relocate",
]


def unit_positions(code: types.CodeType) -> List[Optional[Positions]]:
    """One Positions (or None) per 2-byte code unit."""
    n = len(code.co_code) // 2
    if BEHAVIOUR.line_table_has_columns:
        return [Positions(*p) if p[0] is not None else None for p in code.co_positions()]
    units: List[Optional[Positions]] = [None] * n
    if BEHAVIOUR.line_table_is_ranges:
        for start, end, line in code.co_lines():
            if line is not None:
                for u in range(start // 2, min(end // 2, n)):
                    units[u] = Positions(line, line, None, None)
        return units
    line = None
    starts = dict(dis.findlinestarts(code))
    for u in range(n):
        line = starts.get(2 * u, line)
        units[u] = Positions(line, line, None, None) if line is not None else None
    return units


def _unit_lines(code: types.CodeType) -> List[Optional[int]]:
    """The line of each 2-byte code unit (None: no line), as ``unit_positions`` reads them."""
    if BEHAVIOUR.line_table_has_columns:
        return [p[0] for p in code.co_positions()]
    return [None if p is None else p.lineno for p in unit_positions(code)]


def encode(units: Sequence[Optional[Positions]], firstlineno: int) -> bytes:
    """The line table of this Python for ``units``."""
    if BEHAVIOUR.line_table_has_columns:
        return encode_location_table(units, firstlineno)
    if BEHAVIOUR.line_table_is_ranges:
        return encode_linetable_310(units, firstlineno)
    return encode_lnotab(units, firstlineno)


def relocate(
    code: types.CodeType, line_of: Callable[[int], Optional[int]], filename: str, firstlineno: int
) -> types.CodeType:
    """``code`` (and the code objects among its constants) in ``filename``, each line ``n``
    becoming ``line_of(n)``. Columns are dropped: they belong to the old lines. An instruction
    whose new line is None keeps the line before it (or ``firstlineno``), so a line is never
    reported where there was one."""
    units: List[Optional[Positions]] = []
    prev = firstlineno
    # a graph's code has thousands of units (3.11+ counts inline caches) on a few lines:
    # map each line once and share one Positions per new line
    mapped: Dict[int, Optional[int]] = {}
    made: Dict[int, Positions] = {}
    for old in _unit_lines(code):
        if old is None:
            units.append(None)
            continue
        line = mapped[old] if old in mapped else mapped.setdefault(old, line_of(old))
        prev = prev if line is None else line
        where = made.get(prev)
        if where is None:
            where = made[prev] = Positions(prev, prev, None, None)
        units.append(where)
    consts = tuple(
        relocate(c, line_of, filename, firstlineno) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    # no line before the first: line monitoring (tracers, coverage) on 3.14+ keeps each
    # line as an unsigned offset from co_firstlineno, and an inlined function defined above
    # the frame would come out 256 lines off
    firstlineno = min([firstlineno, *made])
    table = encode(units, firstlineno)
    changes = {"co_lnotab": table} if BEHAVIOUR.line_table_is_lnotab else {"co_linetable": table}
    return code.replace(co_filename=filename, co_firstlineno=firstlineno, co_consts=consts, **changes)


def runs(units: Sequence[Optional[Positions]], key=lambda p: p) -> List[Tuple[Optional[Positions], int]]:
    """Consecutive equal entries as (value, count)."""
    out: List[Tuple[Optional[Positions], int]] = []
    for p in units:
        if out and key(out[-1][0]) == key(p):
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((p, 1))
    return out


def _line(p: Optional[Positions]) -> Optional[int]:
    return None if p is None else p.lineno


def encode_lnotab(units: Sequence[Optional[Positions]], firstlineno: int) -> bytes:
    """3.9: (byte delta, signed line delta) pairs at each line change; no 'no line' value."""
    out = bytearray()
    cur_line = firstlineno
    last_off = 0
    off = 0
    for p in units:
        line = _line(p)
        if line is not None and line != cur_line:
            bdelta = off - last_off
            ldelta = line - cur_line
            while bdelta > 255:
                out += bytes((255, 0))
                bdelta -= 255
            while ldelta > 127:
                out += bytes((bdelta, 127))
                bdelta = 0
                ldelta -= 127
            while ldelta < -128:
                out += bytes((bdelta, 0x80))
                bdelta = 0
                ldelta += 128
            out += bytes((bdelta, ldelta & 0xFF))
            cur_line = line
            last_off = off
        off += 2
    return bytes(out)


def encode_linetable_310(units: Sequence[Optional[Positions]], firstlineno: int) -> bytes:
    """3.10: (byte delta <= 254, signed line delta or -128 for none) per run of one line."""
    out = bytearray()
    prev = firstlineno
    for p, count in runs([_line(u) for u in units]):  # type: ignore[misc]
        line = p  # a line number here
        bdelta = count * 2
        if line is None:
            ldelta = -128
        else:
            ldelta = line - prev
            prev = line
            while ldelta > 127:
                out += bytes((0, 127))
                ldelta -= 127
            while ldelta < -127:
                out += bytes((0, (-127) & 0xFF))
                ldelta += 127
        while bdelta > 254:
            out += bytes((254, ldelta & 0xFF))
            ldelta = -128 if line is None else 0
            bdelta -= 254
        out += bytes((bdelta, ldelta & 0xFF))
    return bytes(out)


def _varint(out: bytearray, value: int) -> None:
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    out.append(value)


def _svarint(out: bytearray, value: int) -> None:
    _varint(out, ((-value) << 1) | 1 if value < 0 else value << 1)


def encode_location_table(units: Sequence[Optional[Positions]], firstlineno: int) -> bytes:
    """3.11+: entries of 1-8 code units; long form (14), no-column form (13) or none (15)."""
    out = bytearray()
    prev = firstlineno
    for p, count in runs(units):
        while count > 0:
            n = min(count, 8)
            count -= n
            if p is None or p.lineno is None:
                out.append(0x80 | (15 << 3) | (n - 1))
                continue
            line = p.lineno
            end_line = p.end_lineno
            if p.col_offset is None or p.end_col_offset is None or end_line is None or end_line < line:
                out.append(0x80 | (13 << 3) | (n - 1))
                _svarint(out, line - prev)
            else:
                out.append(0x80 | (14 << 3) | (n - 1))
                _svarint(out, line - prev)
                _varint(out, end_line - line)
                _varint(out, p.col_offset + 1)
                _varint(out, p.end_col_offset + 1)
            prev = line
    return bytes(out)
