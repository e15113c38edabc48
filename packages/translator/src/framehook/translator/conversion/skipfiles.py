"""Which frames the translator leaves alone, by file: the standard library, framehook
itself and numpy (their Python code is not user code), plus config.skip_dirs."""

from __future__ import annotations

import functools
import importlib.util
import os
import sysconfig
from typing import Optional, Tuple

from ..config import config

__all__ = ["skip_reason", "stdlib_dirs", "framehook_dirs"]

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
    for name in ("framehook.translator", "framehook.runtime", "framehook.profiler", "numpy"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):  # pragma: no cover - a broken install
            spec = None
        for loc in (spec.submodule_search_locations or []) if spec is not None else []:
            dirs.append(_norm(loc))
    return tuple(sorted(set(dirs)))


@functools.lru_cache(maxsize=4096)
def _file_reason(
    filename: str, skip_stdlib: bool, skip_framehook: bool, skip_dirs: Tuple[str, ...], force_dirs: Tuple[str, ...]
) -> Optional[str]:
    if filename.startswith("<") and filename.endswith(">") and filename.startswith("<frozen"):
        return "frozen module"
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
