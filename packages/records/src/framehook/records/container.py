"""The binary envelope of a record file: fixed header, checksum, optional zlib, JSON body.

Layout (all integers big-endian)::

    0   8  magic  b"\\x89FHREC\\r\\n"
    8   2  format major version
    10  2  format minor version
    12  4  flags (bit 0: body is zlib-compressed; other bits must be 0)
    16  8  stored body length (bytes that follow the header, exactly)
    24  8  decoded body length (after decompression)
    32 32  SHA-256 of the decoded body
    64  .. body

The body is UTF-8 JSON (see FORMAT.md). Every length is checked against limits before
anything is allocated, so a hostile header cannot make the reader read or inflate
unbounded data.
"""

from __future__ import annotations

import hashlib
import json
import itertools
import operator
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Iterator

from .errors import RecordFormatError, RecordVersionError
from .limits import DEFAULT, Limits

MAGIC = b"\x89FHREC\r\n"
FORMAT_MAJOR = 2
FORMAT_MINOR = 0
# zlib level for record bodies: 6 writes within a few per cent of 9's size in a fraction
# of its time (BENCHMARKS.md, record cost)
COMPRESSION_LEVEL = 6
FLAG_ZLIB = 1
_KNOWN_FLAGS = FLAG_ZLIB
_HEADER = struct.Struct(">8sHHIQQ32s")
HEADER_SIZE = _HEADER.size  # 64

MAX_FILE_BYTES = DEFAULT.file_bytes
MAX_BODY_BYTES = DEFAULT.body_bytes
_INFLATE_CHUNK = 1 << 16
# A JSON string (skipped: its brackets and commas are data), an opening bracket, a closing
# one, or a separator; every value and key but the first follows one of "[ { , :".
_SHAPE_CHUNK = 1 << 20
_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_NOT_BRACKET = bytes(set(range(256)) - set(b"[]{}"))


@dataclass(frozen=True)
class Envelope:
    major: int
    minor: int
    body: dict


