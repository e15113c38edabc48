"""Rebuilding the recorded code object on the running interpreter.

The recorded module source is compiled (never executed) and the function's code object
found by its qualified name and first line. On the same interpreter (same implementation
and bytecode magic number) the marshalled code object can also be unmarshalled, to compare
it with that compilation or, when the caller trusts it, to run it (see codechoice).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import importlib.util
import marshal
import platform
import re
import sys
import types
import warnings
from typing import Iterator

from . import bytecheck, marshalscan, sourcescan
from .errors import NewerPythonError, RecordFormatError, SourceUnavailableError
from .limits import DEFAULT, Limits

# Comprehensions got their own code objects before 3.12 and are inlined from 3.12 on,
# which changes the qualified names of functions defined inside them; keys ignore them.
_TRANSPARENT = {"<listcomp>", "<dictcomp>", "<setcomp>", "<locals>"}
_CO_OPTIMIZED = 0x1
# The CPython versions whose records this package rebuilds (its requires-python).
OLDEST_PYTHON = (3, 9)
NEWEST_PYTHON = (3, 15)


# Read once, at import: tests patch sys.implementation and platform.python_version, and a
# record made under such a patch must still say which interpreter made it.
_HERE = {
    "version": platform.python_version(),
    "implementation": sys.implementation.name,
    "magic": importlib.util.MAGIC_NUMBER.hex(),
    "cache_tag": sys.implementation.cache_tag,
}


def current_python() -> dict:
    return dict(_HERE)


def same_interpreter(python: dict) -> bool:
    here = current_python()
    return python.get("implementation") == here["implementation"] and python.get("magic") == here["magic"]


def check_consistent(python: dict, path: str | None) -> None:
    """A record that claims this interpreter's bytecode magic must claim its version too:
    the magic number decides whether the recorded bytecode is compared (or run) here."""
    if not same_interpreter(python):
        return
    claimed = _major_minor(python.get("version"))
    if claimed != sys.version_info[:2]:
        raise RecordFormatError(
            f"python: claims Python {python.get('version')!s:.40} with the bytecode magic "
            f"{python.get('magic')} of Python {sys.version_info[0]}.{sys.version_info[1]}",
            path,
        )


def _major_minor(version: object) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def refuse_newer(python: dict, has_source: bool, path: str | None) -> None:
    """Raise NewerPythonError for a record from another interpreter that this reader cannot
    rebuild: one newer than every CPython this package supports, or, without source to
    recompile, newer than the running one. A version that does not parse is left to the
    recompilation, which names what fails."""
    recorded = python.get("version")
    theirs = _major_minor(recorded)
    if theirs is None:
        return
    here = platform.python_version()
    wanted = "%d.%d" % theirs
    span = "%d.%d-%d.%d" % (OLDEST_PYTHON + NEWEST_PYTHON)
    if theirs > NEWEST_PYTHON:
        raise NewerPythonError(
            f"recorded on Python {recorded}, newer than this reader (Python {here}; framehook.records "
            f"supports CPython {span}); replay it with a framehook that supports Python {wanted}",
            path,
        )
    if not has_source and theirs > sys.version_info[:2]:
        raise NewerPythonError(
            f"recorded on Python {recorded} without source, newer than this reader (Python {here}); "
            f"it can only be replayed on Python {wanted}",
            path,
        )


def qualname_key(qualname: str) -> tuple[str, ...]:
    return tuple(part for part in qualname.split(".") if part not in _TRANSPARENT)


def walk_code(
    code: types.CodeType, prefix: tuple[str, ...] = (), top: bool = True
) -> Iterator[tuple[tuple[str, ...], types.CodeType]]:
    """Yield (qualname key, code) for every code object nested in a module's code."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            name = const.co_name
            key = prefix if name in _TRANSPARENT else prefix + (name,)
            yield key, const
            yield from walk_code(const, key, False)


