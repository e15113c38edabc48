"""Instructions and argument layouts that newer CPythons brought (3.14: borrowed and small-int
loads, subscripts as BINARY_OP, LOAD_SPECIAL, CALL_FUNCTION_EX's kwargs slot, t-strings;
3.15: iterators in two slots). Each test runs wherever the form exists; the forms one
version lacks are skipped there with the reason."""

import dis
import opcode
import sys

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.bytecode import build_function, create_instruction, decode
from framehook.translator.bytecode.arguments import DECODER, decoder_for
from framehook.translator.bytecode.assemble import AssembleError
from framehook.translator.bytecode.behaviour import BEHAVIOUR, behaviour_for
from framehook.translator.bytecode.codegen import Codegen
from framehook.translator.bytecode.transform import code_options, resolve_args

HAS_SMALL_INT = BEHAVIOUR.small_ints_load_with_load_small_int
HAS_TSTRINGS = sys.version_info >= (3, 14)


def test_the_table_names_what_3_14_and_3_15_changed():
    b13, b14, b15 = (behaviour_for((3, m)) for m in (13, 14, 15))
    assert not b13.subscripts_are_binary_ops and b14.subscripts_are_binary_ops
    assert not b13.call_ex_always_has_kwargs_slot and b14.call_ex_always_has_kwargs_slot
    assert not b13.loads_may_borrow and b14.loads_may_borrow and b15.loads_may_borrow
    assert (b13.loop_exit_pop, b14.loop_exit_pop) == ("POP_TOP", "POP_ITER")
    assert not b14.iterators_take_two_slots and b15.iterators_take_two_slots
    assert b13.return_const_instruction and not b14.return_const_instruction
    assert decoder_for((3, 14)) is not None and decoder_for((3, 15)) is not None


def test_a_subscript_the_codegen_emits_runs_here():
    cg = Codegen()
    cg.load_fast("seq")
    cg.load_fast("k")
    cg.subscr()
    cg.return_value()
    fn = build_function(cg.instructions, ["seq", "k"])
    assert fn([10, 20, 30], 1) == 20 and fn({"a": 5}, "a") == 5
    emitted = cg.instructions[2]
    assert (emitted.opname == "BINARY_OP") == BEHAVIOUR.subscripts_are_binary_ops
    if emitted.opname == "BINARY_OP":
        assert emitted.binary_op == "[]"


def test_decoded_subscripts_and_star_calls_read_the_same_everywhere():
    def f(a, b):
        return a[1], print(*b)

    insts = decode(f.__code__)
    subscripts = [i for i in insts if i.opname == "BINARY_SUBSCR" or i.binary_op == "[]"]
    assert len(subscripts) == 1
    star = [i for i in insts if i.opname == "CALL_FUNCTION_EX"]
    # f(*b) pops a kwargs slot exactly where the slot is always there
    assert len(star) == 1 and star[0].call_kwargs == BEHAVIOUR.call_ex_always_has_kwargs_slot


