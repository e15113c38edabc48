"""What each instruction pops and pushes, and the shape of each call.

One table for the whole translator: resume planning counts a broken instruction's inputs
and results with it, the decompiler and the symbolic interpreter ask it which slots a call
takes, and the control-flow graph (``cfg.py``) computes stack depths with it. Entries read
the decoded fields (``push_null``, ``format_spec``, ``call_kwargs``) and ``BEHAVIOUR``;
opcodes without an entry fall back to ``dis.stack_effect``.
"""

from __future__ import annotations

import opcode
from typing import Callable, Dict, NamedTuple, Optional, Tuple, Union

from .arguments import OLD_BINARY_OPS
from .behaviour import BEHAVIOUR
from .instructions import Instruction
from .opcodes import stack_effect

__all__ = ["Effect", "CallShape", "effect", "call_shape", "net_effect"]


class Effect(NamedTuple):
    """Values an instruction pops and then pushes when it falls through to the next one."""

    pops: int
    pushes: int

    @property
    def net(self) -> int:
        return self.pushes - self.pops


class CallShape(NamedTuple):
    """The slots a call instruction pops, bottom to top: the callable (with the NULL-or-self
    slot where ``callable_slots`` is 2), ``args`` values (one tuple for ``CALL_FUNCTION_EX``),
    a tuple of keyword names where ``kw_names_slot``, a mapping where ``kwargs``."""

    callable_slots: int
    args: int
    kw_names_slot: bool = False
    kwargs: bool = False

    @property
    def pops(self) -> int:
        return self.callable_slots + self.args + int(self.kw_names_slot) + int(self.kwargs)


# (the callable's slots, a keyword-names slot) of the calls that pass ``arg`` values: two
# slots where calls keep a NULL-or-self slot beside the callable (3.11+'s CALL, 3.9/3.10's
# CALL_METHOD after LOAD_METHOD), one for the old plain calls
_CALLS: Dict[str, Tuple[int, bool]] = {
    "CALL": (2, False),
    "CALL_KW": (2, True),
    "CALL_METHOD": (2, False),
    "CALL_FUNCTION": (1, False),
    "CALL_FUNCTION_KW": (1, True),
}
# CALL_FUNCTION_EX's callable slots (it passes one tuple, and maybe a mapping)
_EX_SLOTS = 2 if BEHAVIOUR.call_ex_pops_null_slot else 1


def call_shape(inst: Instruction) -> Optional[CallShape]:
    """The slots ``inst`` pops as a call, or None when it is not a call instruction."""
    if inst.opname == "CALL_FUNCTION_EX":
        return CallShape(_EX_SLOTS, 1, kwargs=inst.call_kwargs)
    kind = _CALLS.get(inst.opname)
    return None if kind is None else CallShape(kind[0], inst.arg or 0, kind[1])


# the counts of the entries that depend on the instruction come as plain (pops, pushes)
# pairs, cheap for the stack-depth walk; ``effect`` makes them Effects
def _arg_pops(pushes: int) -> Callable[[Instruction], Tuple[int, int]]:
    return lambda inst: (inst.arg or 0, pushes)


def _call_effect(inst: Instruction) -> Tuple[int, int]:
    return call_shape(inst).pops, 1  # type: ignore[union-attr]


_2_1, _1_1 = Effect(2, 1), Effect(1, 1)
# an Effect for an opcode whose counts never change; a function of the instruction otherwise
_EFFECTS: Dict[str, Union[Effect, Callable[[Instruction], Tuple[int, int]]]] = {
    # operators and comparisons
    "BINARY_OP": _2_1,
    "COMPARE_OP": _2_1,
    "CONTAINS_OP": _2_1,
    "IS_OP": _2_1,
    "BINARY_SUBSCR": _2_1,
    "BINARY_SLICE": Effect(3, 1),
    "UNARY_NEGATIVE": _1_1,
    "UNARY_POSITIVE": _1_1,
    "UNARY_INVERT": _1_1,
    "UNARY_NOT": _1_1,
    "TO_BOOL": _1_1,
    "GET_LEN": Effect(1, 2),  # keeps its operand (a match subject) under the length
    # formatting
    "FORMAT_SIMPLE": _1_1,
    "FORMAT_WITH_SPEC": _2_1,
    "CONVERT_VALUE": _1_1,
    "FORMAT_VALUE": lambda inst: (1 + int(inst.format_spec), 1),
    "BUILD_STRING": _arg_pops(1),
    # stores and deletions
    "STORE_SUBSCR": Effect(3, 0),
    "DELETE_SUBSCR": Effect(2, 0),
    "STORE_SLICE": Effect(4, 0),
    "STORE_ATTR": Effect(2, 0),
    "DELETE_ATTR": Effect(1, 0),
    "STORE_GLOBAL": Effect(1, 0),
    "DELETE_GLOBAL": Effect(0, 0),
    # loads that may push the call's NULL-or-self slot too
    "LOAD_GLOBAL": lambda inst: (0, 1 + int(inst.push_null)),
    "LOAD_ATTR": lambda inst: (1, 1 + int(inst.push_null)),
    "LOAD_METHOD": Effect(1, 2),
    "LOAD_ASSERTION_ERROR": Effect(0, 1),
    "LOAD_COMMON_CONSTANT": Effect(0, 1),  # what loads AssertionError on 3.14+
    "IMPORT_NAME": _2_1,
    # calls: the whole call pops at CALL (3.11's PRECALL only prepares it)
    "CALL": _call_effect,
    "CALL_KW": _call_effect,
    "CALL_METHOD": _call_effect,
    "CALL_FUNCTION": _call_effect,
    "CALL_FUNCTION_KW": _call_effect,
    "CALL_FUNCTION_EX": _call_effect,
    "PRECALL": Effect(0, 0),
    "KW_NAMES": Effect(0, 0),
    "UNPACK_SEQUENCE": lambda inst: (1, inst.arg or 0),
    "RAISE_VARARGS": _arg_pops(0),
    # a generator's frame resumes with the sent value pushed (3.11/3.12's dis reports 0)
    "RETURN_GENERATOR": Effect(0, 1),
}
_EFFECTS.update((name, _2_1) for name in OLD_BINARY_OPS)

# the same by opcode, for the stack-depth walk: net changes of the fixed entries, and the rest
_FIXED_NET: Dict[int, int] = {
    opcode.opmap[name]: e.net for name, e in _EFFECTS.items() if isinstance(e, Effect) and name in opcode.opmap
}
_VARIABLE: Dict[int, Callable[[Instruction], Tuple[int, int]]] = {
    opcode.opmap[name]: e for name, e in _EFFECTS.items() if not isinstance(e, Effect) and name in opcode.opmap
}


def effect(inst: Instruction) -> Optional[Effect]:
    """What ``inst`` pops and pushes when it falls through, or None for an opcode the table
    does not describe (``net_effect`` still knows its net change)."""
    found = _EFFECTS.get(inst.opname)
    return Effect(*found(inst)) if callable(found) else found


def net_effect(inst: Instruction, jump: Optional[bool] = None) -> int:
    """How ``inst`` changes the stack's depth: on its jump (``jump=True``), when it falls
    through (``False``), or the larger of both (None, as ``dis.stack_effect``)."""
    op = inst.opcode
    if not jump:
        net = _FIXED_NET.get(op)
        if net is not None:
            return net
        make = _VARIABLE.get(op)
        if make is not None:
            pops, pushes = make(inst)
            return pushes - pops
    return stack_effect(op, inst.arg, jump=jump)