class CodeIndex:
    """Code objects of one compiled source, found by (qualname, first line)."""

    def __init__(self, module_code: types.CodeType) -> None:
        self.module_code = module_code  # what a class's snippet executes to rebuild it
        self.entries: dict[tuple, list[types.CodeType]] = {}
        for key, code in walk_code(module_code):
            self.entries.setdefault((key, code.co_firstlineno), []).append(code)

    def find(self, qualname: str, firstlineno: int, name: str | None = None) -> types.CodeType | None:
        found = self.entries.get((qualname_key(qualname), firstlineno))
        if found:
            return found[0]
        # Fall back to the code's own name on the same line: a renamed enclosing scope, or
        # a wrapper whose __qualname__ functools.wraps copied from what it wraps.
        last = (name,) if name else qualname_key(qualname)[-1:] if qualname else ()
        for (key, line), codes in self.entries.items():
            if line == firstlineno and key[-1:] == last:
                return codes[0]
        return None


_INDEX_CACHE: dict[tuple[str, str, int], CodeIndex] = {}


def compile_source(
    source: str, filename: str, path: str | None = None, limits: Limits = DEFAULT, *, first_line: int = 1
) -> CodeIndex:
    """Compile (not execute) a recorded source whose first line is line ``first_line`` of
    its file; cached by content, file name and line.

    The source is scanned first (sourcescan.check): what could crash this interpreter's
    compiler or cost more than ``limits`` allow never reaches ``compile()``."""
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    key = (digest, filename, first_line)
    cached = _INDEX_CACHE.get(key)
    if cached is not None:
        return cached
    sourcescan.check(source, limits, filename, path)
    try:
        # the record's own code, compiled again: its SyntaxWarnings were the recording's
        # to show (3.14 warns of 'return' in 'finally'), not the replay's
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            module_code = compile("\n" * (first_line - 1) + source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise SourceUnavailableError(
            f"the recorded source of {filename} does not compile on Python {platform.python_version()}: "
            f"{type(exc).__name__}: {exc}",
            path,
        ) from None
    except (RecursionError, MemoryError, OverflowError, SystemError) as exc:
        # the scan's estimate let it through, but this interpreter's compiler gave up
        raise SourceUnavailableError(
            f"the recorded source of {filename} is too complex to compile on Python "
            f"{platform.python_version()}: {type(exc).__name__}: {exc}",
            path,
        ) from None
    index = CodeIndex(module_code)
    if len(_INDEX_CACHE) > 64:
        _INDEX_CACHE.clear()
    _INDEX_CACHE[key] = index
    return index


def same_code(recorded: types.CodeType, compiled: types.CodeType) -> bool:
    """Whether the recorded code object is the compilation of the source.

    Code objects compare by name, argument counts, flags, first line, bytecode, constants
    (nested code included), names, variable names and, from 3.11, the line and exception
    tables; not by file name or qualified name, which may legitimately differ.
    """
    try:
        return recorded == compiled
    except RecursionError:  # constants nested deeper than the compiler ever writes
        return False


def load_marshalled(text: str, name: str, path: str | None) -> types.CodeType:
    """Unmarshal the recorded code object (which runs nothing); only ever called for the
    same bytecode magic, to compare it with the source or, if trusted, to check and run it."""
    try:
        data = base64.b64decode(text, validate=True)
        # No memory bomb, and no opcode that crashes code-object creation, reaches marshal.
        marshalscan.check(data, bytecheck.check_opcodes)
        code = marshal.loads(data)
    except (ValueError, EOFError, TypeError, binascii.Error) as exc:
        raise SourceUnavailableError(f"the marshalled code is corrupt: {exc}", path) from None
    if not isinstance(code, types.CodeType) or code.co_name != name:
        raise SourceUnavailableError("the marshalled code is not the recorded function's code", path)
    return code


def locate(index: CodeIndex, qualname: str, firstlineno: int, name: str, path: str | None) -> types.CodeType:
    code = index.find(qualname, firstlineno, name)
    if code is None or not (code.co_flags & _CO_OPTIMIZED):
        raise SourceUnavailableError(f"function {qualname} (line {firstlineno}) not found in the recorded source", path)
    return code
