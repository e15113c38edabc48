"""Writing a profile to a file: format choice by name or extension, clear I/O errors, and
a file that appears under its name only once complete."""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import marshal
import os
from typing import TYPE_CHECKING, BinaryIO, Callable, Dict, Iterator, Optional, Tuple

if TYPE_CHECKING:
    from ._profile import Profile

FORMATS: Tuple[str, ...] = (
    "chrome",
    "speedscope",
    "gecko",
    "pstats",
    "text",
    "svg",
    "html",
    "collapsed",
    "collapsed-calls",
)

_EXTENSIONS: Dict[str, str] = {
    ".speedscope.json": "speedscope",
    ".gecko.json": "gecko",
    ".json": "chrome",
    ".pstats": "pstats",
    ".prof": "pstats",
    ".txt": "text",
    ".svg": "svg",
    ".html": "html",
    ".calls.folded": "collapsed-calls",
    ".folded": "collapsed",
}

DEFAULT_SUFFIX = {
    "chrome": ".trace.json",
    "speedscope": ".speedscope.json",
    "gecko": ".gecko.json",
    "pstats": ".pstats",
    "text": ".txt",
    "svg": ".svg",
    "html": ".html",
    "collapsed": ".folded",
    "collapsed-calls": ".calls.folded",
}


class ExportError(OSError):
    """The profile could not be written where asked. Its ``errno`` is the system's; its
    message (``strerror``, and str()) says what could not be written and why."""

    def __str__(self) -> str:
        return str(self.strerror)  # (not OSError's "[Errno 13] ...": the message is whole)


class DirectoryNotWritable(OSError):
    """No new file can be made in the directory the profile goes to. Every write makes
    one there (the temporary file renamed into place), so this refuses the path even
    when the file itself exists and is writable. ``filename`` is the directory."""

    def __str__(self) -> str:
        return f"directory {self.filename} is not writable ({self.strerror})"


# Errors of making a file in a directory that are the directory's (not the file's) doing:
# no write (or search) permission, a read-only file system.
_DIRECTORY_ERRORS = (errno.EACCES, errno.EPERM, errno.EROFS)


def failure_reason(exc: OSError) -> str:
    """Why a path could not be written, in a few words: the directory when it is the
    directory's fault, else the system's message."""
    if isinstance(exc, DirectoryNotWritable):
        return str(exc)
    return exc.strerror or str(exc)


def format_for(path: str, format: Optional[str] = None) -> str:
    if format is not None:
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
        return format
    lowered = str(path).lower()
    for suffix, name in _EXTENSIONS.items():
        if lowered.endswith(suffix):
            return name
    raise ValueError(
        f"cannot tell the format from the name {str(path)!r}; pass format= one of "
        f"{', '.join(FORMATS)} (or use .json, .speedscope.json, .gecko.json, .pstats, .txt, .svg, .html, .folded, .calls.folded)"
    )


def render(profile: "Profile", format: str) -> bytes:
    out = io.BytesIO()
    _write_to(profile, format, out)
    return out.getvalue()


Progress = Optional[Callable[[int], None]]


def _write_to(profile: "Profile", format: str, out: BinaryIO, progress: Progress = None) -> None:
    if format == "chrome":
        from ._chrome import write_chrome

        write_chrome(profile, out, progress)
    elif format == "speedscope":
        from ._speedscope import write_speedscope

        write_speedscope(profile, out, progress=progress)
    elif format == "gecko":
        from ._gecko import write_gecko

        write_gecko(profile, out)
    elif format == "pstats":
        out.write(marshal.dumps(profile.to_pstats()))
    elif format == "text":
        out.write(profile.summary().encode())
    elif format == "svg":
        out.write(profile.to_svg().encode())
    elif format == "html":
        from ._html import write_html

        write_html(profile, out)
    elif format in ("collapsed", "collapsed-calls"):
        from ._collapsed import WEIGHTS, write_collapsed

        write_collapsed(profile, out, WEIGHTS[format])
    else:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")


def write(
    profile: "Profile", path: "os.PathLike[str] | str", format: Optional[str] = None, progress: Progress = None
) -> str:
    """Writes the profile; returns the absolute path. Raises ExportError on I/O failure.
    ``progress`` (event outputs only) is called with the calls written so far after each
    1 MiB.

    The file is written under a temporary name next to ``path`` and renamed at the end
    (replacing()), so an interrupted export never leaves a partial file under the final
    name."""
    path = os.fspath(path)
    fmt = format_for(path, format)
    try:
        with replacing(path) as fh:
            _write_to(profile, fmt, fh, progress)
    except OSError as exc:
        raise ExportError(exc.errno, f"cannot write the profile to {path!r}: {failure_reason(exc)}") from exc
    return os.path.abspath(path)


def check_writable(path: str) -> None:
    """Raises OSError unless a file can be written at ``path`` as write() writes it (a
    temporary file in the same directory, then renamed), leaving nothing behind."""
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a directory")
    fd, temp = _temporary(path)
    os.close(fd)
    os.unlink(temp)


@contextlib.contextmanager
def replacing(path: str) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content to: written under a temporary name in
    the same directory, renamed to ``path`` only if the block completes, deleted otherwise
    (an exception, Ctrl-C). Killed outright, the process leaves at most the temporary
    file, never a partial one under ``path``."""
    fd, temp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.chmod(temp, _mode_for(path))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _temporary(path: str) -> Tuple[int, str]:
    """A new file (0600) next to ``path``, open for writing: (fd, its path). (Not tempfile,
    whose import alone costs a command line's run a tenth of its start-up.) Raises
    DirectoryNotWritable when the directory refuses new files."""
    directory, name = os.path.split(os.path.abspath(path))
    keep = len(name)  # of the name, in the temporary one: fewer if that is too long
    for attempt in itertools.count():
        temp = os.path.join(directory, f".{name[:keep]}.{os.getpid()}.{attempt}.part")
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), temp
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno in _DIRECTORY_ERRORS:
                raise DirectoryNotWritable(exc.errno, exc.strerror, directory) from exc
            if exc.errno == errno.ENAMETOOLONG and keep > 0:
                keep //= 2  # a name that fits may not with the temporary name's additions
                continue
            raise
    raise AssertionError("unreachable")


def _mode_for(path: str) -> int:
    """The mode a plain open() would leave: the file's own if it exists, else 0666 less
    the umask (mkstemp makes the temporary file 0600)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o22)  # (read by setting it: put straight back)
        os.umask(_UMASK)
    return 0o666 & ~_UMASK


_UMASK: Optional[int] = None
