"""Where kernels are cached on disk, and what happens when that place is not usable.

The cache directory holds the generated kernel sources (``fh_<key>.py``), numba's own
cache beside them (``__pycache__``) and framehook's marker files (``fh_<key>.<tag>.<kind>``:
verdicts about one kernel, each starting with ``MARK``). A directory that cannot be
created or written (a file in its place, a read-only disk), or a corrupt entry (garbage
in numba's index or in a marker), is ignored: the kernel is compiled without caching, and
ONE ``NumbaCacheWarning`` per process says so (``warnings.warn``; filter it by category).
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Optional, Set

__all__ = ["NumbaCacheWarning", "cache_dir", "usable_dir", "write_once", "read_marker", "write_marker", "warn_once"]

#: the first line of every marker file framehook writes: anything else is a corrupt marker
MARK = "framehook-numba-marker 1\n"


class NumbaCacheWarning(UserWarning):
    """The numba backend's on-disk cache is not usable (unwritable or corrupt): ignored."""


def cache_dir() -> str:
    """Where generated kernel sources and numba's cached machine code live."""
    given = os.environ.get("FRAMEHOOK_NUMBA_CACHE_DIR")
    if given:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "framehook", "numba")


_lock = threading.Lock()
_warned = False
_checked: dict = {}  # directory -> usable (checked once per process and directory)


def warn_once(why: str) -> None:
    """Say once per process that the cache is ignored (the first reason found)."""
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    warnings.warn(
        f"framehook's numba cache is ignored ({why}); kernels are compiled without it", NumbaCacheWarning, stacklevel=2
    )


def usable_dir() -> Optional[str]:
    """The cache directory if it can be created and written, else None (after one warning)."""
    path = cache_dir()
    ok = _checked.get(path)
    if ok is None:
        try:
            os.makedirs(path, exist_ok=True)
            probe = os.path.join(path, f".probe.{os.getpid()}.{threading.get_ident()}")
            with open(probe, "w") as f:
                f.write("")
            os.remove(probe)
            ok = True
        except OSError as e:
            ok = False
            warn_once(f"{path} cannot be written: {type(e).__name__}: {e.strerror or e}")
        _checked[path] = ok
    return path if ok else None


def write_once(path: str, text: str, replace: bool = False) -> None:
    """Write a file once, atomically (numba's cache stamps the source's mtime: never touch
    it again; a process killed mid-write leaves only a temporary file, never half a file);
    ``replace``: write it even if it exists (a marker found corrupt)."""
    if not replace and os.path.exists(path):
        return
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_marker(path: str, text: str) -> None:
    try:
        write_once(path, MARK + text, replace=True)
    except OSError:  # a read-only cache: the verdict is made again next time
        pass


def read_marker(path: str) -> Optional[str]:
    """A marker's text; None when there is none, or it is corrupt (then warned once)."""
    if usable_dir() is None:  # warned once, saying why
        return None
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        warn_once(f"{path} cannot be read: {type(e).__name__}")
        return None
    if not text.startswith(MARK):
        warn_once(f"{os.path.basename(path)} is corrupt")
        return None
    return text[len(MARK) :]


def _reset_for_tests(seen: Optional[Set[str]] = None) -> None:
    global _warned
    _warned = False
    _checked.clear()
