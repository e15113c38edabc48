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
import struct
import zlib
from dataclasses import dataclass
from typing import Any

from .errors import RecordFormatError, RecordTooLargeError, RecordVersionError

MAGIC = b"\x89FHREC\r\n"
FORMAT_MAJOR = 1
FORMAT_MINOR = 0
FLAG_ZLIB = 1
_KNOWN_FLAGS = FLAG_ZLIB
_HEADER = struct.Struct(">8sHHIQQ32s")
HEADER_SIZE = _HEADER.size  # 64

# Defaults; the reader takes overrides for unusual records.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_BODY_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class Envelope:
    major: int
    minor: int
    body: dict


def pack(document: dict, *, compress: bool = True) -> bytes:
    """Serialise a record document (already made of JSON types) into file bytes."""
    # sort_keys gives byte-identical files for identical records (diffable goldens).
    body = json.dumps(document, sort_keys=True, ensure_ascii=True, allow_nan=False,
                      separators=(",", ":")).encode("ascii")
    digest = hashlib.sha256(body).digest()
    stored = zlib.compress(body, 9) if compress else body
    flags = FLAG_ZLIB if compress else 0
    header = _HEADER.pack(MAGIC, FORMAT_MAJOR, FORMAT_MINOR, flags, len(stored), len(body), digest)
    return header + stored


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _no_duplicates(pairs: list) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def unpack(data: bytes, *, path: str | None = None, max_body: int = MAX_BODY_BYTES) -> Envelope:
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
            "upgrade framehook to replay it", path)
    if major < 1:
        raise RecordVersionError(f"unknown record format version {major}.{minor}", path)
    if flags & ~_KNOWN_FLAGS:
        raise RecordFormatError(f"unknown header flags 0x{flags:x}", path)
    if body_len > max_body:
        raise RecordTooLargeError(f"declared body of {body_len} bytes exceeds the limit of {max_body}", path)
    actual = len(data) - HEADER_SIZE
    if stored_len != actual:
        what = "truncated" if stored_len > actual else "trailing data after"
        raise RecordFormatError(f"{what} body: header declares {stored_len} bytes, file has {actual}", path)
    stored = data[HEADER_SIZE:]
    if flags & FLAG_ZLIB:
        inflater = zlib.decompressobj()
        try:
            # max_length bounds the allocation: a zip bomb stops at body_len + 1 bytes.
            body = inflater.decompress(stored, body_len + 1)
        except zlib.error as exc:
            raise RecordFormatError(f"corrupt compressed body ({exc})", path) from None
        if len(body) != body_len or not inflater.eof or inflater.unconsumed_tail or inflater.unused_data:
            raise RecordFormatError("compressed body does not match its declared length", path)
    else:
        if stored_len != body_len:
            raise RecordFormatError("uncompressed body length mismatch", path)
        body = stored
    if hashlib.sha256(body).digest() != digest:
        raise RecordFormatError("checksum mismatch (file corrupted or edited)", path)
    try:
        text = body.decode("utf-8")
        document = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise RecordFormatError("body nests too deeply", path) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordFormatError(f"body is not valid JSON ({exc})", path) from None
    if not isinstance(document, dict):
        raise RecordFormatError("body is not a JSON object", path)
    return Envelope(major, minor, document)
