"""Writing a profile to a file: format choice by name or extension, and clear I/O errors."""
from __future__ import annotations

import io
import marshal
import os
from typing import TYPE_CHECKING, BinaryIO, Callable, Dict, Optional, Tuple

if TYPE_CHECKING:
    from ._profile import Profile

FORMATS: Tuple[str, ...] = ("chrome", "speedscope", "pstats", "text", "svg")

_EXTENSIONS: Dict[str, str] = {
    ".speedscope.json": "speedscope",
    ".json": "chrome",
    ".pstats": "pstats",
    ".prof": "pstats",
    ".txt": "text",
    ".svg": "svg",
}

DEFAULT_SUFFIX = {"chrome": ".trace.json", "speedscope": ".speedscope.json",
                  "pstats": ".pstats", "text": ".txt", "svg": ".svg"}


class ExportError(OSError):
    """The profile could not be written where asked."""


def format_for(path: str, format: Optional[str] = None) -> str:
    if format is not None:
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
        return format
    lowered = str(path).lower()
    for suffix, name in _EXTENSIONS.items():
        if lowered.endswith(suffix):
            return name
    raise ValueError(f"cannot tell the format from the name {str(path)!r}; pass format= one of "
                     f"{', '.join(FORMATS)} (or use .json, .speedscope.json, .pstats, .txt, .svg)")


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
    elif format == "pstats":
        out.write(marshal.dumps(profile.to_pstats()))
    elif format == "text":
        out.write(profile.summary().encode())
    elif format == "svg":
        out.write(profile.to_svg().encode())
    else:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")


def write(profile: "Profile", path: "os.PathLike[str] | str", format: Optional[str] = None,
          progress: Progress = None) -> str:
    """Writes the profile; returns the absolute path. Raises ExportError on I/O failure.
    ``progress`` (event outputs only) is called with the calls written so far after each
    1 MiB.

    The file is written under a temporary name next to ``path`` and renamed at the end,
    so an interrupted export never leaves a partial file under the final name."""
    path = os.fspath(path)
    fmt = format_for(path, format)
    folder, base = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{base}.{os.getpid()}.partial")
    try:
        try:
            with open(tmp, "wb") as fh:
                _write_to(profile, fmt, fh, progress)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise ExportError(exc.errno, f"cannot write the profile to {path!r}: "
                          f"{exc.strerror or exc}") from exc
    return os.path.abspath(path)
