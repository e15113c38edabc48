"""Automatic dynamic shapes when the code reads the shape: ``x.shape[0]``, ``len(x)``,
``x.size``, ``n, m = x.shape`` are graph ints once the dimension is dynamic, so a function
that reads its input's size compiles twice (static, then dynamic after the size changed)
and then serves every further size from the same entry."""

from __future__ import annotations

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator import config
from framehook.translator.symbolic import add_observer, remove_observer
from symbolic_helpers import check_agrees

# size 0 is among the sizes tried: numpy warns about empty means alike with and without the graph
pytestmark = [
    pytest.mark.usefixtures("fresh_translator"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


# ----------------------------------------------------------------- the patterns
def mean_by_rows(x):
    return x.sum() / x.shape[0]


def standardize(x):
    n = len(x)
    return (x - x.mean()) / np.sqrt(n)


def rows(x):
    n = x.shape[0]
    return x.reshape(n, -1)


def zeros_n(x):
    n = len(x)
    return np.zeros(n) + x


def zeros_like(x):
    return np.zeros_like(x) + x


def first_half(x):
    n = x.shape[0]
    return x[: n // 2]


def weighted(x):
    n = len(x)
    return x * np.arange(n)


def unpacked(x):
    n, m = x.shape
    return x.reshape(n * m) / (n + m), n - m, n % 3, n // m, n * m


def per_element(x):
    return x.sum() / x.size, x.nbytes


def shape_tuple(x):
    return x.shape, np.shape(x), np.size(x), np.size(x, 0), np.ndim(x)


def compares(x):
    n = len(x)
    return x * (n > 4), n == 5, n != 3, 2 <= n


def slices_and_indices(x):
    n = len(x)
    out = np.empty(n)
    out[: n // 2] = x[n - n // 2 :]
    out[n // 2 :] = 0.0
    return out, x[n - 1], x[-n:], x[1 : n - 1 : 2]


def creation(x):
    n = len(x)
    return (
        np.ones((n, 2)),
        np.full(n, 7),
        np.linspace(0.0, 1.0, n),
        np.eye(n),
        np.arange(1, n + 1, 2),
        np.identity(n),
        np.zeros_like(x, shape=(2, n)),
        np.broadcast_to(x, (3, n)),
        np.tile(x, 2),
    )


def builtins_on_sizes(x):
    n = len(x)
    k = min(n, 4)
    return x[:k] * float(n), max(n - 2, 1), abs(2 - n), int(n) + 1


def matrix(a):
    n, m = a.shape
    centered = a - a.mean(axis=0)
    cov = centered.T @ centered / (n - 1)
    return cov, np.zeros((m, n)) + a.T, a.reshape(-1, m).sum(axis=1) / m


def two_dims(a):
    n, m = a.shape
    return a[: n // 2, : m // 2] * 2, a.reshape(m, n)


def vector(n):
    return np.arange(float(n)) - 1.5


def table(n):
    return np.arange(n * 3.0).reshape(n, 3) - 2.0


def square(n):
    return np.arange(n * n * 1.0).reshape(n, n) / 7.0


PATTERNS = [
    (mean_by_rows, vector),
    (standardize, vector),
    (rows, table),
    (zeros_n, vector),
    (zeros_like, table),
    (first_half, vector),
    (weighted, vector),
    (unpacked, table),
    (per_element, table),
    (shape_tuple, table),
    (compares, vector),
    (slices_and_indices, vector),
    (creation, vector),
    (builtins_on_sizes, vector),
    (matrix, table),
    (two_dims, square),
]
SIZES = (5, 6, 4, 9, 2, 7, 1, 0)


class Translations:
    """Counts translations (of the frame and of any resume function) while active."""

    def __init__(self) -> None:
        self.reports: list = []

    def __enter__(self) -> "Translations":
        add_observer(self.reports.append)
        return self

    def __exit__(self, *exc: object) -> None:
        remove_observer(self.reports.append)

    def __len__(self) -> int:
        return len(self.reports)


def calls_translated(fn, make, sizes, opt):
    """For each size: how many translations the call made (each call agrees with plain)."""
    counts = []
    for n in sizes:
        with Translations() as t:
            check_agrees(fn, (make(n),), optimized=opt)
        counts.append(len(t))
    return counts


@pytest.mark.parametrize("fn,make", PATTERNS, ids=[f.__name__ for f, _ in PATTERNS])
def test_automatic_dynamic_reads_do_not_recompile(fn, make):
    opt = ft.optimize("eager")(fn)
    counts = calls_translated(fn, make, SIZES, opt)
    # static, then one recompilation marks the changed dimension dynamic, then no more
    assert counts[0] >= 1 and counts[1] >= 1 and counts[2:] == [0] * (len(SIZES) - 2), counts
    with config.patch(assume_static_by_default=False):
        out = ft.explain(fn)(make(5))
    assert out.graph_break_count == 0 and out.graph_count == 1, str(out)
    assert not any("EQUALS_MATCH" in g for g in out.guards), out.guards


@pytest.mark.parametrize("fn,make", PATTERNS[:6], ids=[f.__name__ for f, _ in PATTERNS[:6]])
def test_dynamic_true_compiles_once(fn, make):
    opt = ft.optimize("eager", dynamic=True)(fn)
    counts = calls_translated(fn, make, SIZES, opt)
    assert counts[0] == 1 and counts[1:] == [0] * (len(SIZES) - 1), counts


@pytest.mark.parametrize("fn,make", PATTERNS[:6], ids=[f.__name__ for f, _ in PATTERNS[:6]])
def test_dynamic_false_never_goes_dynamic(fn, make):
    opt = ft.optimize("eager", dynamic=False)(fn)
    counts = calls_translated(fn, make, SIZES[:5], opt)
    assert all(c >= 1 for c in counts), counts
    guards = ft.last_decisions(fn)["guards"]
    # the whole shape is guarded, as on a first compilation (a dynamic entry guards the ndim)
    assert any(g.startswith("L['x'].shape == (") for g in guards), guards
    assert not any(".ndim ==" in g for g in guards), guards


def test_graph_reads_the_size_when_it_runs():
    def f(x):
        n = x.shape[0]
        return x.reshape(n, -1), x.sum() / len(x)

    with config.patch(assume_static_by_default=False):
        out = ft.explain(f)(np.ones((6, 2)))
    (graph,) = out.graphs
    text = str(graph)
    assert "getattr x.shape" in text and "operator.getitem(shape, 0)" in text
    assert "placeholder x" in text and text.count("getattr x.shape") == 1  # one read, used twice
    assert "float64(s" in text  # the reshape's result has symbolic dimensions
    # dynamic in both dimensions: dtype, ndim and layout checked, no size
    assert (
        "NDARRAY_MATCH(L['x']) dynamic_dims=(0, 1): type(L['x']) is numpy.ndarray and "
        "(L['x'].dtype is dtype('float64') or L['x'].dtype == dtype('float64')) and L['x'].ndim == 2 and "
        "L['x'].flags.c_contiguous and L['x'].flags.writeable"
    ) in out.guards, out.guards


def test_unused_size_read_is_dropped():
    def f(x):
        n, m = x.shape  # m unused
        return x * n

    with config.patch(assume_static_by_default=False):
        out = ft.explain(f)(np.ones((3, 4)))
    assert out.ops_per_graph[0].get("operator.getitem") == 1, str(out)


# ----------------------------------------------------------------- where Python needs the number
def loop_over_size(x):
    n = len(x)
    total = 0.0
    for i in range(n):
        total = total + x[i] * i
    return total


def branch_on_size(x):
    n = x.shape[0]
    if n > 4:
        return x[:4].sum()
    return x.sum() * 2


def format_size(x):
    return f"{len(x)} items", x * 2


def list_by_size(x, names):
    return names[: len(x)], x + 1


def iterate_rows(x):
    return [r.sum() for r in x]


def test_python_needs_the_number_breaks_with_the_reason():
    cases = [
        (loop_over_size, (vector(5),), "range() needs the value of L['x'].shape[0]"),
        (branch_on_size, (vector(5),), "a branch needs the value of L['x'].shape[0]"),
        (format_size, (vector(5),), "formatting needs the value of L['x'].shape[0]"),
        (list_by_size, (vector(5), list("abcdefgh")), "indexing a list of 8 needs the value of L['x'].shape[0]"),
        (iterate_rows, (table(5),), "iteration over an array with a symbolic first dimension"),
    ]
    for fn, args, reason in cases:
        with config.patch(assume_static_by_default=False):
            out = ft.explain(fn)(*args)
        assert [b.code for b in out.break_reasons][:1] == ["FH011"], str(out)
        assert reason in out.break_reasons[0].reason, str(out)
        assert out.graph_count >= 1 or fn is iterate_rows, str(out)


@pytest.mark.parametrize("fn", [loop_over_size, branch_on_size, format_size, iterate_rows])
def test_python_needs_the_number_still_agrees(fn):
    make = table if fn is iterate_rows else vector
    opt = ft.optimize("eager")(fn)
    calls_translated(fn, make, SIZES, opt)


def test_branch_on_size_keeps_the_frame_polymorphic():
    # the comparison runs in the graph; only the code after the branch is specialized per branch
    opt = ft.optimize("eager")(branch_on_size)
    counts = calls_translated(branch_on_size, vector, (5, 6, 7, 8, 9, 2, 3, 1, 0), opt)
    # 6: dynamic, resumes in the n > 4 branch; 7: that resume function goes dynamic; 2 and 3:
    # the same for the other branch; then nothing more
    assert counts[3:5] == [0, 0] and counts[7:] == [0, 0], counts


def test_list_slice_by_size_resumes():
    opt = ft.optimize("eager")(list_by_size)
    names = list("abcdefghij")
    for n in (3, 4, 5, 6):
        check_agrees(list_by_size, (vector(n), names), optimized=opt)


# ----------------------------------------------------------------- dimension relations
def add(x, y):
    return x + y


def add_by_length(x, y):
    return x * np.ones(len(y))


def stack_rows(x, y):
    return np.concatenate([x, y]).reshape(len(x) + len(y), -1)


@pytest.mark.parametrize("fn", [add, add_by_length])
def test_mismatched_dynamic_dimensions_raise_like_numpy(fn):
    opt = ft.optimize("eager")(fn)
    check_agrees(fn, (vector(3), vector(3)), optimized=opt)
    check_agrees(fn, (vector(4), vector(4)), optimized=opt)  # both dimensions dynamic now
    with Translations() as t:
        # the graph does not assume the two sizes equal: numpy checks them when it runs
        check_agrees(
            fn,
            (vector(5), vector(6)),
            (vector(6), vector(1)),
            (vector(2), vector(2)),
            (vector(1), vector(7)),
            (vector(0), vector(3)),
            optimized=opt,
        )
    assert len(t) == 0
    with pytest.raises(ValueError, match="could not be broadcast"):
        opt(vector(5), vector(6))


def test_mismatch_when_the_dynamic_entry_is_made():
    opt = ft.optimize("eager")(add)
    check_agrees(
        add,
        (vector(3), vector(3)),
        (vector(4), vector(5)),
        (vector(6), vector(6)),
        (vector(7), vector(2)),
        optimized=opt,
    )


def test_two_dynamic_inputs_read_together():
    opt = ft.optimize("eager")(stack_rows)
    counts = calls_translated(stack_rows, vector, (2, 3, 4, 6, 8), opt)
    assert counts[2:] == [0, 0, 0], counts
    with Translations() as t:
        check_agrees(stack_rows, (vector(3), vector(5)), (table(2), table(4)), optimized=opt)
    assert len(t) == 2  # 2-d inputs: static, then dynamic again


def test_only_the_dimension_that_changed_is_dynamic():
    def f(a):
        n, m = a.shape
        return a.reshape(n * m) * m

    opt = ft.optimize("eager")(f)
    with Translations() as t:
        for n in (3, 4, 5, 6):
            check_agrees(f, (np.ones((n, 2)),), optimized=opt)
    assert len(t) == 2
    guards = ft.last_decisions(f)["guards"]
    assert "L['a'].shape[1] == 2" in guards
    with Translations() as t:
        check_agrees(f, (np.ones((6, 3)),), (np.ones((7, 5)),), optimized=opt)
    assert len(t) == 1  # the second dimension changes: it becomes dynamic too


def test_int_power_by_a_size_is_specialized():
    # int ** int is an int or a float by the exponent's sign: that cannot come from a hint
    def f(x):
        n = len(x)
        return x * 2 ** (n - 3), pow(2, n - 3)

    opt = ft.optimize("eager")(f)
    check_agrees(f, (vector(4),), (vector(5),), (vector(2),), (vector(1),), (vector(6),), optimized=opt)


def test_squeeze_on_dynamic_dimensions_breaks():
    def f(x):
        return x.squeeze() * 2, np.squeeze(x).ndim

    opt = ft.optimize("eager")(f)
    check_agrees(f, (np.ones((3, 1)),), (np.ones((4, 1)),), (np.ones((1, 1)),), (np.ones((2, 1)),), optimized=opt)


def test_dynamic_sizes_inside_captured_loops():
    def f(x):
        n = len(x)
        acc = np.zeros(n)
        for i in range(8):
            acc = acc + x[:n] * i
        return acc, acc[: n // 2]

    opt = ft.optimize("eager")(f)
    counts = calls_translated(f, vector, (4, 5, 6, 7), opt)
    assert counts[2:] == [0, 0], counts
    with config.patch(assume_static_by_default=False):
        out = ft.explain(f)(vector(5))
    assert out.graph_break_count == 0 and any(note.captured for note in out.loops), str(out)


def test_method_keyword_numbers_are_specialized():
    def f(x, k):
        return x.sum(axis=k).shape

    opt = ft.optimize("eager")(f)
    check_agrees(f, (np.ones((2, 3)), 0), (np.ones((2, 3)), 1), optimized=opt)


def test_dynamic_size_read_inside_a_loop_body():
    def invariant_read(x):
        acc = 0.0
        for i in range(8):
            acc = acc + x[: len(x) // 2].sum() * i  # x is a loop invariant of the body
        return acc

    def branch_in_body(x):
        n = len(x)
        acc = 0.0
        for i in range(8):
            if i < n:  # needs n: the loop is unrolled, and the first branch breaks
                acc = acc + x[i % n]
        return acc

    for fn in (invariant_read, branch_in_body):
        opt = ft.optimize("eager")(fn)
        calls_translated(fn, vector, (4, 5, 6, 9, 3), opt)
    with config.patch(assume_static_by_default=False):
        out = ft.explain(invariant_read)(vector(5))
        assert out.graph_break_count == 0 and any(note.captured for note in out.loops), str(out)
        out = ft.explain(branch_in_body)(vector(5))
    assert not any(note.captured for note in out.loops), str(out)
    assert [b.code for b in out.break_reasons][:1] == ["FH011"], str(out)


# ----------------------------------------------------------------- int arguments
def branch_then_size(x):
    n = len(x)
    if n > 4:  # breaks: the code after it gets n as an int argument of a resume function
        return np.zeros(n) + x.sum(), x[: n // 2]
    return np.ones(n), x[n - 1 :]


def reshape_by(x, n):
    return x.reshape(n, -1) * n


def index_by(x, k):
    return x[k] + x[:k].sum()


def sum_over(x, axis):
    return x.sum(axis=axis)


def steps(x, k):
    for _ in range(k):
        x = x * 0.5 + 1.0
    return x


def test_size_passed_to_a_resume_function_goes_dynamic_too():
    opt = ft.optimize("eager")(branch_then_size)
    counts = calls_translated(branch_then_size, vector, (5, 6, 7, 8, 9, 10, 2, 3, 1, 4, 0), opt)
    # 6: the frame goes dynamic and resumes in the n > 4 branch; 7: that resume function sees
    # its n (and x) change and goes dynamic; 2 and 3: the same for the other branch
    assert counts[3:6] == [0, 0, 0] and counts[8:] == [0, 0, 0], counts


def test_changing_int_argument_becomes_dynamic():
    with Translations() as t:
        opt = check_agrees(reshape_by, (vector(12), 3), (vector(12), 4))
    assert len(t) == 2
    with Translations() as t:
        check_agrees(reshape_by, (vector(12), 6), (vector(12), 2), (vector(12), 12), (vector(12), 5), optimized=opt)
    assert len(t) == 0  # 5 does not divide 12: numpy raises, as in plain code
    with Translations() as t:
        opt = check_agrees(index_by, (vector(6), 1), (vector(6), 2), (vector(6), 4), (vector(6), 5), (vector(6), 7))
    assert len(t) == 2
    assert not any(g.startswith("L['k'] ==") for g in ft.last_decisions(index_by)["guards"])


def test_dynamic_int_is_specialized_where_its_value_is_needed():
    with config.patch(automatic_dynamic_ints=False):
        with Translations() as t:
            opt = check_agrees(sum_over, (table(4), 0), (table(4), 1), (table(4), 0), (table(4), 1))
        assert len(t) == 2  # axis 0; 1 (dynamic, but guarded on its value: the axis is needed)
        assert "L['axis'] == 1" in ft.last_decisions(sum_over)["guards"]
        check_agrees(sum_over, (table(4), 2), (table(4), -1), optimized=opt)
        check_agrees(steps, (vector(3), 5), (vector(3), 6), (vector(3), 5), (vector(3), 9))


def test_automatic_dynamic_int_needed_as_a_value_breaks_instead():
    with Translations() as t:
        opt = check_agrees(sum_over, (table(4), 0), (table(4), 1), (table(4), 0), (table(4), 1))
    assert [r.graph_break.code for r in t.reports if r.graph_break is not None] == ["FH011"]
    assert "L['axis'] ==" not in " ".join(ft.last_decisions(sum_over)["guards"])
    with Translations() as t:
        check_agrees(sum_over, (table(4), 1), (table(4), -1), (table(4), 2), optimized=opt)
    assert len(t) <= 1  # at most the resume function, for a result of another shape


def test_dynamic_false_keeps_int_arguments_specialized():
    opt = ft.optimize("eager", dynamic=False)(reshape_by)
    with Translations() as t:
        check_agrees(reshape_by, (vector(12), 3), (vector(12), 4), (vector(12), 6), optimized=opt)
    assert len(t) == 3
