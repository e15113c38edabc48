"""The version-independent instruction set: every concrete opcode decodes to a kind."""

import dis
import opcode

import pytest

from framehook.translator.bytecode import create_instruction, decode
from framehook.translator.bytecode import kinds
from framehook.translator.bytecode.kinds import Kind
from code_samples import stdlib_instructions


def test_every_opcode_of_this_python_has_a_kind():
    assert sorted(n for n in opcode.opmap if n not in kinds.DECODE) == []
    known = {v for k, v in vars(Kind).items() if k.isupper()}
    assert set(kinds.DECODE.values()) <= known


def test_real_code_decodes_to_kinds_the_interpreter_never_keeps_to_itself():
    seen = set()
    for inst in stdlib_instructions():
        assert inst.kind and inst.kind != Kind.INTERNAL, inst
        seen.add(inst.kind)
    assert {Kind.CALL, Kind.BRANCH, Kind.JUMP, Kind.LOAD_LOCAL, Kind.RETURN, Kind.FOR_ITER} <= seen


def test_branch_operands_say_when_the_jump_is_taken():
    def f(a, b):
        if a is None:
            return 1
        if a is not None and not b:
            return 2
        return a or b

    found = {(i.condition, i.keeps_operand) for i in decode(f.__code__) if i.kind == Kind.BRANCH}
    assert ("true", False) in found or ("false", False) in found
    if any(n.endswith("_IF_NONE") for n in kinds.DECODE):  # 3.11+: ``is None`` tests jump by themselves
        assert any(cond in ("none", "not none") for cond, _ in found)
    for inst in decode(f.__code__):
        if inst.kind == Kind.BRANCH:
            assert inst.target is not None
            assert kinds.BRANCH_CONDITIONS[inst.opname] == inst.condition


def test_call_operands_give_the_shape():
    def f(g, o):
        return g(1, k=2), o.m(3)

    calls = [i for i in decode(f.__code__) if i.kind == Kind.CALL]
    assert [c.arg for c in calls] == [2, 1]
    # keyword names: a tuple on the stack or, where KW_NAMES exists, named by it
    assert calls[0].call_names or any(i.kind == Kind.KW_NAMES for i in decode(f.__code__))
    assert not calls[1].call_names
    method = [i for i in decode(f.__code__) if i.kind == Kind.LOAD_ATTR]
    assert method and method[0].is_method


def test_unary_and_binary_operands():
    def f(a, b):
        return -a, +a, ~a, not a, a @ b, a[b]

    insts = decode(f.__code__)
    assert [i.unary for i in insts if i.kind == Kind.UNARY] == ["-", "+", "~", "not"]
    assert [i.binary_op for i in insts if i.kind == Kind.BINARY_OP] == ["@"]
    assert len([i for i in insts if i.kind == Kind.SUBSCR]) == 1


def test_stack_shuffles_carry_their_depth():
    for inst in stdlib_instructions():
        if inst.kind in (Kind.COPY, Kind.SWAP, Kind.ROTATE):
            assert inst.depth >= 1, inst
            # 3.10 leaves stray argument bytes on ROT_THREE & co: only the name tells
            assert inst.fixed_depth == (inst.opname in kinds.COPY_DEPTHS), inst
            if inst.opname in ("COPY", "SWAP"):
                assert inst.depth == inst.arg


def test_created_instructions_are_decoded_too():
    name = kinds.encode(Kind.JUMP)
    jump = create_instruction(name, target=create_instruction(kinds.encode(Kind.NOP)))
    assert jump.kind == Kind.JUMP
    branch = create_instruction(kinds.spelled(Kind.BRANCH, condition="false"), target=jump)
    assert branch.kind == Kind.BRANCH and branch.condition == "false" and not branch.keeps_operand


def test_encode_gives_back_a_spelling_of_the_kind():
    for kind in (Kind.JUMP, Kind.LOAD_LOCAL, Kind.STORE_LOCAL, Kind.CALL, Kind.RETURN, Kind.COPY, Kind.SWAP):
        name = kinds.encode(kind)
        assert name in opcode.opmap and kinds.kind_of(name) == kind
    for condition in ("false", "true"):
        name = kinds.spelled(Kind.BRANCH, condition=condition)
        assert kinds.kind_of(name) == Kind.BRANCH and kinds.BRANCH_CONDITIONS[name] == condition
        assert opcode.opmap[name] < 256  # a real instruction, not a compiler pseudo-instruction
    with pytest.raises(ValueError, match="unknown opcode 'NO_SUCH_OP'"):
        kinds.kind_of("NO_SUCH_OP")


def test_kinds_agree_with_dis_on_what_jumps():
    for inst in stdlib_instructions():
        if inst.kind in (Kind.JUMP, Kind.BRANCH, Kind.FOR_ITER):
            assert inst.opcode in dis.hasjrel or inst.opcode in dis.hasjabs, inst
