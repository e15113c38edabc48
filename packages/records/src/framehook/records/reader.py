"""Reading and writing record files. Loading validates everything and executes nothing."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from . import container
from .errors import RecordError, RecordFormatError
from .limits import DEFAULT, Limits
from .model import Record, from_document


def dumps(rec: Record, *, compress: bool = True) -> bytes:
    return container.pack(rec.to_document(), compress=compress)


def save(rec: Record, path: "str | os.PathLike", *, compress: bool = True) -> str:
    """Write ``rec`` to ``path`` atomically; returns the path.

    The bytes go to a new temporary file in the same directory, created exclusively (a
    file or symlink planted under any name is never written through), flushed to disk,
    then renamed over ``path``: readers see the old record or the new one, never part of
    one, and a symlink at ``path`` is replaced, not followed."""
    path = os.fspath(path)
    data = dumps(rec, compress=compress)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())  # mkstemp makes it private (0600)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        # a full disk or an interrupt leaves neither a partial record nor the temp file
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _sync_directory(folder)
    rec.path = path
    return path


def _umask() -> int:
    """The process's umask, read without changing it (Linux), else the usual 022."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _sync_directory(folder: str) -> None:
    """Make the rename itself durable; some file systems cannot, which is not an error."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _limits(limits: Limits | None, max_bytes: int | None) -> Limits:
    if limits is None:
        limits = DEFAULT
    elif not isinstance(limits, Limits):
        raise TypeError(f"limits: expected a framehook.records.Limits, got {type(limits).__name__}")
    return limits if max_bytes is None else limits.replace(file_bytes=max_bytes)


def loads(
    data: bytes,
    *,
    path: str | None = None,
    trusted: bool = False,
    max_bytes: int | None = None,
    limits: Limits | None = None,
) -> Record:
    """Parse and validate record bytes. Never imports, unpickles, unmarshals or compiles.

    ``limits`` bounds sizes, node count and depth (see Limits); ``max_bytes`` is a
    shorthand for ``limits.file_bytes``.
    """
    limits = _limits(limits, max_bytes)
    limits.check("file_bytes", len(data), path)
    env = container.unpack(data, path=path, limits=limits)
    doc = env.body
    fmt = doc.get("format")
    if fmt != [env.major, env.minor]:
        raise RecordFormatError(f"body format {fmt!r} disagrees with the header {env.major}.{env.minor}", path)
    if env.minor > container.FORMAT_MINOR:
        # Minor versions only add optional top-level fields: ignore the ones we do not know.
        from .model import top_fields

        doc = {k: v for k, v in doc.items() if k in top_fields(env.major)}
    return from_document(doc, path=path, trusted=trusted, limits=limits)


def load(
    path: "str | os.PathLike", *, trusted: bool = False, max_bytes: int | None = None, limits: Limits | None = None
) -> Record:
    """Read a record file strictly; raise a RecordError subclass naming the file on any problem."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise RecordError("no such file", name) from None
    except OSError as exc:
        raise RecordError(f"cannot open: {exc.strerror or exc}", name) from None
    if stat.S_ISDIR(st.st_mode):
        raise RecordError("is a directory, not a record file", name)
    if not stat.S_ISREG(st.st_mode):
        raise RecordError("not a regular file", name)
    limits = _limits(limits, max_bytes)
    limits.check("file_bytes", st.st_size, name)
    try:
        with open(name, "rb") as fh:
            data = fh.read(limits.file_bytes + 1)  # the file may have grown since stat
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror or exc}", name) from None
    return loads(data, path=name, trusted=trusted, limits=limits)
