"""One generated program with the arguments it is called with."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class Program:
    """The source of a module that defines ``f`` (``np`` is numpy in its globals), the
    arguments of its first calls, other arguments for a call that must recompile, and, for
    numpy error-handling programs, the error settings of the caller's around a call."""

    source: str
    args: Tuple[Any, ...]
    other_args: Tuple[Any, ...]
    family: str
    outer_errstate: Optional[Dict[str, str]] = None
    #: the seed of a program from fuzz/programs.py's seeded generators (None for the others)
    seed: Optional[int] = None
    #: language constructs the source uses (fhfuzz.constructs names), filled by the strategy
    constructs: FrozenSet[str] = frozenset()

    def __post_init__(self) -> None:
        if "def f(" not in self.source:
            raise ValueError("Program.source: expected a module that defines a function f")
        if not isinstance(self.args, tuple) or not isinstance(self.other_args, tuple):
            raise TypeError("Program.args and Program.other_args: expected tuples of arguments")
