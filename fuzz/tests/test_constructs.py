"""fhfuzz.constructs: every construct is found in a tiny program written by hand, and the
grammar generates every construct this interpreter's syntax has (and none it lacks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fhfuzz import constructs  # noqa: E402
from fhfuzz.constructs import CONSTRUCTS, available, constructs_in, coverage_report  # noqa: E402

# one small program per construct, each using it
EXAMPLES = {
    "arithmetic": "def f(a):\n    return a * 2 - 1",
    "augmented_assign": "def f(a):\n    a += 1\n    return a",
    "bitwise": "def f(a):\n    return a & 3",
    "shift": "def f(a):\n    return a >> 1",
    "invert": "def f(a):\n    return ~a",
    "not": "def f(a):\n    return not a",
    "unary_plus": "def f(a):\n    return +a",
    "and": "def f(a):\n    return a and 1",
    "or": "def f(a):\n    return a or 1",
    "in": "def f(a):\n    return a not in (1, 2)",
    "is": "def f(a):\n    return a is not None",
    "chained_comparison": "def f(a):\n    return 0 < a < 3",
    "big_int": "def f(a):\n    return a + 340282366920938463463374607431768211456",
    "f_string": "def f(a):\n    return f'{a}!'",
    "if": "def f(a):\n    if a:\n        return 1\n    return 2",
    "conditional_expression": "def f(a):\n    return 1 if a else 2",
    "while": "def f(a):\n    while a < 3:\n        a = a + 1\n    return a",
    "for_range": "def f(a):\n    for i in range(3):\n        a = i\n    return a",
    "for_other": "def f(a):\n    for i in [1, 2]:\n        a = i\n    return a",
    "loop_else": "def f(a):\n    for i in range(2):\n        a = i\n    else:\n        a = 0\n    return a",
    "break_continue": "def f(a):\n    for i in range(2):\n        break\n    return a",
    "tuple_unpacking": "def f(a):\n    p, q = a, a\n    return p",
    "walrus": "def f(a):\n    return (b := a)",
    "list_comprehension": "def f(a):\n    return [i for i in range(a)]",
    "set_comprehension": "def f(a):\n    return {i for i in range(a)}",
    "dict_comprehension": "def f(a):\n    return {i: i for i in range(a)}",
    "generator_expression": "def f(a):\n    return sum(i for i in range(a))",
    "set_literal": "def f(a):\n    return {a, 1}",
    "dict_literal": "def f(a):\n    return {'k': a}",
    "subscript_slice": "def f(a):\n    return a[1:]",
    "pass": "def f(a):\n    pass",
    "assert": "def f(a):\n    assert a",
    "raise": "def f(a):\n    raise ValueError(a)",
    "try_except": "def f(a):\n    try:\n        return 1 // a\n    except ZeroDivisionError:\n        return 0",
    "try_else": "def f(a):\n    try:\n        a = 1\n    except KeyError:\n        pass\n    else:\n        a = 2\n    return a",
    "try_finally": "def f(a):\n    try:\n        a = 1\n    finally:\n        a = 2\n    return a",
    "try_star": "def f(a):\n    try:\n        a = 1\n    except* ValueError:\n        pass\n    return a",
    "match": "def f(a):\n    match a:\n        case 1:\n            return 2\n    return 3",
    "global": "def f(a):\n    global G\n    G = a",
    "nonlocal": "def f(a):\n    def g():\n        nonlocal a\n        a = 1\n    g()\n    return a",
    "import": "def f(a):\n    import math\n    return math.gcd(a, 4)",
    "nested_function": "def f(a):\n    def g():\n        return a\n    return g()",
    "lambda": "def f(a):\n    return (lambda q: q)(a)",
    "default_arguments": "def f(a=1):\n    return a",
    "star_arguments": "def f(*a):\n    return a",
    "class": "def f(a):\n    class K:\n        pass\n    return K",
    "with": "def f(a):\n    with a:\n        return 1",
    "with_errstate": "def f(a):\n    with np.errstate(all='ignore'):\n        return a / 0",
    "numpy": "def f(a):\n    return np.abs(a)",
    "generator": "def f(a):\n    yield a",
    "yield_from": "def f(a):\n    yield from a",
    "generator_send": "def f(a):\n    return a.send(1)",
    "generator_throw": "def f(a):\n    return a.throw(KeyError())",
    "generator_close": "def f(a):\n    a.close()",
    "async_def": "async def f(a):\n    return a",
    "await": "async def f(a):\n    return await a",
    "async_for": "async def f(a):\n    async for i in a:\n        return i",
    "async_with": "async def f(a):\n    async with a:\n        return 1",
    "async_comprehension": "async def f(a):\n    return [i async for i in a]",
    "async_generator": "async def f(a):\n    yield a",
    "delete": "def f(a):\n    del a",
    "return": "def f(a):\n    return a",
    "decorator": "def f(a):\n    @staticmethod\n    def g():\n        pass\n    return g",
    "positional_only_params": "def f(a, /):\n    return a",
    "keyword_only_params": "def f(*, a=1):\n    return a",
    "dict_unpacking": "def f(a):\n    return {**a, 'k': 1}",
    "annotated_assign": "def f(a):\n    b: int = a\n    return b",
    "matmul": "def f(a):\n    return a @ a",
}


def test_every_construct_has_an_example():
    assert sorted(EXAMPLES) == sorted(CONSTRUCTS)


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_construct_is_found_in_its_example(name):
    if not available(name):
        since = ".".join(map(str, CONSTRUCTS[name][0]))
        pytest.skip(f"{name} ({CONSTRUCTS[name][1]}) is syntax of CPython {since}+ only")
    assert name in constructs_in(EXAMPLES[name])


def test_constructs_are_told_apart():
    assert constructs_in(EXAMPLES["for_range"]) & {"for_range", "for_other"} == {"for_range"}
    assert constructs_in(EXAMPLES["for_other"]) & {"for_range", "for_other"} == {"for_other"}
    # a generator nested in f makes f a generator neither way round
    assert "async_generator" not in constructs_in("async def f():\n    def g():\n        yield 1\n    return g")
    assert "generator" in constructs_in("async def f():\n    def g():\n        yield 1\n    return g")
    assert "big_int" not in constructs_in("def f():\n    return 2**64 - 1 + 9223372036854775807")
    assert "chained_comparison" not in constructs_in(EXAMPLES["if"])
    # text is not enough: a construct's name in a string is not the construct
    assert not constructs_in("def f():\n    return 'match global async await yield'") & {"match", "global", "await"}


def test_availability_follows_the_version():
    assert available("match", (3, 10)) and not available("match", (3, 9))
    assert available("try_star", (3, 11)) and not available("try_star", (3, 10))
    assert all(available(name, (3, 9)) for name in CONSTRUCTS if name not in ("match", "try_star"))


def test_grammar_generates_what_this_version_has_and_nothing_else():
    table, missing = coverage_report(800)
    assert missing == []
    rows = {row.split()[0]: row for row in table.splitlines()[3:]}
    assert sorted(rows) == sorted(CONSTRUCTS)
    for name, row in rows.items():
        if available(name):
            assert int(row.split()[-1]) > 0, row
        else:
            assert row.endswith("not on this version"), row


def test_draws_are_deterministic():
    assert constructs.draw_sources(30, seed=3) == constructs.draw_sources(30, seed=3)
    assert constructs.draw_sources(30, seed=3) != constructs.draw_sources(30, seed=4)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="count"):
        coverage_report(0)
    with pytest.raises(ValueError, match="seed"):
        coverage_report(10, seed=-1)


def test_command_prints_the_table():
    printed = []
    status = constructs.main(["--count", "20"], out=printed.append)
    assert printed[0].startswith("constructs in 20 grammar programs")
    assert "try_star" in printed[0] and "match" in printed[0]
    # too few programs to have every construct: the command lists the missing and fails
    assert status == 1 and printed[1].startswith("\nnot generated: ")


def test_run_py_prints_the_table(capsys):
    import run

    assert run.main(["--coverage-report", "20"]) == 1  # too few programs for every construct
    out = capsys.readouterr().out
    assert out.startswith("constructs in 20 grammar programs") and "\nnot generated: " in out
    with pytest.raises(SystemExit):
        run.main(["--coverage-report", "0"])
    assert "--coverage-report: expected a positive number" in capsys.readouterr().err
