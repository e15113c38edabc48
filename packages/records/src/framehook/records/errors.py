"""Errors raised while reading, writing and rebuilding execution records."""

from __future__ import annotations


class RecordError(Exception):
    """Base class: a record could not be written, read or rebuilt.

    The message always names the file (when there is one) and what was wrong, so the
    CLI can print it as one line without a traceback.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)


class RecordFormatError(RecordError):
    """The file is not a well-formed record: bad magic, truncated, corrupt, bad schema."""


class RecordVersionError(RecordError):
    """The record was written by a newer (or unknown) major version of the format."""


class RecordTooLargeError(RecordFormatError):
    """A declared or actual size is above the reader's limits."""


class RecordLimitError(RecordTooLargeError):
    """A resource limit (see framehook.records.Limits) was exceeded while decoding."""

    def __init__(
        self,
        limit: str,
        value: int,
        maximum: int,
        path: str | None = None,
        *,
        partial: bool = False,
        default: int | None = None,
    ) -> None:
        # partial: counting stopped at the first value past the limit (the real total is larger).
        # default: the limit's default, to say whether the caller lowered it.
        self.limit = limit
        self.value = value
        self.maximum = maximum
        self.default = default
        super().__init__(_limit_text(limit, value, maximum, partial, default), path)


def _limit_text(limit: str, value: int, maximum: int, partial: bool, default: int | None) -> str:
    head = (
        f"{limit} exceeds the limit of {maximum} (counting stopped at {value})"
        if partial
        else f"{limit} {value} exceeds the limit of {maximum}"
    )
    if default is not None and maximum < default:
        tail = f"lowered by the caller from the default {default}"
    else:
        tail = f"raise it with limits= or --limit {limit}=N"
    return f"{head}; {tail}"


class UnsafeBindingError(RecordFormatError):
    """The record binds a name to something its code does not show: a builtins entry that
    names anything but the builtin of that name (see FORMAT.md, "Which names replay binds")."""


class UntrustedRecordError(RecordError):
    """The record holds a pickle payload and the caller did not pass trusted=True."""


class SourceUnavailableError(RecordError):
    """The recorded code cannot be rebuilt on this interpreter (no source, or it fails to compile)."""


class SourceLimitError(RecordLimitError, SourceUnavailableError):
    """The recorded source is refused before it reaches ``compile()``: compiling it could
    crash this interpreter or cost more than the limits allow (see sourcescan)."""

    def __init__(
        self,
        limit: str,
        value: int,
        maximum: int,
        filename: str,
        line: int | None,
        path: str | None = None,
        *,
        partial: bool = False,
        default: int | None = None,
    ) -> None:
        super().__init__(limit, value, maximum, path, partial=partial, default=default)
        where = f" (line {line})" if line is not None else ""
        RecordError.__init__(
            self, f"the recorded source of {filename} is refused before compiling{where}: {self.reason}", path
        )


class NewerPythonError(SourceUnavailableError):
    """The record comes from a Python newer than this reader can rebuild code for."""


class UntrustedBytecodeError(SourceUnavailableError):
    """Only the recorded bytecode could be run (no usable source) and the caller did not
    pass trust_bytecode=True: nothing can show that bytecode does what the record says."""


class InvalidBytecodeError(SourceUnavailableError):
    """The recorded bytecode failed the static checks run before trusted bytecode is used
    (see framehook.records.bytecheck); it is refused rather than run."""