def pack(document: dict, *, compress: bool = True) -> bytes:
    """Serialise a record document (already made of JSON types) into file bytes."""
    # sort_keys gives byte-identical files for identical records (diffable goldens).
    body = json.dumps(document, sort_keys=True, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode(
        "ascii"
    )
    digest = hashlib.sha256(body).digest()
    stored = zlib.compress(body, COMPRESSION_LEVEL) if compress else body
    flags = FLAG_ZLIB if compress else 0
    major, minor = document.get("format", (FORMAT_MAJOR, FORMAT_MINOR))
    header = _HEADER.pack(MAGIC, major, minor, flags, len(stored), len(body), digest)
    return header + stored


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _no_duplicates(pairs: list) -> dict:
    seen: set = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen.add(key)
    return dict(pairs)


def _keys(document: Any) -> int:
    """Object keys in a parsed document, counted without recursion."""
    total, stack = 0, [document]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            total += len(node)
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
    return total


def _inflate(stored: memoryview, body_len: int, path: str | None) -> bytearray:
    """Decompress input slice by slice; the output may never pass the declared length."""
    inflater = zlib.decompressobj()
    body = bytearray()
    fed = 0
    try:
        for at in range(0, len(stored), _INFLATE_CHUNK):
            fed = at + _INFLATE_CHUNK
            # max_length caps the allocation: a zip bomb stops at body_len + 1 bytes.
            body += inflater.decompress(stored[at : at + _INFLATE_CHUNK], body_len + 1 - len(body))
            if inflater.unconsumed_tail or len(body) > body_len or inflater.eof:
                break
    except zlib.error as exc:
        raise RecordFormatError(f"corrupt compressed body ({exc})", path) from None
    if (
        len(body) != body_len
        or not inflater.eof
        or inflater.unconsumed_tail
        or inflater.unused_data
        or fed < len(stored)
    ):
        raise RecordFormatError("compressed body does not match its declared length", path)
    return body


def check_shape(body: "bytes | bytearray", limits: Limits, path: str | None) -> int:
    """Count JSON nodes and nesting depth before json builds any object; return the number
    of object keys (colons outside strings), which the parsed document must have too.

    Nodes are values and object keys (an empty array or object counts one). Every step
    runs at C speed (bytes.replace, split, join, count, translate, itertools), so a
    hostile body costs a few passes over its bytes and never a Python-level loop per
    token.
    """
    # Chunk by chunk: escapes are neutralised, the chunk is split at quotes and only the
    # parts outside strings (every other part, by quote parity) are counted. Memory stays
    # in proportion to the chunk, and counting stops at the first chunk past a limit.
    nodes, depth, inside, colons = 1, 0, False, 0
    for chunk in _chunks(body):
        parts = chunk.replace(b"\\\\", b"__").replace(b'\\"', b"__").split(b'"')
        outside = b"".join(parts[1::2] if inside else parts[0::2])
        if len(parts) % 2 == 0:  # an odd number of quotes flips the state
            inside = not inside
        opening = outside.count(b"[") + outside.count(b"{")
        chunk_colons = outside.count(b":")
        colons += chunk_colons
        if depth + opening <= limits.depth:
            # cannot pass the depth limit here: only the running depth is needed
            depth += opening - outside.count(b"]") - outside.count(b"}")
            if depth < 0:
                raise RecordFormatError("body is not valid JSON (a closing bracket without its opening one)", path)
        else:
            steps = outside.translate(_BRACKET_STEPS, _NOT_BRACKET)
            # Openers count 2 and closers 0, so (running sum - position) is the depth change.
            low, high = _extremes(map(operator.sub, itertools.accumulate(steps), itertools.count(1)))
            if depth + high > limits.depth:
                raise limits.error("depth", limits.depth + 1, path, partial=True)
            if depth + low < 0:
                raise RecordFormatError("body is not valid JSON (a closing bracket without its opening one)", path)
            depth += 2 * steps.count(2) - len(steps)
        nodes += opening + outside.count(b",") + chunk_colons
        if nodes > limits.nodes:
            raise limits.error("nodes", limits.nodes + 1, path, partial=True)
    return colons


def _chunks(body: "bytes | bytearray") -> Iterator[bytes]:
    """Slices of about _SHAPE_CHUNK bytes, never splitting a backslash escape."""
    start, size = 0, len(body)
    while start < size:
        end = min(start + _SHAPE_CHUNK, size)
        while end < size and body[end - 1] == 0x5C:
            end += 1
        yield bytes(body[start:end])
        start = end


def _extremes(values: Iterator[int]) -> tuple[int, int]:
    low = high = next(values)
    for chunk in iter(lambda: list(itertools.islice(values, 65536)), []):
        low, high = min(low, min(chunk)), max(high, max(chunk))
    return low, high


def unpack(data: bytes, *, path: str | None = None, limits: Limits = DEFAULT) -> Envelope:
    """Check the envelope and parse the body; raise RecordFormatError on anything odd."""
    if len(data) < HEADER_SIZE:
        if not data.startswith(MAGIC[: len(data)]) or not data:
            raise RecordFormatError("not a framehook record (bad magic)" if data else "empty file", path)
        raise RecordFormatError(f"truncated header ({len(data)} of {HEADER_SIZE} bytes)", path)
    magic, major, minor, flags, stored_len, body_len, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise RecordFormatError("not a framehook record (bad magic)", path)
    if major > FORMAT_MAJOR:
        raise RecordVersionError(
            f"record format {major}.{minor} is newer than this reader ({FORMAT_MAJOR}.{FORMAT_MINOR}); "
            "upgrade framehook to replay it",
            path,
        )
    if major < 1:
        raise RecordVersionError(f"unknown record format version {major}.{minor}", path)
    if flags & ~_KNOWN_FLAGS:
        raise RecordFormatError(f"unknown header flags 0x{flags:x}", path)
    limits.check("body_bytes", body_len, path)
    actual = len(data) - HEADER_SIZE
    if stored_len != actual:
        what = "truncated" if stored_len > actual else "trailing data after"
        raise RecordFormatError(f"{what} body: header declares {stored_len} bytes, file has {actual}", path)
    stored = memoryview(data)[HEADER_SIZE:]
    if flags & FLAG_ZLIB:
        body: "bytes | bytearray" = _inflate(stored, body_len, path)
    else:
        if stored_len != body_len:
            raise RecordFormatError("uncompressed body length mismatch", path)
        body = bytes(stored)
    if hashlib.sha256(body).digest() != digest:
        raise RecordFormatError("checksum mismatch (file corrupted or edited)", path)
    keys = check_shape(body, limits, path)
    try:
        text = str(body, "utf-8")
        document = json.loads(text, parse_constant=_reject_constant)
        if _keys(document) != keys:
            # a key given twice was silently merged: parse again to name it (rare, slow path)
            json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
            raise ValueError("duplicate key")
    except RecursionError:
        raise RecordFormatError("body nests too deeply", path) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordFormatError(f"body is not valid JSON ({exc})", path) from None
    if not isinstance(document, dict):
        raise RecordFormatError("body is not a JSON object", path)
    return Envelope(major, minor, document)
