"""The one encoder: instructions made by kind and typed operand, spelled for the running
CPython.

Code generation outside ``bytecode/`` (sources loading their values, resume functions,
the code run at a graph break) names what an instruction does -- ``call(2)``,
``branch("false", target)``, ``load_method("tolist")`` -- and this module picks the
concrete opcode (``kinds.encode``/``kinds.spelled``) and the per-version shape of the
sequence (``BEHAVIOUR``): PRECALL before CALL, KW_NAMES or a names constant, a method
load's spelling, where the NULL slot of a call goes.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from .arguments import DECODER
from .behaviour import BEHAVIOUR
from .create import create_instruction
from .instructions import Instruction, Positions
from .kinds import Kind, encode, spelled
from .opcodes import PAIRED_LOCALS

__all__ = ["Codegen", "make", "like", "split_pair"]


def _name(kind: str, **operands: Any) -> str:
    name = spelled(kind, **operands) if operands else encode(kind)
    if name is None:
        raise ValueError(f"no spelling of {kind} {operands or ''} on this Python".rstrip())
    return name


def make(
    kind: str,
    *,
    arg: Optional[int] = None,
    argval: Any = None,
    target: Optional[Instruction] = None,
    positions: Optional[Positions] = None,
    **operands: Any,
) -> Instruction:
    """A new instruction of ``kind`` (with ``operands``: ``condition``, ``keeps_operand``),
    in the running CPython's spelling."""
    return create_instruction(_name(kind, **operands), arg=arg, argval=argval, target=target, positions=positions)


def like(inst: Instruction, kind: str, **operands: Any) -> Instruction:
    """An instruction like ``inst`` (same argument and position) but of ``kind`` in its
    plain spelling: a 3.9/3.10 method call (CALL_METHOD) run as a plain call
    (CALL_FUNCTION), for example."""
    return create_instruction(_name(kind, **operands), arg=inst.arg, positions=inst.positions)


def split_pair(inst: Instruction) -> Optional[Tuple[Instruction, Instruction]]:
    """A two-local instruction (3.13+: LOAD_LOCAL_PAIR, STORE_LOCAL_PAIR, STORE_LOAD_LOCAL)
    as its two one-local instructions, each spelled as the pair loads (borrowing or not),
    or None for any other instruction. Their arguments are resolved from the names."""
    pair = PAIRED_LOCALS.get(inst.opname)
    if pair is None:
        return None
    a, b = inst.argval
    first = create_instruction(pair[0], argval=a, positions=inst.positions)
    second = create_instruction(pair[1], argval=b, positions=inst.positions)
    return first, second


