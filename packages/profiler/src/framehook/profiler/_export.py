"""Writing a profile to a file: format choice by name or extension, and clear I/O errors."""
from __future__ import annotations

import json
import marshal
import os
from typing import TYPE_CHECKING, Dict, Optional, Tuple

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
    if format == "chrome":
        return json.dumps(profile.to_chrome(), separators=(",", ":")).encode()
    if format == "speedscope":
        return json.dumps(profile.to_speedscope(), separators=(",", ":")).encode()
    if format == "pstats":
        return marshal.dumps(profile.to_pstats())
    if format == "text":
        return profile.summary().encode()
    if format == "svg":
        return profile.to_svg().encode()
    raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")


def write(profile: "Profile", path: "os.PathLike[str] | str", format: Optional[str] = None) -> str:
    """Writes the profile; returns the absolute path. Raises ExportError on I/O failure."""
    path = os.fspath(path)
    data = render(profile, format_for(path, format))
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise ExportError(exc.errno, f"cannot write the profile to {path!r}: "
                          f"{exc.strerror or exc}") from exc
    return os.path.abspath(path)
