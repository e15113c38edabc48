"""Graph breaks that resume: the graph so far runs, then the unsupported instruction in
ordinary Python, then a generated resume function (translated in its turn). Every function
must agree exactly with the plain one (values, prints, exceptions, argument mutations) on
the first call and on cache hits; explain() shows the graphs on either side of the break."""

from __future__ import annotations

import sys
import traceback
import types

import numpy as np
import pytest

import framehook.runtime as rt
import framehook.translator as ft
from framehook.translator.bytecode import decode
from framehook.translator.symbolic import resume
from symbolic_helpers import check_agrees, explained, line_of, run_both

PY311 = sys.version_info >= (3, 11)


# ------------------------------------------------------------------ straight-line breaks
def print_between(x):
    y = x * 2
    print("y is", y.shape, y.dtype)
    z = y + 1
    return z


def test_print_between_two_graphs(capsys):
    run_both(print_between, (np.arange(4.0),), capsys)
    out, failures = explained(print_between, np.arange(4.0))
    assert out.graph_count == 2 and out.graph_break_count == 1, str(out)
    assert failures == [None]
    b = out.break_reasons[0]
    assert (b.code, b.filename, b.lineno) == ("FH005", __file__, line_of(print_between, "print("))
    assert out.ops_per_graph == [{"operator.mul": 1}, {"operator.add": 1}]
    assert "FH005" in str(out)
    np.testing.assert_array_equal(out.result, np.arange(4.0) * 2 + 1)


def two_prints(x, k=2):
    a = x + k
    print("a", a)
    b = a * a
    print("b", b.sum())
    return b - 1


def test_two_breaks_three_graphs(capsys):
    run_both(two_prints, (np.arange(3.0),), capsys)
    out, failures = explained(two_prints, np.arange(3.0))
    assert out.graph_count == 3 and out.graph_break_count == 2 and failures == [None, None]
    # the second break is reported in the resume function, at the user's line
    assert [b.lineno for b in out.break_reasons] == [line_of(two_prints, 'print("a"'), line_of(two_prints, 'print("b"')]
    assert all(b.filename == __file__ for b in out.break_reasons)


def print_first(x):
    print("start")
    return x + 1


def test_break_before_any_operation_has_no_first_graph(capsys):
    run_both(print_first, (np.ones(2),), capsys)
    out, failures = explained(print_first, np.ones(2))
    assert out.graph_count == 1 and out.graph_break_count == 1 and failures == [None]


def keyword_call(x):
    y = x - 1
    print("v", y, sep="|", end="!\n")
    return y * 2


def star_call(x):
    y = x - 1
    args = ("v", 1)
    print(*args, **{"sep": "-"})
    return y * 2


@pytest.mark.parametrize("fn", [keyword_call, star_call])
def test_calls_with_keywords_and_star_args(fn, capsys):
    run_both(fn, (np.arange(2.0),), capsys)
    out, failures = explained(fn, np.arange(2.0))
    assert out.graph_count == 2 and failures == [None]


def branch(x):
    s = x.sum()
    if s > 3:
        return x + 1
    return x - 1


def test_data_dependent_branch_both_ways(capsys):
    opt = check_agrees(branch, (np.ones(3),), (np.zeros(3),), (np.ones(3),), (np.zeros(3),))
    for x in (np.ones(3), np.zeros(3)):
        out, failures = explained(branch, x)
        assert out.graph_count == 2 and failures == [None]
        assert out.break_reasons[0].code == "FH002"
        assert out.break_reasons[0].lineno == line_of(branch, "if s > 3")
    assert opt(np.full(3, 2.0)).tolist() == [3.0, 3.0, 3.0]


def short_circuit(x):
    m = x.max()
    z = (m > 0) and 5 or 7
    return x + z


def test_short_circuit_on_array_value(capsys):
    check_agrees(short_circuit, (np.ones(2),), (-np.ones(2),), (np.ones(2),))
    out, failures = explained(short_circuit, np.ones(2))
    assert out.graph_break_count >= 1 and failures[0] is None


def helper_prints(v):
    print("in helper", v)
    return v * 3


def calls_helper(x):
    y = x + 1
    z = helper_prints(y)
    return z + y


def test_break_in_inlined_function_resumes_at_the_call(capsys):
    run_both(calls_helper, (np.ones(2),), capsys)
    out, failures = explained(calls_helper, np.ones(2))
    # calls_helper: graph, break at the call, resume graph; helper_prints: its own break
    assert out.graph_count == 3 and failures == [None, None]
    assert out.break_reasons[0].function == "calls_helper"


def mutates_argument(x, d, lst):
    y = x * 2
    d.update(a=1)
    lst[0] = y.sum()
    lst.append(3)
    return y, d, lst


