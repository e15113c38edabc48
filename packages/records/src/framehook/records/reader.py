"""Reading and writing record files. Loading validates everything and executes nothing."""

from __future__ import annotations

import contextlib
import os
import stat
import secrets

from . import container
from .errors import RecordError, RecordFormatError
from .limits import DEFAULT, Limits
from .model import Record, from_document


def dumps(rec: Record, *, compress: bool = True) -> bytes:
    return container.pack(rec.to_document(), compress=compress)


def save(rec: Record, path: "str | os.PathLike", *, compress: bool = True, durable: bool = True) -> str:
    """Write ``rec`` to ``path`` atomically; returns the path.

    The bytes go to a new temporary file in the same directory, created exclusively (a
    file or symlink planted under any name is never written through), flushed to disk,
    then renamed over ``path``: readers see the old record or the new one, never part of
    one, and a symlink at ``path`` is replaced, not followed. ``durable=False`` skips the
    two fsyncs (of the file and of its directory), which cost milliseconds per record:
    the write stays atomic, but a machine crash right after may lose it."""
    path = os.fspath(path)
    data = dumps(rec, compress=compress)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = _create_temporary(folder, os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        # a full disk or an interrupt leaves neither a partial record nor the temp file
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    if durable:
        _sync_directory(folder)
    rec.path = path
    return path


def _create_temporary(folder: str, base: str) -> tuple[int, str]:
    """A new file beside the target, created exclusively (never through a planted file or
    symlink) with the mode a plain open() would give it (0666 less the umask)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {base} in {folder}")


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


def file_name(argument: str, path: object) -> str:
    """``path`` as a str, or a TypeError naming the argument of the function called."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{argument}: expected a file name (str, bytes or os.PathLike), got {type(path).__name__}")
    return os.fsdecode(os.fspath(path))


def load(
    path: "str | os.PathLike", *, trusted: bool = False, max_bytes: int | None = None, limits: Limits | None = None
) -> Record:
    """Read a record file strictly; raise a RecordError subclass naming the file on any problem."""
    name = file_name("load(path)", path)
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
