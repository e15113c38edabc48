"""Readable differences between recorded and replayed outcomes, kind by kind."""

from __future__ import annotations

import collections
import fractions

import numpy as np

from framehook.records.codec import Encoder
from framehook.records.compare import describe, diff_outcomes


def outcome(value, kind="return", events=()):
    enc = lambda v: Encoder().encode(v)  # noqa: E731
    return {
        "kind": kind,
        "value": enc(value) if kind == "return" else None,
        "exception": enc(value) if kind == "raise" else None,
        "events": [[k, enc(v)] for k, v in events],
        "args_after": enc(()),
        "kwargs_after": enc({}),
    }


def diffs(a, b, **kw):
    return diff_outcomes(outcome(a), outcome(b), **kw)[0]


def helper_fn(x, k=1):
    return x + k


def other_fn(x):
    return x


def test_equal_values_have_no_diffs():
    for value in (1, [1, {"a": (2, 3)}], np.arange(3), fractions.Fraction(1, 3), {1, 2}, float("nan")):
        assert diffs(value, value) == []


def test_scalar_and_container_diffs():
    assert diffs(1, 2) == ["return value: recorded int 1, replayed int 2"]
    assert diffs("a", None) == ["return value: recorded str 'a', replayed None"]
    assert "list of 2" in diffs([1, 2], [1])[0]
    assert diffs([1, 2], [1, 3]) == ["return value[1]: recorded int 2, replayed int 3"]
    assert "dict of 1" in diffs({"a": 1}, {"a": 1, "b": 2})[0]
    assert "key0" in diffs({"a": 1}, {"b": 1})[0]
    assert diffs(1.5, 2.5)[0].endswith("replayed float 2.5")
    assert "complex" in diffs(1j, 2j)[0]


def test_array_diffs():
    assert "different contents" in diffs(np.arange(3), np.arange(3) + 1)[0]
    assert "int64[2]" in diffs(np.arange(3), np.arange(2))[0]


def test_function_ext_missing_and_ref_diffs():
    src = {"source_file": helper_fn.__code__.co_filename}
    a = {
        "kind": "return",
        "value": Encoder(**src).encode(helper_fn),
        "exception": None,
        "events": [],
        "args_after": None,
        "kwargs_after": None,
    }
    b = dict(a, value=Encoder(**src).encode(other_fn))
    assert diff_outcomes(a, b)[0][0].startswith("return value: recorded function helper_fn")
    assert diffs(collections.deque([1]), collections.deque([2])) != []
    assert "range" in diffs(range(3), fractions.Fraction(1, 2))[0] or diffs(range(3), fractions.Fraction(1, 2))
    import threading

    assert diffs(threading.Lock(), threading.Lock()) == []
    assert diffs(threading.Lock(), threading.Event()) != []
    shared = [0]
    assert "aliasing" in diffs([shared, shared], [[0], [0]])[0] or diffs([shared, shared], [[0], [0]])


def test_kind_and_event_diffs():
    raised = outcome(KeyError("k"), kind="raise")
    assert "replay raised" in diff_outcomes(outcome(1), raised)[0][0]
    assert "replay returned" in diff_outcomes(raised, outcome(1))[0][0]
    assert diff_outcomes(raised, outcome(KeyError("j"), kind="raise"))[0]
    assert diff_outcomes(raised, outcome(ValueError("k"), kind="raise"))[0]
    a = outcome(None, events=[("yield", 1), ("yield", 2)])
    assert "recorded 2 yields" in diff_outcomes(a, outcome(None, events=[("yield", 1)]))[0][0]
    assert (
        "recorded yield, replayed await"
        in diff_outcomes(outcome(None, events=[("yield", 1)]), outcome(None, events=[("await", 1)]))[0][0]
    )


def test_describe_kinds():
    assert describe(Encoder().encode(collections)) == "module collections"
    assert describe(Encoder().encode(len)) == "builtins.len"
    assert describe(Encoder().encode(KeyError("x"))).startswith("exception builtins.KeyError")
    assert describe(Encoder().encode(range(2))).startswith("range")
    assert describe(Encoder().encode("x" * 100)).endswith("...")
    assert describe(
        Encoder().encode(object()),
    ).startswith("missing")
    Pair = collections.namedtuple("Pair", "a b")
    assert (
        describe({"t": "namedtuple", "type": {"t": "global", "module": "m", "qualname": "Pair"}, "items": []})
        == "Pair of 0"
    )
    assert describe(Encoder().encode(Pair(1, 2))).startswith("missing")