class Codegen:
    """Appends instructions to ``self.instructions``; names and constants are resolved
    against the code object when the instructions are assembled. With ``positions``,
    every instruction made gets them."""

    def __init__(self, positions: Optional[Positions] = None) -> None:
        self.instructions: List[Instruction] = []
        self.positions = positions

    def append(self, inst: Instruction) -> Instruction:
        if self.positions is not None and inst.positions is None:
            inst.positions = self.positions
        self.instructions.append(inst)
        return inst

    def emit(self, name: str, **kwargs: Any) -> Instruction:
        """An instruction by its concrete name (names every supported CPython has)."""
        return self.append(create_instruction(name, **kwargs))

    def add(self, kind: str, **kwargs: Any) -> Instruction:
        """An instruction by kind (``make``)."""
        return self.append(make(kind, **kwargs))

    # -- the stack
    def nop(self) -> Instruction:
        return self.add(Kind.NOP)

    def pop_top(self) -> Instruction:
        return self.add(Kind.POP_TOP)

    def push_null(self) -> Instruction:
        return self.add(Kind.PUSH_NULL)

    def copy(self, depth: int) -> Instruction:
        """Push the value ``depth`` from the top again (1: the top)."""
        if encode(Kind.COPY) == "DUP_TOP":
            if depth != 1:
                raise ValueError(f"copy({depth}): only the top can be copied on this Python")
            return self.add(Kind.COPY)
        return self.add(Kind.COPY, arg=depth)

    def swap(self, depth: int) -> Instruction:
        """Exchange the top and the value ``depth`` from the top."""
        if encode(Kind.SWAP) == "ROT_TWO":
            if depth != 2:
                raise ValueError(f"swap({depth}): only the top two can be swapped on this Python")
            return self.add(Kind.SWAP)
        return self.add(Kind.SWAP, arg=depth)

    # -- locals, cells, globals, constants, attributes
    def load_fast(self, name: str) -> Instruction:
        return self.add(Kind.LOAD_LOCAL, argval=name)

    def store_fast(self, name: str) -> Instruction:
        return self.add(Kind.STORE_LOCAL, argval=name)

    def load_deref(self, name: str) -> Instruction:
        return self.add(Kind.LOAD_DEREF, argval=name)

    def store_deref(self, name: str) -> Instruction:
        return self.add(Kind.STORE_DEREF, argval=name)

    def load_closure(self, name: str) -> Instruction:
        """Push the cell object of the cell or free variable ``name`` (to build a closure)."""
        kind = Kind.LOAD_LOCAL if BEHAVIOUR.closure_loads_are_fast_loads else Kind.LOAD_CLOSURE
        return self.add(kind, argval=name)

    def copy_free_vars(self, n: int) -> Instruction:
        """3.11+: copy the ``n`` cells of the closure into the frame."""
        return self.add(Kind.COPY_FREE_VARS, arg=n)

    def load_global(self, name: str, push_null: bool = False) -> Instruction:
        if push_null and not BEHAVIOUR.global_loads_push_null:
            raise ValueError("push_null=True: LOAD_GLOBAL pushes a NULL slot only on CPython 3.11 and later")
        return self.append(create_instruction(_name(Kind.LOAD_GLOBAL), argval=name, flags=1 if push_null else 0))

    def load_const(self, value: Any) -> Instruction:
        return self.add(Kind.LOAD_CONST, argval=value)

    def load_attr(self, name: str) -> Instruction:
        return self.add(Kind.LOAD_ATTR, argval=name)

    def load_method(self, name: str) -> Instruction:
        """Load the method ``name`` of the object on top with its NULL-or-self slot (as a
        method call's callable): LOAD_METHOD, or LOAD_ATTR with its method bit."""
        if BEHAVIOUR.attr_loads_methods:
            return self.append(create_instruction(_name(Kind.LOAD_ATTR), argval=name, flags=1))
        return self.emit("LOAD_METHOD", argval=name)  # 3.9-3.11's own opcode

    def subscr(self) -> Instruction:
        if BEHAVIOUR.subscripts_are_binary_ops:
            return self.emit("BINARY_OP", arg=DECODER.binary_op_arg("[]"))
        return self.add(Kind.SUBSCR)

    def build_tuple(self, n: int) -> Instruction:
        return self.add(Kind.BUILD_TUPLE, arg=n)

    def build_list(self, n: int) -> Instruction:
        return self.add(Kind.BUILD_LIST, arg=n)

    def build_map(self, n: int) -> Instruction:
        return self.add(Kind.BUILD_MAP, arg=n)

    def build_slice(self, n: int) -> Instruction:
        return self.add(Kind.BUILD_SLICE, arg=n)

    def store_attr(self, name: str) -> Instruction:
        return self.add(Kind.STORE_ATTR, argval=name)

    # -- calls
    def call_builtin(self, fn: Callable[..., Any], emit_args: Callable[[], None], nargs: int = 1) -> None:
        """Call ``fn`` (held as a constant, so user globals cannot shadow it) on the values
        ``emit_args`` pushes."""
        self.push_callable(lambda: self.load_const(fn))
        emit_args()
        self.call(nargs)

    def push_callable(self, emit_callable: Callable[[], None]) -> None:
        """The callable of a call and, where calls have one, its NULL slot."""
        if BEHAVIOUR.calls_push_null and not BEHAVIOUR.null_after_callable:
            self.push_null()
        emit_callable()
        if BEHAVIOUR.calls_push_null and BEHAVIOUR.null_after_callable:
            self.push_null()

    def call(self, nargs: int, kw_names: Sequence[str] = (), method: bool = False) -> None:
        """Call the callable under ``nargs`` arguments, the last ``len(kw_names)`` of them
        by keyword. ``method``: the callable came from ``load_method`` (3.9/3.10 call it
        with CALL_METHOD; later calls always have the slot)."""
        names = tuple(kw_names)
        if names and BEHAVIOUR.kw_names_instruction:
            self.emit("KW_NAMES", argval=names)
        elif names:
            self.load_const(names)
        if BEHAVIOUR.precall_before_call:
            self.emit("PRECALL", arg=nargs)
        if not BEHAVIOUR.calls_push_null:
            if method and names:
                raise ValueError("a method call with keywords has no single instruction on this Python")
            self.emit("CALL_METHOD" if method else "CALL_FUNCTION_KW" if names else "CALL_FUNCTION", arg=nargs)
        elif names and not BEHAVIOUR.kw_names_instruction:
            self.emit("CALL_KW", arg=nargs)
        else:
            self.add(Kind.CALL, arg=nargs)

    # -- control flow
    def jump(self, target: Optional[Instruction] = None) -> Instruction:
        """An unconditional forward jump (the assembler sets its offset)."""
        return self.add(Kind.JUMP, target=target)

    def branch(self, condition: str, target: Optional[Instruction] = None, keeps_operand: bool = False) -> Instruction:
        """A forward conditional jump on ``condition`` ("false", "true", "none", "not none")."""
        return self.add(Kind.BRANCH, target=target, condition=condition, keeps_operand=keeps_operand)

    def return_value(self) -> Instruction:
        return self.add(Kind.RETURN)
