"""fhfuzz.grammar and fhfuzz.strategies: every drawn program compiles, runs and gives the
same outcome when called twice with fresh equal arguments; the seeded families keep
fuzz/run.py's programs and arguments; shrinking reaches small programs."""

from __future__ import annotations

import ast
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import find, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import programs  # noqa: E402
import run  # noqa: E402
from fhfuzz import constructs  # noqa: E402
from fhfuzz.grammar import DRIVER, PARAMETERS, grammar_sources  # noqa: E402
from fhfuzz.drawing import drawing  # noqa: E402
from fhfuzz.program import Program  # noqa: E402
from fhfuzz.strategies import FAMILIES, SEEDED_FAMILIES, programs as program_strategy  # noqa: E402

FAST = drawing(derandomize=True)


def outcome(fn, args):
    """What a call gives: its value's repr or its exception, with its warnings."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
        warnings.simplefilter("always")
        try:
            result = ("value", repr(fn(*args)))
        except Exception as exc:  # noqa: BLE001 - every exception is an outcome
            result = ("raised", type(exc).__name__, str(exc))
    return result, [(w.category.__name__, str(w.message)) for w in caught]


def build(source):
    namespace = {"np": np, "__name__": "fuzz_program"}
    exec(compile(source, "<grammar program>", "exec"), namespace)
    return namespace["f"]


SOURCES = constructs.draw_sources(200)


def plain_args():
    return (3, -2, 1.5, "ab", np.arange(4, dtype=np.int64), None)


@pytest.mark.parametrize("index", range(0, 200, 20))
def test_programs_compile_and_run_twice_alike(index):
    for source in SOURCES[index : index + 20]:
        fn = build(source)
        first = outcome(fn, plain_args())
        assert outcome(fn, plain_args()) == first, source
        # a fresh module too: nothing a call leaves in module state changes the next one
        assert outcome(build(source), plain_args()) == first, source


def count_lines_run(fn, args, limit):
    """Line events of a call, stopping it (RuntimeError) past ``limit``: a step count, not time."""
    seen = [0]

    def tracer(frame, event, arg):
        if event == "line":
            seen[0] += 1
            if seen[0] > limit:
                raise RuntimeError("step limit")
        return tracer

    sys.settrace(tracer)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                fn(*args)
            except Exception:  # noqa: BLE001 - only the steps matter here
                pass
    finally:
        sys.settrace(None)
    return seen[0]


def test_programs_take_few_steps():
    # constant loop bounds and capped recursion: far under the limit, whatever the program
    steps = [count_lines_run(build(s), plain_args(), 20_000) for s in SOURCES]
    assert max(steps) <= 20_000 and sum(steps) > len(SOURCES)


def test_most_programs_complete():
    completed = sum(outcome(build(s), plain_args())[0][0] == "value" for s in SOURCES)
    assert completed >= 0.8 * len(SOURCES)


@settings(FAST, max_examples=40)
@given(program_strategy(["grammar"]))
def test_programs_with_drawn_arguments_are_idempotent(program):
    assert program.family == "grammar" and program.seed is None
    assert program.constructs == constructs.constructs_in(program.source)
    fn = build(program.source)
    args = program.args()
    assert [type(v) for v in args[:4]] == [int, int, float, str]
    assert isinstance(args[4], np.ndarray) and args[4].ndim >= 1
    assert outcome(fn, program.args()) == outcome(fn, program.args())
    assert outcome(fn, program.other_args()) == outcome(fn, program.other_args())


def test_programs_have_the_documented_signature():
    signature = "def f(" + ", ".join(name for name, _ in PARAMETERS) + "):"
    assert all(signature in s for s in SOURCES)
    # the coroutine driver comes with async code only
    assert all((DRIVER in s) == ("_drive(" in s.replace(DRIVER, "")) for s in SOURCES)


def shrunk_body(condition):
    """The statements of f in the smallest grammar source Hypothesis finds for ``condition``."""
    smallest = find(grammar_sources(), condition, settings=settings(database=None, derandomize=True))
    return next(node for node in ast.parse(smallest).body if getattr(node, "name", "") == "f").body


def test_shrinking_reaches_a_small_program():
    assert [ast.unparse(node) for node in shrunk_body(lambda s: True)] == ["return ()"]
    # the import form (import, then a statement using it) and the return; the shrinker may
    # stop at a local minimum that depends on the version's grammar, still a few lines: an
    # import inside the handler of nested try blocks (14 lines, 3.11), or one statement
    # more before the import (4 statements, 3.10)
    body = shrunk_body(lambda s: "import " in s)
    assert len(body) <= 4 and isinstance(body[-1], ast.Return), [ast.unparse(n) for n in body]
    assert sum(len(ast.unparse(node).splitlines()) for node in body) <= 16


def test_seeded_families_keep_run_py_programs():
    for family in SEEDED_FAMILIES:

        @settings(FAST, max_examples=3)
        @given(program_strategy([family]))
        def check(program: Program) -> None:
            assert program.family == family == programs.family(program.seed)
            assert program.source == programs.generate(program.seed)
            for variant, got in enumerate((program.args(), program.other_args())):
                want = run.inputs(program.seed, variant)
                assert got[:2] == want[:2]
                assert got[2].dtype == want[2].dtype and got[2].tolist() == want[2].tolist()
            assert program.outer_errstate == run.outer_errstate(program.seed)

        check()


def test_families_are_checked():
    with pytest.raises(ValueError, match="families: expected names among grammar, python"):
        program_strategy(["grammar", "nope"])
    with pytest.raises(ValueError, match="families"):
        program_strategy("grammar")
    with pytest.raises(ValueError, match="families"):
        program_strategy([])
    assert set(FAMILIES) == {"grammar"} | set(programs.GENERATORS)