def test_borrowed_loads_read_as_loads():
    def f(x, y):
        return x + y

    names = {i.opname for i in decode(f.__code__)}
    assert bool(names & {"LOAD_FAST_BORROW", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"}) == BEHAVIOUR.loads_may_borrow
    captured = ft.optimize("eager")(f)
    x = np.arange(3.0)
    assert np.array_equal(captured(x, 2.0), f(x, 2.0))


@pytest.mark.skipif(not HAS_SMALL_INT, reason="LOAD_SMALL_INT does not exist before CPython 3.14")
def test_small_int_loads_resolve_from_their_value():
    fn = build_function([create_instruction("LOAD_SMALL_INT", argval=7), create_instruction("RETURN_VALUE")])
    assert fn() == 7
    for i in decode(fn.__code__):
        if i.opname == "LOAD_SMALL_INT":
            assert i.arg == i.argval == 7
    opts = code_options((lambda: 0).__code__)
    with pytest.raises(AssembleError, match="give arg="):
        resolve_args([create_instruction("LOAD_SMALL_INT", argval=300)], opts)


@pytest.mark.skipif(not HAS_SMALL_INT, reason="LOAD_SPECIAL and LOAD_COMMON_CONSTANT do not exist before CPython 3.14")
def test_special_method_and_common_constant_arguments_round_trip():
    for name, values in (
        ("LOAD_SPECIAL", opcode._special_method_names),
        ("LOAD_COMMON_CONSTANT", opcode._common_constants),
    ):
        for arg, value in enumerate(values):
            inst = create_instruction(name, arg=arg)
            assert inst.argval is value or inst.argval == value
            assert DECODER.encode_value(name, value) == arg
    assert DECODER.encode_value("LOAD_SPECIAL", "__len__") is None


def test_loops_and_comprehensions_end_with_this_pythons_exit():
    def f(x, n):
        total = x * 0
        for k in range(n):
            total = total + x * k
        return total, [v * 2 for v in range(n)]

    insts = decode(f.__code__)
    for k, inst in enumerate(insts):
        if inst.opname == "END_FOR" and BEHAVIOUR.end_for_followed_by_pop_top:
            assert insts[k + 1].opname == BEHAVIOUR.loop_exit_pop
    x = np.arange(4.0)
    got = ft.optimize("eager")(f)(x, 3)
    want = f(x, 3)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


def test_an_errstate_block_is_captured_through_its_entry_instructions():
    def f(x):
        with np.errstate(divide="ignore"):
            y = np.log(x)
        return y + 1

    explained = ft.explain(f)(np.array([0.0, 1.0]))
    assert explained.graph_count == 1 and explained.graph_break_count == 0, str(explained)
    with np.errstate(divide="raise"):
        got = ft.optimize("eager")(f)(np.array([0.0, 1.0]))
    assert np.array_equal(got, np.array([-np.inf, 1.0]))


def _tstring_fn():
    namespace = {}
    exec(
        compile(
            "def f(x, width):\n    label = t'sum {width!r:>{width}} of {x.size}'\n    return x.sum() * 2, label\n",
            "<tstring>",
            "exec",
        ),
        namespace,
    )
    return namespace["f"]


@pytest.mark.skipif(not HAS_TSTRINGS, reason="template strings (PEP 750) do not exist before CPython 3.14")
def test_template_strings_of_known_values_are_built_at_trace_time():
    f = _tstring_fn()
    x = np.arange(4.0)
    explained = ft.explain(f)(x, 3)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, str(explained)
    (got_sum, got), (want_sum, want) = ft.optimize("eager")(f)(x, 3), f(x, 3)
    assert got_sum == want_sum and got.strings == want.strings
    assert [(i.value, i.expression, i.conversion, i.format_spec) for i in got.interpolations] == [
        (i.value, i.expression, i.conversion, i.format_spec) for i in want.interpolations
    ]


@pytest.mark.skipif(not HAS_TSTRINGS, reason="template strings (PEP 750) do not exist before CPython 3.14")
def test_a_template_string_of_an_array_breaks_and_agrees():
    namespace = {}
    exec(compile("def f(x):\n    y = x + 1\n    return t'{y}', y * 2\n", "<tstring>", "exec"), namespace)
    f = namespace["f"]
    x = np.arange(3.0)
    explained = ft.explain(f)(x)
    assert explained.graph_break_count >= 1
    got, want = ft.optimize("eager")(f)(x), f(x)
    assert np.array_equal(got[0].interpolations[0].value, want[0].interpolations[0].value)
    assert np.array_equal(got[1], want[1])


def test_dis_and_the_decoder_agree_on_value_arguments():
    def f(x):
        return x + 3, None

    by_offset = {i.offset: i for i in dis.get_instructions(f)}
    for inst in decode(f.__code__):
        if inst.opname in ("LOAD_SMALL_INT", "LOAD_COMMON_CONSTANT"):
            assert by_offset[inst.offset].argval == inst.argval


def test_a_function_made_with_annotations_in_the_frame_is_inlined():
    # 3.14+ attach an __annotate__ function (SET_FUNCTION_ATTRIBUTE 16), older versions a
    # dict: neither is the defaults the function is called with
    def f(x):
        def inner(a: float, b=2) -> float:
            return a * b

        return inner(x)

    x = np.arange(3.0)
    explained = ft.explain(f)(x)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, str(explained)
    assert np.array_equal(ft.optimize("eager")(f)(x), f(x))
