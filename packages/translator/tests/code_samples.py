"""Code objects to test bytecode tooling on: nested ones, and those of standard-library
modules compiled from their source."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path
from typing import Iterable, Iterator

#: modules whose code is varied enough to meet most instructions of a version
STDLIB_SAMPLE = ("argparse", "collections", "json.decoder", "pathlib", "textwrap")


def nested_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and every code object in its constants, depth first."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from nested_codes(const)


def module_code(name: str) -> types.CodeType:
    """The module ``name`` compiled afresh from its source file."""
    path = Path(importlib.util.find_spec(name).origin)
    return compile(path.read_text(encoding="utf-8"), str(path), "exec")


def stdlib_codes(names: Iterable[str] = STDLIB_SAMPLE) -> Iterator[types.CodeType]:
    for name in names:
        yield from nested_codes(module_code(name))


def stdlib_instructions(names: Iterable[str] = STDLIB_SAMPLE):
    """Every decoded instruction of the sample modules' code."""
    from framehook.translator.bytecode import decode

    for code in stdlib_codes(names):
        yield from decode(code)
