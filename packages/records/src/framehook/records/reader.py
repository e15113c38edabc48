"""Reading and writing record files. Loading validates everything and executes nothing."""
from __future__ import annotations

import os
import stat

from . import container
from .errors import RecordError, RecordFormatError, RecordTooLargeError
from .model import Record, from_document


def dumps(rec: Record, *, compress: bool = True) -> bytes:
    return container.pack(rec.to_document(), compress=compress)


def save(rec: Record, path: "str | os.PathLike", *, compress: bool = True) -> str:
    """Write ``rec`` to ``path`` atomically (temp file + rename); returns the path."""
    path = os.fspath(path)
    data = dumps(rec, compress=compress)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
    rec.path = path
    return path


def loads(data: bytes, *, path: str | None = None, trusted: bool = False,
          max_bytes: int = container.MAX_FILE_BYTES) -> Record:
    """Parse and validate record bytes. Never imports, unpickles, unmarshals or compiles."""
    if len(data) > max_bytes:
        raise RecordTooLargeError(f"file of {len(data)} bytes exceeds the limit of {max_bytes}", path)
    env = container.unpack(data, path=path, max_body=max(max_bytes * 4, container.MAX_BODY_BYTES))
    doc = env.body
    fmt = doc.get("format")
    if fmt != [env.major, env.minor]:
        raise RecordFormatError(f"body format {fmt!r} disagrees with the header {env.major}.{env.minor}", path)
    if env.minor > container.FORMAT_MINOR:
        # Minor versions only add optional top-level fields: ignore the ones we do not know.
        from .model import _TOP
        doc = {k: v for k, v in doc.items() if k in _TOP}
    return from_document(doc, path=path, trusted=trusted)


def load(path: "str | os.PathLike", *, trusted: bool = False,
         max_bytes: int = container.MAX_FILE_BYTES) -> Record:
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
    if st.st_size > max_bytes:
        raise RecordTooLargeError(f"file of {st.st_size} bytes exceeds the limit of {max_bytes}", name)
    try:
        with open(name, "rb") as fh:
            data = fh.read(max_bytes + 1)   # the file may have grown since stat
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror or exc}", name) from None
    return loads(data, path=name, trusted=trusted, max_bytes=max_bytes)
