"""The programs the differential fuzzer runs, as one Hypothesis strategy.

    from fhfuzz.strategies import programs

    @given(programs(["grammar"]))
    def test_something(program): ...

Families: "grammar" (fhfuzz.grammar: every construct in fhfuzz.constructs that this
interpreter's syntax has, arguments from fhfuzz.inputs fitting its parameters, and other
arguments of other types and shapes for a call that recompiles) and the seeded generators of
``fuzz/programs.py`` (python, kernel, closure, errstate, objects), drawn by seed with the
arguments ``fuzz/run.py`` gives them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence

from hypothesis import strategies as st

import programs as generators
from fhfuzz import seeded
from fhfuzz.constructs import constructs_in
from fhfuzz.grammar import grammar_sources
from fhfuzz.inputs import grammar_arguments
from fhfuzz.program import Program

SEEDED_FAMILIES = ("python", "kernel", "closure", "errstate", "objects")
FAMILIES = ("grammar",) + SEEDED_FAMILIES
MAX_SEED = 2**31


# a seed of each family from any int: families repeat every 32 seeds
_SEED_OF = {
    "kernel": lambda k: 4 * k + 3,
    "closure": lambda k: 8 * k + (1 if k % 2 else 6),
    "errstate": lambda k: 8 * k + 4,
    "objects": lambda k: 32 * k + 16,
    "python": lambda k: 8 * k + (0, 2, 5)[k % 3],
}


def seeded_program(seed: int) -> Program:
    """Program ``seed`` of fuzz/programs.py with the arguments fuzz/run.py gives it."""
    program = seeded.program(seed)
    return dataclasses.replace(program, constructs=constructs_in(program.source))


def seeded_programs(family: str) -> st.SearchStrategy[Program]:
    """Programs of one of fuzz/programs.py's families, by seed (shrinking toward seed 0's)."""
    if family not in SEEDED_FAMILIES:
        raise ValueError(f"family: expected one of {', '.join(SEEDED_FAMILIES)}, got {family!r}")
    to_seed = _SEED_OF[family]
    seeds = st.integers(min_value=0, max_value=MAX_SEED // 32).map(to_seed)
    return seeds.filter(lambda s: generators.family(s) == family).map(seeded_program)


@st.composite
def grammar_programs(draw: Any) -> Program:
    """A grammar program with arguments fitting its parameters."""
    source = draw(grammar_sources())
    return Program(
        source=source,
        args_source=draw(grammar_arguments()),
        other_args_source=draw(grammar_arguments(other=True)),
        family="grammar",
        constructs=constructs_in(source),
    )


def programs(families: Optional[Sequence[str]] = None) -> st.SearchStrategy[Program]:
    """Programs of ``families`` (default: all of FAMILIES), the grammar's first."""
    if families is None:
        chosen = list(FAMILIES)
    else:
        if isinstance(families, str) or not all(isinstance(f, str) for f in families):
            raise ValueError(f"families: expected a sequence of family names, got {families!r}")
        unknown = [f for f in families if f not in FAMILIES]
        if unknown or not families:
            raise ValueError(f"families: expected names among {', '.join(FAMILIES)}, got {list(families)!r}")
        chosen = [f for f in FAMILIES if f in families]
    return st.one_of([grammar_programs() if f == "grammar" else seeded_programs(f) for f in chosen])
