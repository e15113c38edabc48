"""Which frames the translator leaves alone, by file: the standard library, framehook
itself and numpy (their Python code is not user code), plus config.skip_dirs."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import sysconfig
from typing import Optional, Tuple

from ..config import config

__all__ = ["skip_reason", "stdlib_dirs", "framehook_dirs", "prepare"]

#: framehook's packages and numpy: their Python code is not user code
_OWN_PACKAGES = ("framehook.translator", "framehook.runtime", "framehook.profiler", "numpy")
_SITE = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path)).rstrip(os.sep) + os.sep


@functools.lru_cache(maxsize=None)
def stdlib_dirs() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(sorted({_norm(paths[k]) for k in ("stdlib", "platstdlib") if paths.get(k)}))


@functools.lru_cache(maxsize=None)
def framehook_dirs() -> Tuple[str, ...]:
    """framehook's own packages and numpy (found without importing them)."""
    dirs = []
    for name in _OWN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):  # pragma: no cover - a broken install
            spec = None
        for loc in (spec.submodule_search_locations or []) if spec is not None else []:
            dirs.append(_norm(loc))
    return tuple(sorted(set(dirs)))


def _as_written(path: str) -> str:
    return os.path.normcase(os.path.abspath(path)).rstrip(os.sep) + os.sep


@functools.lru_cache(maxsize=None)
def _dirs_as_written() -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(framehook and numpy, standard library) directories before symlinks are resolved:
    the names their modules' code objects carry."""
    paths = sysconfig.get_paths()
    stdlib = {_as_written(paths[k]) for k in ("stdlib", "platstdlib") if paths.get(k)}
    own = set()
    for name in _OWN_PACKAGES:
        module = sys.modules.get(name)
        for loc in getattr(module, "__path__", None) or []:
            own.add(_as_written(loc))
    return tuple(sorted(own)), tuple(sorted(stdlib))


def _reason_as_written(filename: str, skip_stdlib: bool, skip_framehook: bool) -> Optional[str]:
    """The verdict on the file name as written, which needs no file system access (resolving
    symlinks took 70-140 us per file, paid in a first call for every numpy or standard library
    function it meets); None when only the resolved path can tell."""
    path = _as_written(filename)
    own, stdlib = _dirs_as_written()
    if skip_framehook and path.startswith(own):
        return "framehook or numpy internals"
    if skip_stdlib and not any(s in path for s in _SITE) and path.startswith(stdlib):
        return "standard library"
    return None


@functools.lru_cache(maxsize=4096)
def _file_reason(
    filename: str, skip_stdlib: bool, skip_framehook: bool, skip_dirs: Tuple[str, ...], force_dirs: Tuple[str, ...]
) -> Optional[str]:
    if filename.startswith("<") and filename.endswith(">") and filename.startswith("<frozen"):
        return "frozen module"
    if not force_dirs and not skip_dirs:
        reason = _reason_as_written(filename, skip_stdlib, skip_framehook)
        if reason is not None:
            return reason
    path = _norm(filename)
    if any(path.startswith(_norm(d)) for d in force_dirs):
        return None
    if any(path.startswith(_norm(d)) for d in skip_dirs):
        return "in config.skip_dirs"
    if skip_framehook and any(path.startswith(d) for d in framehook_dirs()):
        return "framehook or numpy internals"
    if skip_stdlib and not any(s in path for s in _SITE) and any(path.startswith(d) for d in stdlib_dirs()):
        return "standard library"
    return None


def skip_reason(filename: str) -> Optional[str]:
    """Why frames of ``filename`` are never translated, or None."""
    return _file_reason(
        filename, config.skip_stdlib, config.skip_framehook, tuple(config.skip_dirs), tuple(config.force_dirs)
    )


def prepare() -> None:
    """Find the skipped directories now, once per process, rather than in a first call."""
    stdlib_dirs()
    framehook_dirs()
    _dirs_as_written.cache_clear()  # framehook's packages imported since are included
    _dirs_as_written()
