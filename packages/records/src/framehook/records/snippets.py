"""The part of a module's source that one function needs, at its original line numbers.

A record carries the source of the recorded function, not of its whole file: a file that
uses newer syntax elsewhere (``match``, ``except*``, PEP 695) must still replay on every
CPython where the function's own code compiles, and a record should not weigh what its
module weighs.

What is kept, read from the recording interpreter's own syntax tree:

* the outermost function (or lambda) around the code, whole, decorators included, since
  every function nested in it may read its cells;
* for a lambda outside any function, the whole statement holding it;
* for each compound statement above that (a class, an ``if``, a ``try`` ...), one header
  line at its own line and indentation: ``class NAME:`` for a class, so that qualified
  names and ``__class__`` cells come out as in the module, ``if 1:`` for the others;
* the module's ``from __future__`` imports, which change how the code compiles, and one
  line ``import a, b, ...`` naming what the module binds by import (3.11 and 3.12 compile
  ``mod.f()`` differently when ``mod`` comes from an import), on the line above the rest.

Every kept line keeps its text, so line numbers and column offsets (3.11+ positions) are
the module's; replay pads the snippet with blank lines up to its first line. Whatever
cannot be cut this way (no syntax tree, a header sharing a line with its body) falls back
to the whole file.
"""

from __future__ import annotations

import ast
import linecache
import sys
import types
from dataclasses import dataclass

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class Snippet:
    filename: str
    line: int  # the line number of the snippet's first line in its file
    text: str

    def padded(self) -> str:
        """The text preceded by blank lines, so that it compiles at its original lines."""
        return "\n" * (self.line - 1) + self.text


class _Module:
    """One file's lines and syntax tree, parsed once and reused while the file is unchanged."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.tree = ast.parse("".join(lines))
        self.future = [n for n in self.tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
        self.imported = sorted(_imported_names(self.tree.body))


def _imported_names(body: list[ast.stmt]) -> set[str]:
    """Names bound by import statements in the module's own scope."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            names.update(a.asname or a.name for a in node.names if a.name != "*")
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for sub in getattr(node, field, None) or ():
                    names |= _imported_names([sub] if isinstance(sub, ast.stmt) else getattr(sub, "body", []))
    return names


_CACHE: dict[str, tuple[int, _Module | None]] = {}


