"""Shared checks for the symbolic-translator tests: a function optimized with the eager
backend must agree exactly with the plain function (values, dtypes, shapes, types,
exceptions, mutations of its arguments)."""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

import framehook.translator as ft


def assert_same(a: Any, b: Any, path: str = "result") -> None:
    assert type(a) is type(b), f"{path}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"{path}: shape {a.shape} != {b.shape}"
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} != {b.dtype}"
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, float) and a != a:
        assert b != b, f"{path}: nan != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def outcome(fn: Callable[..., Any], args: tuple, kwargs: dict) -> tuple:
    """(kind, value, arguments after the call)."""
    args = copy.deepcopy(args)
    kwargs = copy.deepcopy(kwargs)
    try:
        value = fn(*args, **kwargs)
    except Exception as e:  # the exception is part of the behaviour compared
        return ("raise", (type(e), str(e)), (args, kwargs))
    return ("return", value, (args, kwargs))


def check_agrees(fn: Callable[..., Any], *calls: tuple, optimized: Any = None) -> Any:
    """Each ``(args, kwargs)`` (or plain args tuple) gives the same outcome plainly and optimized."""
    opt = optimized or ft.optimize("eager")(fn)
    for call in calls:
        args, kwargs = (
            call if (len(call) == 2 and isinstance(call[1], dict) and isinstance(call[0], tuple)) else (call, {})
        )
        want = outcome(fn, args, kwargs)
        got = outcome(opt, args, kwargs)
        assert want[0] == got[0], (
            f"{fn.__name__}: plain {want[0]}s {want[1]!r:.200}, optimized {got[0]}s {got[1]!r:.200}"
        )
        if want[0] == "raise":
            assert want[1] == got[1]
        else:
            assert_same(want[1], got[1])
        assert_same(want[2], got[2], "arguments after the call")
    return opt


def entries(fn: Callable[..., Any]) -> int:
    """How many cache entries the runtime holds for ``fn``'s code object."""
    import framehook.runtime as rt

    return len(rt.cache_entries(fn.__code__))


class Reports:
    """Collects the FrameReport of every translation made inside the block."""

    def __enter__(self) -> list:
        from framehook.translator.symbolic import add_observer

        self.reports: list = []
        add_observer(self.reports.append)
        return self.reports

    def __exit__(self, *exc: Any) -> None:
        from framehook.translator.symbolic import remove_observer

        remove_observer(self.reports.append)


def loop_nodes(graph: Any) -> list:
    """The for-loop and while-loop nodes among a graph's operations."""
    from framehook.translator.graph import is_loop

    return [n for n in graph.operations() if is_loop(n.target)]


def run_both(fn, args, capsys, calls=3):
    """Plain and optimized outputs (stdout included) agree on the first call and on cache hits."""
    check_agrees(fn, *([args] * calls))
    opt = ft.optimize("eager")(fn)
    capsys.readouterr()
    plain = [fn(*args) for _ in range(calls)]
    plain_out = capsys.readouterr().out
    got = [opt(*args) for _ in range(calls)]
    got_out = capsys.readouterr().out
    assert got_out == plain_out
    return plain, got


def explained(fn, *args):
    """explain()'s output and the resume failures of the frames that broke."""
    out = ft.explain(fn)(*args)
    return out, [r.resume_failure for r in out.frames if r.graph_break is not None]


def line_of(fn, text):
    """The line number of the first line of fn's source that contains text."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(text)