def test_mutation_of_arguments_is_replayed():
    check_agrees(mutates_argument, (np.ones(2), {}, [0]), (np.ones(2), {"b": 2}, [1, 2]))
    out, failures = explained(mutates_argument, np.ones(2), {}, [0])
    assert out.graph_count == 1 and not out.break_reasons, str(out)


def local_list_aliasing(x):
    lst = [x]
    other = lst
    lst.append(print("p"))
    other.append(x + 1)
    return lst, other is lst


def test_containers_built_in_the_frame_keep_their_identity(capsys):
    run_both(local_list_aliasing, (np.ones(2),), capsys)


def raises_after_graph(x):
    y = x + 1
    raise ValueError("bad %s" % (y.shape,))


def raises_in_call(x):
    y = x + 1
    int("not a number")
    return y


@pytest.mark.parametrize("fn", [raises_after_graph, raises_in_call])
def test_exceptions_agree(fn):
    check_agrees(fn, (np.ones(2),), (np.ones(2),))


def test_traceback_points_at_the_users_line():
    opt = ft.optimize("eager")(raises_in_call)
    for _ in range(2):
        with pytest.raises(ValueError) as info:
            opt(np.ones(2))
        last = traceback.extract_tb(info.value.__traceback__)[-1]  # the frame that called int()
        assert (last.filename, last.lineno) == (__file__, line_of(raises_in_call, "int("))


def after_resume_error(x):
    y = x * 2
    print("before")
    return y + undefined_name  # noqa: F821


def test_error_inside_the_resume_function_has_the_users_line(capsys):
    opt = ft.optimize("eager")(after_resume_error)
    for _ in range(2):
        with pytest.raises(NameError) as info:
            opt(np.ones(2))
        last = traceback.extract_tb(info.value.__traceback__)[-1]
        assert (last.filename, last.lineno) == (__file__, line_of(after_resume_error, "undefined_name"))
        assert last.name == "after_resume_error"


class Box:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __getattr__(self, name):  # an attribute hook: not a plain object the translator models
        raise AttributeError(name)


def constructs_object(x):
    y = x + 1
    b = Box(y)
    return b.v + y


def test_unsupported_value_after_the_break_falls_back_in_the_resume_function():
    check_agrees(constructs_object, (np.ones(2),), (np.ones(2),))
    out, failures = explained(constructs_object, np.ones(2))
    assert failures[0] is None and failures[-1] is not None  # the resume function ran its own code


def reads_strides(x):
    y = x * 2
    s = y.strides
    return y + s[0]


def masks(x):
    y = x - 1
    z = y[y > 0]
    return z * len(f"{len(z)}")  # formatting needs the mask's length (FH011); len(z) alone stays in the graph


def contains(x):
    y = x + 1
    found = y in [y]
    return y, found


def formats(x):
    y = x.sum()
    s = f"{y}"
    return x + len(s)


SCRATCH = types.ModuleType("scratch")
COUNTER = 0


def stores_attribute(x):
    y = x + 1
    SCRATCH.value = 3
    s = y.strides  # FH013: the store is replayed before the break
    return y * SCRATCH.value + s[0]


def stores_function_attribute(x):
    y = x + 1
    stores_function_attribute.value = 3  # FH006: attributes of functions are not replayed
    return y * stores_function_attribute.value


def stores_global(x):
    global COUNTER
    y = x + 1
    COUNTER = 5
    n = y.strides[0] + COUNTER  # FH013 after the store: the resume function reads 5
    return y + n


@pytest.mark.parametrize(
    "fn", [reads_strides, masks, contains, formats, stores_attribute, stores_function_attribute, stores_global]
)
def test_other_resumable_instructions(fn):
    check_agrees(fn, (np.arange(3.0),), (np.arange(3.0),))
    out, failures = explained(fn, np.arange(3.0))
    assert out.graph_break_count >= 1 and failures[0] is None, (failures, str(out))
    assert out.graph_count >= 1


def method_tolist(x):
    y = x * 2
    text = repr(y.tolist())
    z = y + 1
    return z, text


def method_with_arguments(x, k):
    y = x * 2
    m = y.round(decimals=k).tolist()
    s = y.astype(int).tolist()
    return y + 1, m, s


def method_item(x):
    y = x.sum()
    v = y.item()
    return x + v


def method_result_appended(x, lst):
    y = x + 1
    lst.append(y.tolist())
    return y


def method_star_args(x, a):
    y = x * 2
    s = y.tolist(*a)
    return y + 1, s


def attribute_then_method(x):
    y = x * 2
    n = y.strides[0] + len(y.tolist())
    return y + n