def _module(filename: str, module_globals: dict | None) -> _Module | None:
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        return None
    key = hash(tuple(lines)) if len(lines) < 50 else hash((len(lines), lines[0], lines[-1], lines[len(lines) // 2]))
    cached = _CACHE.get(filename)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        parsed: _Module | None = _Module(lines)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        parsed = None
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[filename] = (key, parsed)
    return parsed


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])  # type: ignore[attr-defined]


def _chain(tree: ast.Module, code: types.CodeType) -> list[ast.AST] | None:
    """The nodes from a module statement down to the definition of ``code``."""
    want_lambda = code.co_name == "<lambda>"

    def matches(node: ast.AST) -> bool:
        if want_lambda:
            return isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno
        return (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == code.co_name
            and _first_line(node) == code.co_firstlineno
        )

    def search(node: ast.AST, path: list[ast.AST]) -> list[ast.AST] | None:
        for child in ast.iter_child_nodes(node):
            end = getattr(child, "end_lineno", None)
            start = getattr(child, "lineno", None)
            if start is not None and end is not None:
                first = _first_line(child) if hasattr(child, "decorator_list") else start
                if not first <= code.co_firstlineno <= end:
                    continue
            here = path + [child]
            if matches(child):
                return here
            found = search(child, here)
            if found is not None:
                return found
        return None

    return search(tree, [])


def _header(node: ast.stmt, lines: list[str]) -> str:
    line = lines[node.lineno - 1]
    indent = line[: len(line) - len(line.lstrip())]
    if isinstance(node, ast.ClassDef):
        return f"{indent}class {node.name}:\n"
    return f"{indent}if 1:\n"


_SNIPPETS: dict[types.CodeType, tuple[_Module, Snippet]] = {}


def snippet_of(code: types.CodeType, module_globals: dict | None = None) -> Snippet | None:
    """The source ``code`` needs, or None when its file's text is not available."""
    module = _module(code.co_filename, module_globals)
    cached = _SNIPPETS.get(code) if module is not None else None
    if cached is not None and cached[0] is module:
        return cached[1]
    found = _snippet(code, module, module_globals)
    if module is not None and found is not None:
        if len(_SNIPPETS) > 4096:
            _SNIPPETS.clear()
        _SNIPPETS[code] = (module, found)
    return found


def _snippet(code: types.CodeType, module: _Module | None, module_globals: dict | None) -> Snippet | None:
    filename = code.co_filename
    if module is None:
        lines = linecache.getlines(filename, module_globals)
        return Snippet(filename, 1, "".join(lines)) if lines else None
    whole = Snippet(filename, 1, "".join(module.lines))
    chain = _chain(module.tree, code)
    if chain is None:
        return whole
    outer = next((i for i, node in enumerate(chain) if isinstance(node, _FUNCTIONS)), None)
    if outer is None:
        return whole
    # the statement to keep whole: the outermost function's own, or the one holding a lambda
    keep = outer
    while not isinstance(chain[keep], ast.stmt):
        keep -= 1
        if keep < 0:
            return whole
    headers = [node for node in chain[:keep] if isinstance(node, ast.stmt)]
    kept = chain[keep]
    start, end = _first_line(kept), kept.end_lineno or kept.lineno  # type: ignore[attr-defined]
    out: dict[int, str] = {}
    for future in module.future:
        for number in range(future.lineno, (future.end_lineno or future.lineno) + 1):
            out[number] = module.lines[number - 1]
    for header in headers:
        if header.lineno in out or header.lineno >= start:
            return whole  # a header sharing a line with what follows it
        out[header.lineno] = _header(header, module.lines)
    for number in range(start, end + 1):
        if number in out:
            return whole
        out[number] = module.lines[number - 1]
    future_end = max((n.end_lineno or n.lineno for n in module.future), default=0)
    above = min(number for number in out if number > future_end) - 1
    if module.imported and above > future_end:
        out[above] = f"import {', '.join(module.imported)}\n"
    first = min(out)
    text = "".join(out.get(number, "\n") for number in range(first, end + 1))
    if not text.endswith("\n"):
        text += "\n"
    return Snippet(filename, first, text)


def class_snippet(cls: type, module_globals: dict | None) -> Snippet | None:
    """The class statement of ``cls`` (decorators included) with a header line for each
    class around it and the module's future imports, at its original lines; None for a
    class made inside a function or whose source is not found. Replay executes it (the
    statement, not the module) to rebuild a class that cannot be imported, so unlike a
    function's snippet it holds no import line."""
    qualname = getattr(cls, "__qualname__", "")
    module_name = getattr(cls, "__module__", None)
    if "<" in qualname or not isinstance(module_name, str):
        return None
    module_obj = sys.modules.get(module_name)
    filename = getattr(module_obj, "__file__", None)
    if not isinstance(filename, str):
        return None
    module = _module(filename, module_globals)
    if module is None:
        return None
    body: list[ast.stmt] = module.tree.body
    chain: list[ast.ClassDef] = []
    for part in qualname.split("."):
        found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == part]
        if len(found) != 1:
            return None  # absent, or defined twice (which one made this class is unknown)
        chain.append(found[0])
        body = found[0].body
    kept = chain[-1]
    start, end = _first_line(kept), kept.end_lineno or kept.lineno
    out: dict[int, str] = {}
    for future in module.future:
        for number in range(future.lineno, (future.end_lineno or future.lineno) + 1):
            out[number] = module.lines[number - 1]
    for header in chain[:-1]:
        if header.lineno in out or header.lineno >= start:
            return None
        out[header.lineno] = _header(header, module.lines)
    for number in range(start, end + 1):
        if number in out:
            return None
        out[number] = module.lines[number - 1]
    first = min(out)
    text = "".join(out.get(number, "\n") for number in range(first, end + 1))
    return Snippet(filename, first, text if text.endswith("\n") else text + "\n")
