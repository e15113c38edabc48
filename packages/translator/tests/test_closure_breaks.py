"""Graph breaks in frames with cells and free variables: the frame's cells are shared with
its resume functions (their free variables), so a closure made before the break sees
assignments made after it, exactly as in plain Python."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.bytecode import Codegen, decode, transform_code_object
from framehook.translator.symbolic import add_observer, remove_observer
from symbolic_helpers import check_agrees, explained, run_both


# ------------------------------------------------------------------ cells of the frame
def closure_read_after(x):
    k = 3.0

    def inner():
        return k

    y = x * 2
    print("between", inner())
    return y + inner()


def cell_assigned_after(x):
    k = 3.0
    g = lambda: k  # noqa: E731
    y = x * g()
    print("k was", g())
    k = 5.0
    return y + g()


def cell_unbound_at_break(x):
    g = lambda: k  # noqa: E731
    y = x + 1
    print("no k yet")
    k = 4.0
    return y * g()


def argument_cell(x, s):
    g = lambda: s * 2  # noqa: E731
    y = x - 1
    print("s", s)
    return y * g()


def closure_escapes(x):
    k = 2.0
    g = lambda: k  # noqa: E731
    y = x * k
    print("escaping")
    k = 7.0
    return y, g


def nonlocal_counter(x):
    n = 0

    def bump():
        nonlocal n
        n += 1
        return n

    bump()
    y = x * 3
    print("bumped", n)
    bump()
    return y + n


def closure_with_defaults(x):
    k = 1.5

    def scale(v, factor=2.0, *, offset=0.25):
        return v * factor * k + offset

    y = scale(x)
    print("scaled")
    return scale(y, 3.0, offset=1.0), scale.__defaults__, scale.__kwdefaults__, scale.__qualname__


def loop_in_closure_frame(x, n):
    acc = x * 0
    k = 0.5
    g = lambda v: v * k  # noqa: E731
    for i in range(n):
        print("step", i)
        acc = acc + g(x)
    return acc + g(1.0)


CASES = [
    (closure_read_after, (np.arange(3.0),), 2),
    (cell_assigned_after, (np.arange(3.0),), 2),
    (cell_unbound_at_break, (np.arange(3.0),), 2),
    (argument_cell, (np.arange(3.0), 1.5), 2),
    (closure_with_defaults, (np.arange(3.0),), 2),
    (nonlocal_counter, (np.arange(3.0),), 1),
    (loop_in_closure_frame, (np.arange(3.0), 3), 2),
]


@pytest.mark.parametrize("fn, args, graphs", CASES, ids=[c[0].__name__ for c in CASES])
def test_breaks_in_frames_with_cells_keep_their_graphs(fn, args, graphs, capsys):
    run_both(fn, args, capsys)
    out, failures = explained(fn, *args)
    capsys.readouterr()
    assert out.graph_count >= graphs, str(out)
    assert failures[0] is None, failures  # the first break resumes instead of running the frame as it was


def test_a_closure_made_before_the_break_sees_later_assignments(capsys):
    opt = ft.optimize("eager")(closure_escapes)
    for _ in range(3):
        y, g = opt(np.arange(3.0))
        np.testing.assert_array_equal(y, np.arange(3.0) * 2)
        assert g() == 7.0 and g.__closure__[0].cell_contents == 7.0
    capsys.readouterr()


# ------------------------------------------------------------------ free variables of the frame
def make_stepper(k, offset):
    def step(x):
        y = x * k
        print("step with", k)
        return y + offset

    return step


def test_a_closure_frame_with_a_break_resumes_with_its_own_cells(capsys):
    a, b = make_stepper(2.0, 1.0), make_stepper(3.0, -1.0)
    assert a.__code__ is b.__code__
    check_agrees(a, (np.arange(3.0),), (np.arange(3.0),))
    check_agrees(b, (np.arange(3.0),), (np.arange(3.0),))
    out, failures = explained(a, np.arange(3.0))
    assert out.graph_count == 2 and failures == [None], str(out)
    opt_a, opt_b = ft.optimize("eager")(a), ft.optimize("eager")(b)
    for _ in range(2):  # one code object, two sets of cells: each call gets its own
        np.testing.assert_array_equal(opt_a(np.arange(3.0)), np.arange(3.0) * 2.0 + 1.0)
        np.testing.assert_array_equal(opt_b(np.arange(3.0)), np.arange(3.0) * 3.0 - 1.0)
    capsys.readouterr()


def test_an_exception_after_the_break_in_a_closure_frame_matches_plain(capsys):
    def outer(limit):
        def checked(x):
            y = x + 1
            print("checking")
            if limit < 0:
                raise ValueError(f"negative limit {limit}")
            return y * limit

        return checked

    check_agrees(outer(2), (np.ones(2),), (np.ones(2),))
    check_agrees(outer(-1), (np.ones(2),), (np.ones(2),))
    capsys.readouterr()


# ------------------------------------------------------------------ backends
def test_what_a_backend_returns_is_not_translated():
    seen = []

    def observe(report):
        seen.append(report.code.co_name)

    def backend(graph, example_inputs):
        forward = graph.forward

        def run(*args):
            print("running the graph")  # a graph break, were this frame translated
            return forward(*args)

        return run

    def fn(x):
        return x * 2 + 1

    add_observer(observe)
    try:
        opt = ft.optimize(backend=backend)(fn)
        for _ in range(2):
            np.testing.assert_array_equal(opt(np.arange(3.0)), np.arange(3.0) * 2 + 1)
    finally:
        remove_observer(observe)
    assert seen == ["fn"]


# ------------------------------------------------------------------ the bytecode underneath
def many_locals_with_a_cell(x):
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = 1
    b0 = b1 = b2 = b3 = b4 = b5 = 2
    k = 10

    def inner():
        return k

    return a0 + a9 + b0 + b5 + inner() + x, (a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, b3, b4)


def test_new_locals_keep_cells_and_free_variables_in_place():
    # 3.11+: locals, cells and free variables share one array; adding locals moves the
    # cells, and two-local instructions (3.13) whose indices no longer fit are split
    code = many_locals_with_a_cell.__code__

    def add_locals(insts, opts):
        cg = Codegen()
        for i in range(20):
            cg.load_const(i)
            cg.emit("STORE_FAST", argval=f"___extra{i}")
        keep = next(i for i, inst in enumerate(insts) if inst.opname not in ("MAKE_CELL", "COPY_FREE_VARS", "RESUME"))
        insts[keep:keep] = cg.instructions

    new = transform_code_object(code, add_locals)
    assert new.co_nlocals == code.co_nlocals + 20
    fn = types.FunctionType(new, many_locals_with_a_cell.__globals__)
    assert fn(5) == many_locals_with_a_cell(5)


def pair_and_cell():
    a, b = 1.5, 2.5
    k = 4

    def inner():
        return k

    return a + b + inner(), b - a


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="before 3.11 cells are numbered apart from locals: reordering locals moves no cell",
)
def test_reordered_locals_are_resolved_by_name_and_pairs_split():
    code = pair_and_cell.__code__

    def move_locals_back(insts, opts):
        opts["co_varnames"][:0] = [f"___front{i}" for i in range(20)]

    new = transform_code_object(code, move_locals_back)
    assert new.co_varnames[20:] == code.co_varnames
    assert types.FunctionType(new, {})() == pair_and_cell()
    if sys.version_info >= (3, 13):
        # a and b now sit at slots 20 and 21, which a two-local instruction cannot encode
        # (3.14+ spells the pair LOAD_FAST_BORROW_LOAD_FAST_BORROW)
        pairs = (
            "LOAD_FAST_LOAD_FAST",
            "LOAD_FAST_BORROW_LOAD_FAST_BORROW",
            "STORE_FAST_LOAD_FAST",
            "STORE_FAST_STORE_FAST",
        )
        assert any(i.opname in pairs[:2] for i in decode(code))
        assert not any(i.opname in pairs for i in decode(new))
