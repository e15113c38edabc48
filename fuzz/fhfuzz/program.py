"""One generated program with the arguments it is called with."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, Optional, Tuple

import numpy as np


def evaluate_arguments(text: str) -> Tuple[Any, ...]:
    """The tuple that ``text``, a Python expression over ``np``, makes: a fresh one per call,
    so a program that mutates an argument cannot leak into the next run."""
    value = eval(compile(text, "<fuzz arguments>", "eval"), {"np": np, "__builtins__": __builtins__})
    if not isinstance(value, tuple):
        raise TypeError(f"arguments {text!r}: expected an expression that makes a tuple, got {type(value).__name__}")
    return value


@dataclasses.dataclass(frozen=True)
class Program:
    """The source of a module that defines ``f`` (``np`` is numpy in its globals); the
    arguments of its first calls and other arguments for a call that must recompile, each as
    the text of a tuple expression over ``np`` (evaluated afresh for every call, and written
    as is into a saved finding); for numpy error-handling programs, the caller's error
    settings around some calls."""

    source: str
    args_source: str
    other_args_source: str
    family: str
    outer_errstate: Optional[Dict[str, str]] = None
    #: the seed of a program from fuzz/programs.py's seeded generators (None for the others)
    seed: Optional[int] = None
    #: language constructs the source uses (fhfuzz.constructs names), filled by the strategy
    constructs: FrozenSet[str] = frozenset()

    def __post_init__(self) -> None:
        if "def f(" not in self.source:
            raise ValueError("Program.source: expected a module that defines a function f")

    def args(self) -> Tuple[Any, ...]:
        return evaluate_arguments(self.args_source)

    def other_args(self) -> Tuple[Any, ...]:
        return evaluate_arguments(self.other_args_source)
