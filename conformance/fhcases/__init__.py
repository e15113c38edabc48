"""Conformance frame cases: small functions exercising what differs between CPython versions (3.9-3.15)."""
from __future__ import annotations

import importlib
import sys

MODULES = ("basics", "calls", "closures", "generators", "coroutines", "exceptions", "comprehensions",
           "fstrings", "walrus_star", "classes", "control", "builtins_use", "numpy_cases",
           "match_cases", "except_star")
NEEDS = {"match_cases": (3, 10), "except_star": (3, 11)}


def load_all() -> list:
    """Import every case module this interpreter can compile; return the registered cases."""
    from ._registry import CASES
    for name in MODULES:
        if sys.version_info[:2] < NEEDS.get(name, (3, 9)):
            continue
        importlib.import_module(f"{__name__}.{name}")
    return list(CASES)
