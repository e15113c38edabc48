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

from .behaviour import BEHAVIOUR
from .instructions import Instruction
from .kinds import DECODE, Kind
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


# CALL_FUNCTION_EX's callable slots (it passes one tuple, and maybe a mapping)
_EX_SLOTS = 2 if BEHAVIOUR.call_ex_pops_null_slot else 1


def call_shape(inst: Instruction) -> Optional[CallShape]:
    """The slots ``inst`` pops as a call, or None when it is not a call instruction. Two
    callable slots where the call keeps a NULL-or-self slot beside the callable (3.11+'s
    calls, 3.9/3.10's method call after a method load), one for the old plain calls."""
    if inst.kind == Kind.CALL:
        return CallShape(2 if inst.call_slot else 1, inst.arg or 0, inst.call_names)
    if inst.kind == Kind.CALL_EX:
        return CallShape(_EX_SLOTS, 1, kwargs=inst.call_kwargs)
    return None


# the counts of the entries that depend on the instruction come as plain (pops, pushes)
# pairs, cheap for the stack-depth walk; ``effect`` makes them Effects
def _arg_pops(pushes: int) -> Callable[[Instruction], Tuple[int, int]]:
    return lambda inst: (inst.arg or 0, pushes)


def _call_effect(inst: Instruction) -> Tuple[int, int]:
    return call_shape(inst).pops, 1  # type: ignore[union-attr]


_2_1, _1_1 = Effect(2, 1), Effect(1, 1)
# by kind: an Effect for a kind whose counts never change; a function of the instruction
# otherwise
_EFFECTS: Dict[str, Union[Effect, Callable[[Instruction], Tuple[int, int]]]] = {
    # operators and comparisons
    Kind.BINARY_OP: _2_1,
    Kind.COMPARE: _2_1,
    Kind.CONTAINS: _2_1,
    Kind.IS: _2_1,
    Kind.SUBSCR: _2_1,
    Kind.SUBSCR_SLICE: Effect(3, 1),
    Kind.UNARY: _1_1,
    Kind.TO_BOOL: _1_1,
    Kind.GET_LEN: Effect(1, 2),  # keeps its operand (a match subject) under the length
    # formatting
    Kind.FORMAT: lambda inst: (1 + int(inst.format_spec), 1),
    Kind.CONVERT: _1_1,
    Kind.BUILD_STRING: _arg_pops(1),
    # stores and deletions
    Kind.STORE_SUBSCR: Effect(3, 0),
    Kind.DELETE_SUBSCR: Effect(2, 0),
    Kind.STORE_SLICE: Effect(4, 0),
    Kind.STORE_ATTR: Effect(2, 0),
    Kind.DELETE_ATTR: Effect(1, 0),
    Kind.STORE_GLOBAL: Effect(1, 0),
    Kind.DELETE_GLOBAL: Effect(0, 0),
    # loads that may push the call's NULL-or-self slot too
    Kind.LOAD_GLOBAL: lambda inst: (0, 1 + int(inst.push_null)),
    Kind.LOAD_ATTR: lambda inst: (1, 1 + int(inst.push_null)),
    Kind.LOAD_ASSERTION_ERROR: Effect(0, 1),
    Kind.LOAD_CONST: Effect(0, 1),
    Kind.IMPORT_NAME: _2_1,
    # calls: the whole call pops at CALL (3.11's PRECALL only prepares it)
    Kind.CALL: _call_effect,
    Kind.CALL_EX: _call_effect,
    Kind.KW_NAMES: Effect(0, 0),
    Kind.NOP: Effect(0, 0),
    Kind.UNPACK_SEQUENCE: lambda inst: (1, inst.arg or 0),
    Kind.RAISE: _arg_pops(0),
    # a generator's frame resumes with the sent value pushed (3.11/3.12's dis reports 0)
    Kind.RETURN_GENERATOR: Effect(0, 1),
}
# the same by opcode, for the stack-depth walk: net changes of the fixed entries, and the
# rest (an intrinsic's kind is its argument's: those opcodes keep dis's count)
_FIXED_NET: Dict[int, int] = {}
_VARIABLE: Dict[int, Callable[[Instruction], Tuple[int, int]]] = {}
for _name, _kind in DECODE.items():
    _e = _EFFECTS.get(_kind)
    if _e is None or opcode.opmap[_name] >= 256:
        continue
    if isinstance(_e, Effect):
        _FIXED_NET[opcode.opmap[_name]] = _e.net
    else:
        _VARIABLE[opcode.opmap[_name]] = _e
del _name, _kind, _e


def effect(inst: Instruction) -> Optional[Effect]:
    """What ``inst`` pops and pushes when it falls through, or None for an opcode the table
    does not describe (``net_effect`` still knows its net change)."""
    found = _EFFECTS.get(inst.kind)
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
