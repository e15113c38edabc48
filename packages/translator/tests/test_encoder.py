"""The encoder (``bytecode/codegen.py``): code made by kind and typed operand assembles to
the bytes CPython's own compiler writes for the same code, on every version."""

import pytest

from framehook.translator.bytecode import Codegen, decode, prefix_length, transform_code_object
from framehook.translator.bytecode.behaviour import BEHAVIOUR
from framehook.translator.bytecode.codegen import like, make, split_pair
from framehook.translator.bytecode.kinds import Kind


def _compiled(source):
    scope = {}
    exec(compile(source, "<encoder test>", "exec"), scope)
    return scope["f"].__code__


def _with_body(code, emit):
    """``code`` with its body (after the frame set-up) replaced by what ``emit(cg)`` makes."""
    cg = Codegen()
    emit(cg)

    def transform(insts, opts):
        insts[prefix_length(insts) :] = cg.instructions

    return transform_code_object(code, transform)


def _respelled(code, kinds):
    """``code`` with each instruction of ``kinds`` spelled again by the encoder from its
    kind and operands (kept in place: the jumps to it stay)."""
    seen = []

    def transform(insts, opts):
        for inst in insts:
            if inst.kind not in kinds:
                continue
            if inst.kind == Kind.BRANCH:
                new = make(Kind.BRANCH, target=inst.target, condition=inst.condition, keeps_operand=inst.keeps_operand)
            else:
                new = make(inst.kind, target=inst.target)
            seen.append((inst.opname, new.opname))
            inst.opcode, inst.opname = new.opcode, new.opname

    return transform_code_object(code, transform), seen


def _call_source(call):
    return f"def f():\n    return {call}\n"


def _load_callable(cg, name):
    cg.load_global(name, push_null=BEHAVIOUR.global_loads_push_null)


def test_a_plain_call():
    code = _compiled(_call_source("g('a', 'b')"))

    def emit(cg):
        _load_callable(cg, "g")
        cg.load_const("a")
        cg.load_const("b")
        cg.call(2)
        cg.return_value()

    assert _with_body(code, emit).co_code == code.co_code


def test_a_call_with_keywords():
    code = _compiled(_call_source("g('a', b='b', c='c')"))

    def emit(cg):
        _load_callable(cg, "g")
        for value in ("a", "b", "c"):
            cg.load_const(value)
        cg.call(3, kw_names=("b", "c"))
        cg.return_value()

    assert _with_body(code, emit).co_code == code.co_code


def test_a_method_call():
    code = _compiled(_call_source("o.m('a')"))

    def emit(cg):
        cg.load_global("o")
        cg.load_method("m")
        cg.load_const("a")
        cg.call(1, method=True)
        cg.return_value()

    assert _with_body(code, emit).co_code == code.co_code


def test_an_attribute_then_a_subscript():
    code = _compiled(_call_source("o.a['k']"))

    def emit(cg):
        cg.load_global("o")
        cg.load_attr("a")
        cg.load_const("k")
        cg.subscr()
        cg.return_value()

    assert _with_body(code, emit).co_code == code.co_code


@pytest.mark.parametrize(
    "test",
    ["C", "not C", "C is None", "C is not None"],
)
def test_a_branch_of_each_condition(test):
    code = _compiled(f"def f():\n    if {test}:\n        G()\n    H()\n")
    new, seen = _respelled(code, {Kind.BRANCH})
    assert seen and new.co_code == code.co_code


@pytest.mark.parametrize("expr", ["A or B", "A and B"])
def test_a_branch_that_may_keep_its_operand(expr):
    # 3.9-3.11: JUMP_IF_TRUE_OR_POP / JUMP_IF_FALSE_OR_POP; later: COPY and a plain branch
    code = _compiled(f"def f():\n    return {expr}\n")
    new, _ = _respelled(code, {Kind.BRANCH})
    assert new.co_code == code.co_code


def test_a_forward_jump():
    # a tail long enough that no compiler copies it into both branches (3.12 copies short ones)
    code = _compiled(
        "def f():\n    if C:\n        G()\n    else:\n        H()\n    K()\n    L()\n    M()\n    return N\n"
    )
    forward = [i for i in decode(code) if i.kind == Kind.JUMP and i.target.offset > i.offset]
    assert forward, "the compiler jumps over the else branch"
    new, seen = _respelled(code, {Kind.JUMP})
    assert seen and new.co_code == code.co_code


def test_copy_and_swap_of_the_top():
    # a chained comparison copies the middle operand and swaps it under the first result
    code = _compiled("def f():\n    return A < B < C\n")
    insts = decode(code)
    copies = [i for i in insts if i.kind in (Kind.COPY, Kind.SWAP, Kind.ROTATE)]
    assert copies

    def transform(insts, opts):
        for inst in insts:
            if inst.kind in (Kind.COPY, Kind.SWAP) and inst.depth in (1, 2):
                cg = Codegen()
                new = cg.copy(inst.depth) if inst.kind == Kind.COPY else cg.swap(inst.depth)
                inst.opcode, inst.opname, inst.arg = new.opcode, new.opname, new.arg

    assert transform_code_object(code, transform).co_code == code.co_code


def test_like_runs_a_call_plainly():
    code = _compiled(_call_source("g('a')"))
    call = next(i for i in decode(code) if i.kind == Kind.CALL)
    plain = like(call, Kind.CALL)
    assert plain.kind == Kind.CALL and plain.arg == call.arg and plain.positions == call.positions
    assert plain.opname == call.opname  # a plain call is spelled as the compiler spells it


def test_split_pair_spells_each_local_as_the_pair():
    code = _compiled("def f(a, b):\n    return a + b\n")
    pairs = [i for i in decode(code) if i.kind == Kind.LOAD_LOCAL_PAIR]
    if not pairs:
        assert split_pair(decode(code)[-1]) is None
        pytest.skip("no two-local loads on this Python")
    first, second = split_pair(pairs[0])
    assert (first.kind, second.kind) == (Kind.LOAD_LOCAL, Kind.LOAD_LOCAL)
    assert (first.argval, second.argval) == ("a", "b")
    assert first.opname in pairs[0].opname


def test_an_unspellable_kind_is_refused():
    missing = [k for k in (Kind.RETURN_CONST, Kind.GEN_START, Kind.PRINT_EXPR) if make_or_none(k) is None]
    assert missing, "some kind has no spelling on every version"


def make_or_none(kind):
    try:
        return make(kind)
    except ValueError:
        return None
