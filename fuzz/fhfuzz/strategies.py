"""Interim strategy: programs of fuzz/programs.py's seeded generators, drawn by seed.

Hypothesis shrinks the seed (towards 0), not the program; the grammar strategy that
replaces this module keeps the signature ``programs(families=None)``.
"""

from __future__ import annotations

from typing import Iterable, Optional

from hypothesis import strategies as st

from . import seeded
from .program import Program


def programs(families: Optional[Iterable[str]] = None) -> "st.SearchStrategy[Program]":
    """Programs of the given families (every family if None)."""
    chosen = sorted(set(families)) if families is not None else [None]
    if not chosen:
        raise ValueError("programs(families=...): expected at least one family name")
    unknown = sorted(f for f in chosen if f is not None and f not in seeded.programs.GENERATORS)
    if unknown:
        raise ValueError(
            f"programs(families=...): unknown {unknown}; expected some of {sorted(seeded.programs.GENERATORS)}"
        )
    return st.builds(
        lambda family, seed: seeded.program(seeded.first_of_family(seed, family)),
        st.sampled_from(chosen),
        st.integers(0, 2**31),
    )
