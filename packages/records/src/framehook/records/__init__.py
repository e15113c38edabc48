"""Execution records: record a frame once, replay it on any CPython 3.9-3.15.

    rec = record(fn, *args, path="bug.fhrec", **kwargs)
    result = replay("bug.fhrec")        # ReplayResult; result.ok, result.report()

Loading a record (``load``) validates it strictly and never runs code from it; replaying
runs the recorded code, by design. See FORMAT.md for the file format.
"""

from __future__ import annotations

from .calls import record_calls
from .codec import Missing, MissingValueError
from .errors import (
    InvalidBytecodeError,
    NewerPythonError,
    RecordError,
    RecordFormatError,
    RecordLimitError,
    RecordTooLargeError,
    RecordVersionError,
    SourceUnavailableError,
    UntrustedBytecodeError,
    UntrustedRecordError,
)
from .limits import Limits
from .model import Record
from .reader import dumps, load, loads, save
from .recorder import record, record_call
from .registry import register_codec, registered_codecs, unregister_codec
from .replay import ModeResult, ReplayResult, replay, replay_record

__all__ = [
    "InvalidBytecodeError",
    "Limits",
    "Missing",
    "MissingValueError",
    "ModeResult",
    "NewerPythonError",
    "Record",
    "RecordError",
    "RecordFormatError",
    "RecordLimitError",
    "RecordTooLargeError",
    "RecordVersionError",
    "ReplayResult",
    "SourceUnavailableError",
    "UntrustedBytecodeError",
    "UntrustedRecordError",
    "dumps",
    "load",
    "loads",
    "record",
    "record_call",
    "record_calls",
    "register_codec",
    "registered_codecs",
    "replay",
    "replay_record",
    "save",
    "unregister_codec",
]
