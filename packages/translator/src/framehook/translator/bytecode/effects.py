"""What each instruction pops and pushes, and the shape of each call.

One table for the whole translator: resume planning counts a broken instruction's inputs
and results with it, the decompiler and the symbolic interpreter ask it which slots a call
takes, and the control-flow graph (``cfg.py``) computes stack depths with it. Entries read
the decoded fields (``push_null``, ``format_spec``, ``call_kwargs``) and ``BEHAVIOUR``;
opcodes without an entry fall back to ``dis.stack_effect``.
"""
from __future__ import annotations

from typing import Callable, Dict, NamedTuple, Optional

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


def _plain_call(slots: int, kw_names_slot: bool = False) -> Callable[[Instruction], CallShape]:
    return lambda inst: CallShape(slots, inst.arg or 0, kw_names_slot)


# the callable's slots: two where calls keep a NULL-or-self slot beside the callable
# (3.11+'s CALL, 3.9/3.10's CALL_METHOD after LOAD_METHOD), one for the old plain calls
_CALLS: Dict[str, Callable[[Instruction], CallShape]] = {
    "CALL": _plain_call(2),
    "CALL_KW": _plain_call(2, kw_names_slot=True),
    "CALL_METHOD": _plain_call(2),
    "CALL_FUNCTION": _plain_call(1),
    "CALL_FUNCTION_KW": _plain_call(1, kw_names_slot=True),
    "CALL_FUNCTION_EX": lambda inst: CallShape(2 if BEHAVIOUR.call_ex_pops_null_slot else 1, 1,
                                               kwargs=inst.call_kwargs),
}


def call_shape(inst: Instruction) -> Optional[CallShape]:
    """The slots ``inst`` pops as a call, or None when it is not a call instruction."""
    make = _CALLS.get(inst.opname)
    return make(inst) if make is not None else None


def _fixed(pops: int, pushes: int) -> Callable[[Instruction], Effect]:
    fixed = Effect(pops, pushes)
    return lambda inst: fixed


def _arg_pops(pushes: int) -> Callable[[Instruction], Effect]:
    return lambda inst: Effect(inst.arg or 0, pushes)


def _call_effect(inst: Instruction) -> Effect:
    return Effect(call_shape(inst).pops, 1)  # type: ignore[union-attr]


_EFFECTS: Dict[str, Callable[[Instruction], Effect]] = {
    # operators and comparisons
    "BINARY_OP": _fixed(2, 1), "COMPARE_OP": _fixed(2, 1), "CONTAINS_OP": _fixed(2, 1), "IS_OP": _fixed(2, 1),
    "BINARY_SUBSCR": _fixed(2, 1), "BINARY_SLICE": _fixed(3, 1),
    "UNARY_NEGATIVE": _fixed(1, 1), "UNARY_POSITIVE": _fixed(1, 1), "UNARY_INVERT": _fixed(1, 1),
    "UNARY_NOT": _fixed(1, 1), "TO_BOOL": _fixed(1, 1), "GET_LEN": _fixed(1, 1),
    # formatting
    "FORMAT_SIMPLE": _fixed(1, 1), "FORMAT_WITH_SPEC": _fixed(2, 1), "CONVERT_VALUE": _fixed(1, 1),
    "FORMAT_VALUE": lambda inst: Effect(1 + int(inst.format_spec), 1),
    "BUILD_STRING": _arg_pops(1),
    # stores and deletions
    "STORE_SUBSCR": _fixed(3, 0), "DELETE_SUBSCR": _fixed(2, 0), "STORE_SLICE": _fixed(4, 0),
    "STORE_ATTR": _fixed(2, 0), "DELETE_ATTR": _fixed(1, 0), "STORE_GLOBAL": _fixed(1, 0),
    "DELETE_GLOBAL": _fixed(0, 0),
    # loads that may push the call's NULL-or-self slot too
    "LOAD_GLOBAL": lambda inst: Effect(0, 1 + int(inst.push_null)),
    "LOAD_ATTR": lambda inst: Effect(1, 1 + int(inst.push_null)),
    "LOAD_METHOD": _fixed(1, 2),
    "LOAD_ASSERTION_ERROR": _fixed(0, 1), "IMPORT_NAME": _fixed(2, 1),
    # calls: the whole call pops at CALL (3.11's PRECALL only prepares it)
    "CALL": _call_effect, "CALL_KW": _call_effect, "CALL_METHOD": _call_effect, "CALL_FUNCTION": _call_effect,
    "CALL_FUNCTION_KW": _call_effect, "CALL_FUNCTION_EX": _call_effect,
    "PRECALL": _fixed(0, 0), "KW_NAMES": _fixed(0, 0),
    "UNPACK_SEQUENCE": lambda inst: Effect(1, inst.arg or 0),
    "RAISE_VARARGS": _arg_pops(0),
    # a generator's frame resumes with the sent value pushed (3.11/3.12's dis reports 0)
    "RETURN_GENERATOR": _fixed(0, 1),
}
_EFFECTS.update((name, _fixed(2, 1)) for name in OLD_BINARY_OPS)


def effect(inst: Instruction) -> Optional[Effect]:
    """What ``inst`` pops and pushes when it falls through, or None for an opcode the table
    does not describe (``net_effect`` still knows its net change)."""
    make = _EFFECTS.get(inst.opname)
    return make(inst) if make is not None else None


def net_effect(inst: Instruction, jump: Optional[bool] = None) -> int:
    """How ``inst`` changes the stack's depth: on its jump (``jump=True``), when it falls
    through (``False``), or the larger of both (None, as ``dis.stack_effect``)."""
    if not jump:
        make = _EFFECTS.get(inst.opname)
        if make is not None:
            return make(inst).net
    return stack_effect(inst.opcode, inst.arg, jump=jump)
