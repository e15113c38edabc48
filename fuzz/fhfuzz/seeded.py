"""Programs of fuzz/programs.py's seeded generators as ``Program`` values: the arguments and
the caller's numpy error settings each seed is run with."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Dict, Optional

from .program import Program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import programs  # noqa: E402


def inputs_source(seed: int, variant: int = 0) -> str:
    """The text of the arguments ``(a, b, arr)`` of program ``seed`` (variant 1: other types,
    for a call that must recompile)."""
    rng = random.Random(seed * 7 + variant)
    a, b = rng.randint(-3, 9), rng.randint(-3, 9)
    n = rng.randint(2, 5)
    dtype = "float64" if variant else "int64"
    return f"({a}, {b}, np.arange({n}, dtype=np.{dtype}) - {rng.randint(0, 2)})"


def outer_errstate(seed: int) -> Optional[Dict[str, str]]:
    """The numpy error settings the caller of an errstate program has (its blocks set theirs
    on top of them): a translated frame must not reuse a graph made under other settings."""
    if programs.family(seed) != "errstate":
        return None
    rng = random.Random(seed * 11 + 5)
    kinds = rng.sample(["divide", "over", "under", "invalid", "all"], rng.randint(1, 2))
    return {k: rng.choice(["ignore", "warn", "raise"]) for k in kinds}


def program(seed: int) -> Program:
    return Program(
        programs.generate(seed),
        args_source=inputs_source(seed),
        other_args_source=inputs_source(seed, 1),
        family=programs.family(seed),
        outer_errstate=outer_errstate(seed),
        seed=seed,
    )


def first_of_family(seed: int, family: Optional[str]) -> int:
    """The first seed from ``seed`` on whose program is of ``family`` (any if None)."""
    while family is not None and programs.family(seed) != family:
        seed += 1
    return seed
