"""Turning recorded sites into named functions: display names, short file names, pstats keys."""

from __future__ import annotations

import os
import sys
import types
from typing import Dict, Iterable, List, Optional, Tuple

from ._compat import code_qualname

PYTHON = "python"
C = "c"
ANNOTATION = "annotation"
CACHE_LOOKUP = "cache_lookup"
COMPILED_REGION = "compiled_region"
TASK = "task"  # an asyncio task's step (on its thread), or a wait between steps (on its own)

PstatsKey = Tuple[str, int, str]


class Function:
    """One thing that can be called: a code object, a C function, an annotation name."""

    __slots__ = ("kind", "name", "filename", "path", "lineno", "pstats_key")

    def __init__(
        self, kind: str, name: str, path: Optional[str], lineno: int, filename: Optional[str], pstats_key: PstatsKey
    ) -> None:
        self.kind = kind
        self.name = name
        self.path = path
        self.filename = filename
        self.lineno = lineno
        self.pstats_key = pstats_key

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.lineno}" if self.filename else ""

    @property
    def label(self) -> str:
        """How a flame graph's frame reads: the name, and the location if there is one."""
        return f"{self.name} ({self.location})" if self.filename else self.name

    def __repr__(self) -> str:
        return f"Function({self.kind}, {self.name!r}, {self.location!r})"


class PathShortener:
    """Shortens file names by the longest matching sys.path entry (computed once per name)."""

    def __init__(self, search_path: Optional[Iterable[str]] = None) -> None:
        prefixes: List[str] = []
        for entry in sys.path if search_path is None else search_path:
            entry = os.path.abspath(entry or os.getcwd())
            prefixes.append(entry.rstrip(os.sep) + os.sep)
        self._prefixes = sorted(set(prefixes), key=len, reverse=True)
        self._cache: Dict[str, str] = {}

    def __call__(self, path: str) -> str:
        short = self._cache.get(path)
        if short is None:
            short = path
            for prefix in self._prefixes:
                if path.startswith(prefix):
                    short = path[len(prefix) :]
                    break
            self._cache[path] = short
        return short


class Namer:
    """Builds Function objects, shared across threads, from the tracer's site tuples."""

    def __init__(self, shorten: PathShortener) -> None:
        self._shorten = shorten
        self._by_key: Dict[object, Function] = {}

    def code(self, code: types.CodeType, kind: str = PYTHON, label: str = "") -> Function:
        key = (kind, code)
        func = self._by_key.get(key)
        if func is None:
            name = code_qualname(code)
            if label:
                name = f"{label}: {name}"
            path = code.co_filename
            func = Function(
                kind,
                name,
                path,
                code.co_firstlineno,
                self._shorten(path),
                (path, code.co_firstlineno, code.co_name if not label else name),
            )
            self._by_key[key] = func
        return func

    def c_function(self, info: Tuple[Optional[str], str, int]) -> Function:
        func = self._by_key.get(info)
        if func is None:
            owner, name, how = info
            if how == 0:
                display = f"{owner}.{name}" if owner else name
                label = f"<built-in method {display}>"
            elif how == 1:
                display = f"{owner}.{name}"
                label = f"<method '{name}' of '{owner}' objects>"
            else:
                display = f"{owner}.{name}"
                label = f"<built-in method {display}>"
            func = Function(C, display, None, 0, None, ("~", 0, label))
            self._by_key[info] = func
        return func

    def task(self, name: str) -> Function:
        return self._named(TASK, name, "asyncio")

    def annotation(self, name: str) -> Function:
        return self._named(ANNOTATION, name, "record_function")

    def _named(self, kind: str, name: str, what: str) -> Function:
        """A function known by its name only (no code): pstats lists it as <what name>."""
        key = (kind, name)
        func = self._by_key.get(key)
        if func is None:
            func = Function(kind, name, None, 0, None, ("~", 0, f"<{what} {name}>"))
            self._by_key[key] = func
        return func
