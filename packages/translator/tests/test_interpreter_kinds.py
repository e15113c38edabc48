"""The symbolic interpreter dispatches on instruction kinds, not on opcode names.

Every handler is named after a kind and reads the instruction's typed operands; a kind
without a handler breaks with FH001 naming the concrete opcode. Functions that exercise
the kinds with the most spellings across versions (calls, branches, stack shuffles,
formatting, operators) are captured whole and agree with the plain function."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.bytecode import decode
from framehook.translator.bytecode.behaviour import BEHAVIOUR
from framehook.translator.bytecode.kinds import Kind
from framehook.translator.symbolic import GraphBreak
from framehook.translator.symbolic import interpreter
from framehook.translator.symbolic.interpreter import HANDLER_PREFIX, FrameTracer
from framehook.translator.symbolic.tracer import Tracer
from framehook.translator.symbolic.values import Const
from symbolic_helpers import check_agrees
from code_samples import stdlib_instructions

pytestmark = pytest.mark.usefixtures("fresh_translator")

KINDS = {value for name, value in vars(Kind).items() if name.isupper()}
A = np.arange(12.0).reshape(3, 4)
V = np.arange(5.0)


def _frame(code):
    """A root frame on ``code`` with no locals (its instructions are run one by one)."""
    tracer = Tracer(code, globals(), vars(builtins), lambda guard: None)
    return FrameTracer(tracer, code, globals(), {}, {}, None)


# ----------------------------------------------------------------- the dispatch table


def test_handlers_are_keyed_by_kind_and_named_after_it():
    assert FrameTracer.handlers
    for kind, handler in FrameTracer.handlers.items():
        assert kind in KINDS
        assert getattr(FrameTracer, HANDLER_PREFIX + kind) is handler
    # no handler is named after a concrete opcode any more
    assert [n for n in dir(FrameTracer) if n.startswith("op_")] == []


def _renamed(a, b, k):
    if k is not None and a < b:
        return (a + b) * k, -a, not b, f"{k!r:>4}", [a, *[b, k]][1:]
    return a or b, a and b, ~b


@pytest.mark.parametrize("args", [(2, 3, 4), (5, 3, 4), (0, 7, None), (1, 0, None)])
def test_dispatch_reads_kinds_and_operands_not_opcode_names(args):
    code = _renamed.__code__
    frame = _frame(code)
    frame.locals.update({name: Const(value) for name, value in zip(code.co_varnames, args)})
    for inst in frame.insts:
        inst.opname = "RENAMED"  # only a break message would show it
    assert frame.const_of(frame.run()) == _renamed(*args)


def test_a_handler_named_after_no_kind_is_refused():
    class Misspelt(FrameTracer):
        def k_load_fast(self, inst):  # an opcode's name, not a kind's
            pass

    with pytest.raises(TypeError, match="k_load_fast names no instruction kind"):
        interpreter._handler_table(Misspelt)


def test_every_kind_of_real_code_has_a_handler_or_breaks_naming_the_opcode():
    frame = _frame(_frame.__code__)
    unhandled = {}
    for inst in stdlib_instructions():
        if inst.kind not in FrameTracer.handlers:
            unhandled.setdefault((inst.kind, inst.opname, inst.intrinsic), inst)
    # real code has kinds the interpreter refuses (generators, try blocks, sets, ...)
    assert {kind for kind, _, _ in unhandled} & {Kind.YIELD_VALUE, Kind.BUILD_SET, Kind.LOAD_NAME}
    for (kind, opname, intrinsic), inst in unhandled.items():
        with pytest.raises(GraphBreak) as e:
            frame.execute(inst)
        assert e.value.code == "FH001"
        if intrinsic is not None:  # decoded from CALL_INTRINSIC_1: named by the intrinsic
            assert e.value.reason == f"intrinsic {inst.argrepr}"
        else:
            assert e.value.reason == f"instruction {opname}"


def test_a_constant_of_the_code_is_loaded_even_when_it_is_an_exception_class():
    def f():
        x = 123456789
        return x

    consts = tuple(ValueError if c == 123456789 else c for c in f.__code__.co_consts)
    code = f.__code__.replace(co_consts=consts)
    assert any(i.kind == Kind.LOAD_CONST and i.argval is ValueError for i in decode(code))
    result = _frame(code).run()
    assert isinstance(result, Const) and result.value is ValueError


def test_keyword_names_reach_the_call_that_follows_them():
    def f(g, a):
        return g(a, k=2)

    calls = [i for i in decode(f.__code__) if i.kind == Kind.CALL]
    assert len(calls) == 1
    names = [i for i in decode(f.__code__) if i.kind == Kind.KW_NAMES]
    # the names come either from an instruction before the call or as a tuple on top
    assert bool(names) == BEHAVIOUR.kw_names_instruction
    assert calls[0].call_names != bool(names)
    assert calls[0].call_slot == BEHAVIOUR.calls_push_null
    check_agrees(f, (_helper, V))


# ----------------------------------------------------------------- captured whole


def _helper(x, scale=1.0, *, shift=0.0, k=0):
    return x * scale + shift + k


class _Box:
    def __init__(self, k):
        self.k = k

    def times(self, x, extra=0.0):
        return x * self.k + extra


def calls_with_keywords_and_methods(x, n):
    box = _Box(n)
    args = (x,)
    opts = {"shift": 1.0}
    return (
        _helper(x, scale=n),
        _helper(x, n, shift=2.0),
        _helper(*args, **opts),
        _helper(x, *args[1:], k=n),
        np.sum(x, axis=0),
        x.sum(axis=-1, keepdims=True),
        box.times(x, extra=n),
        box.times(x),
        np.clip(x, a_min=0.0, a_max=float(n)),
    )


def branches_of_every_condition(x, n, flag, maybe):
    out = x
    if maybe is None:
        out = out + 1
    if maybe is not None:
        out = out + maybe
    if flag:
        out = out * 2
    if not flag:
        out = out - 1
    k = n and 3  # 3.9-3.11: a branch that keeps its operand
    m = n or 5
    steps = 0
    while steps < n:
        out = out + steps
        steps += 1
    return out, k, m, (1 if flag else 2), (maybe if maybe is not None else -1), flag and not maybe


def stack_shuffles(x, i, j):
    a, b = x[0], x[1]
    a, b = b, a
    c, d, e = i, j, a
    c, d, e = e, c, d
    y = x.copy()
    y[i] += 1.0
    cells = [i, j]
    cells[0] += j
    box = _Box(i)
    box.k += j
    inside = 0 <= i < j
    return a, b, c, d, e, y, cells, box.k, inside


def formatting(x, n, w, name):
    return (
        f"{n}",
        f"{n!r}",
        f"{name!s:>{w}}",
        f"{n:05d}",
        f"{name!a}",
        f"<{n}|{name}|{w:x}>",
        "%d" % n,
        "%s!" % name,
        "{}/{}".format(n, w),
        x * n,
    )


def unary_and_binary(x, i, f):
    k = i
    k += 3
    k *= 2
    k -= 1
    k //= 2
    k %= 7
    k **= 2
    k <<= 1
    k >>= 1
    k &= 7
    k |= 8
    k ^= 1
    y = x.copy()
    y += 1
    y *= f
    y -= 0.5
    y /= 2
    return (
        -x,
        +x,
        ~i,
        not i,
        -f,
        +f,
        x + i,
        x - f,
        x * 2,
        x / 3,
        x // 2,
        x % 3,
        x**2,
        x @ x.T,
        i << 2,
        i >> 1,
        i & 6,
        i | 1,
        i ^ 3,
        k,
        y,
        x is None,
        f is not None,
    )


def containers_and_closures(x, n):
    first, *rest = [n, n + 1, n + 2]
    t = (*rest, first)
    d = {"a": n, **{"b": first}}
    items = [x, *rest]
    squares = [v * v for v in rest]
    table = {key: value for key, value in d.items()}
    scale = n

    def inner(y, extra=1):
        return y * scale + extra

    return t, d, len(items), squares, table, inner(x), (lambda y, k=2: y + k)(x), x[1:], x[:, ::2]


CAPTURED = [
    (calls_with_keywords_and_methods, [(A, 3), (V, 2)]),
    (branches_of_every_condition, [(A, 3, True, None), (A, 0, False, 2.5)]),
    (stack_shuffles, [(V, 1, 3), (V, 3, 2)]),
    (formatting, [(A, 7, 6, "ab"), (V, -12, 2, "é")]),
    (unary_and_binary, [(A, 5, 1.5), (A, 0, -2.0)]),
    (containers_and_closures, [(A, 2), (A, -1)]),
]


@pytest.mark.parametrize("fn,calls", CAPTURED, ids=[f.__name__ for f, _ in CAPTURED])
def test_captured_whole_and_agrees_with_the_plain_function(fn, calls):
    opt = ft.optimize("eager")(fn)
    check_agrees(fn, *calls, calls[0], optimized=opt)
    for args in calls:
        out = ft.explain(fn)(*args)
        assert out.graph_break_count == 0, str(out)
        assert out.graph_count == 1


# ----------------------------------------------------------------- breaks


def builds_a_set(x, a, b):
    s = {a, b}
    return x + len(s)


# compiled here: pytest rewrites the assert statements of a test module
_SOURCE = "def asserts(x, n):\n    assert n, 'n must be set'\n    return x * n\n"
_NAMESPACE: dict = {}
exec(compile(_SOURCE, "<asserts>", "exec"), _NAMESPACE)
asserts = _NAMESPACE["asserts"]


def test_a_kind_without_a_handler_breaks_naming_the_opcode():
    (inst,) = [i for i in decode(builds_a_set.__code__) if i.kind == Kind.BUILD_SET]
    assert Kind.BUILD_SET not in FrameTracer.handlers
    check_agrees(builds_a_set, (V, 1, 2), (V, 1, 1))
    out = ft.explain(builds_a_set)(V, 1, 2)
    assert [(b.code, b.reason) for b in out.break_reasons][:1] == [("FH001", f"instruction {inst.opname}")]


def test_an_assertion_that_fails_breaks_as_an_explicit_raise():
    # the AssertionError is loaded by an instruction of its own, or (3.14+) as one of the
    # interpreter's constants: both break the same way, and only when the assertion fails
    check_agrees(asserts, (V, 2), (V, 0))
    assert ft.explain(asserts)(V, 2).graph_break_count == 0
    try:
        ft.explain(asserts)(V, 0)
    except AssertionError as e:
        out = e.explain_output  # type: ignore[attr-defined]
    else:  # pragma: no cover - the assertion fails
        raise AssertionError("the function did not raise")
    assert [(b.code, b.reason) for b in out.break_reasons][:1] == [("FH009", "an explicit raise")]