@pytest.mark.parametrize(
    "fn, args",
    [
        (method_tolist, (np.arange(3.0),)),
        (method_with_arguments, (np.arange(3.0) / 3, 2)),
        (method_item, (np.ones(2),)),
        (method_result_appended, (np.ones(2), [])),
        (method_star_args, (np.arange(3.0), ())),
        (attribute_then_method, (np.arange(3.0),)),
    ],
)
def test_method_calls_run_in_python(fn, args):
    # the method load, its arguments and the call run as the original instructions
    check_agrees(fn, args, args, args)
    out, failures = explained(fn, *args)
    assert out.graph_count >= 1 and failures[0] is None, str(out)
    assert out.break_reasons[0].code in ("FH004", "FH013")


def test_method_call_with_star_args_does_not_recompile():
    from framehook.translator.symbolic import add_observer, remove_observer

    seen = []
    ft.reset()
    add_observer(seen.append)
    try:
        opt = ft.optimize("eager")(method_star_args)
        for _ in range(6):
            opt(np.arange(3.0), ())
    finally:
        remove_observer(seen.append)
    assert len(seen) == 2, [str(r.graph_break) for r in seen]  # the frame and one resume function, once each


def test_nopython_still_raises():
    with pytest.raises(ft.symbolic.GraphBreak if hasattr(ft, "symbolic") else Exception, match="FH005"):
        ft.optimize("eager", nopython=True)(print_between)(np.ones(2))


# ------------------------------------------------------------------ what still falls back
def in_loop(x):
    for i in range(3):
        print(i)
        x = x + i
    return x


def method_in_branch(x, flag):
    y = x * 2
    text = y.tolist(1 if flag else 2)
    return y + 1, text


def live_iterator(x):
    it = iter([1, 2])
    print("c")
    return x + next(it)


@pytest.mark.parametrize("fn, why", [(live_iterator, "cannot be rebuilt")])
def test_breaks_that_fall_back(fn, why, capsys):
    run_both(fn, (np.ones(2),), capsys)
    out, failures = explained(fn, np.ones(2))
    assert out.graph_count == 0 and failures[0] is not None
    if why is not None:
        assert why in failures[0]


def test_method_call_with_a_branch_in_its_arguments_falls_back():
    # y.tolist(1 if flag else 2) raises TypeError; the branch inside the call keeps it in the original code
    check_agrees(method_in_branch, (np.ones(2), True), (np.ones(2), False))
    code = method_in_branch.__code__
    insts = decode(code)
    load = next(i for i, inst in enumerate(insts) if inst.argval == "tolist")
    site = None
    try:
        site = resume.break_site(code, insts, load)
    except resume.CannotResume as e:
        assert "straight-line" in str(e)
    assert site is None or not site.segment


def test_generated_code_is_cached_and_reused(capsys):
    opt = ft.optimize("eager")(print_between)
    ft.reset()
    opt(np.ones(3))
    opt(np.ones(3))
    entries = rt.cache_entries(print_between.__code__)
    assert len(entries) == 1 and entries[0].hits == 1
    assert entries[0].code.co_filename == print_between.__code__.co_filename
    assert entries[0].code.co_firstlineno == print_between.__code__.co_firstlineno


# ------------------------------------------------------------------ the pieces
def test_break_site_refuses_what_it_cannot_resume():
    code = in_loop.__code__
    insts = decode(code)
    call = next(
        i
        for i, inst in enumerate(insts)
        if inst.opname.startswith("CALL") and inst.lineno == line_of(in_loop, "print(i)")
    )
    with pytest.raises(resume.CannotResume, match="loop"):
        resume.break_site(code, insts, call)
    load = next(i for i, inst in enumerate(insts) if inst.opname.startswith("LOAD_FAST"))
    with pytest.raises(resume.CannotResume, match="does not resume"):
        resume.break_site(code, insts, load)


def test_make_resume_code_starts_at_the_target():
    code = print_between.__code__
    insts = decode(code)
    target = next(i for i, inst in enumerate(insts) if inst.lineno == line_of(print_between, "z = y + 1"))
    new, stack_names = resume.make_resume_code(code, target, [], ["y"], insts[target].lineno)
    assert resume.is_resume_code(new) and not resume.is_resume_code(code)
    assert new.co_varnames[: new.co_argcount] == ("y",) and stack_names == []
    assert new.co_filename == code.co_filename and new.co_firstlineno == code.co_firstlineno
    fn = types.FunctionType(new, print_between.__globals__)
    with rt.disable():
        assert fn(np.ones(2)).tolist() == [2.0, 2.0]


def test_rebuilder_refuses_values_it_cannot_rebuild():
    from framehook.translator.symbolic.values import NULL, CellV, Cell, Const, IterV

    rb = resume.Rebuilder(tracer=None)
    for v in (IterV([]), CellV(Cell()), Const([1, 2])):
        with pytest.raises(resume.CannotResume):
            rb.collect(v)
    with pytest.raises(resume.CannotResume, match="NULL"):
        rb.collect(NULL)
    rb.collect(NULL, null_ok=True)
    rb.collect(Const((1, "a", (2.0, None))))
