"""A small instruction emitter: what sources use to load their values, and the base of
the code generation of later parts (resume functions, graph calls)."""

from __future__ import annotations

from typing import Any, Callable, List

from .arguments import DECODER
from .behaviour import BEHAVIOUR
from .create import create_instruction
from .instructions import Instruction

__all__ = ["Codegen"]


class Codegen:
    """Appends instructions to ``self.instructions``; names and constants are resolved
    against the code object when the instructions are assembled."""

    def __init__(self) -> None:
        self.instructions: List[Instruction] = []

    def append(self, inst: Instruction) -> Instruction:
        self.instructions.append(inst)
        return inst

    def emit(self, name: str, **kwargs: Any) -> Instruction:
        return self.append(create_instruction(name, **kwargs))

    def load_fast(self, name: str) -> None:
        self.emit("LOAD_FAST", argval=name)

    def load_deref(self, name: str) -> None:
        self.emit("LOAD_DEREF", argval=name)

    def load_closure(self, name: str) -> None:
        """Push the cell object of the cell or free variable ``name`` (to build a closure)."""
        self.emit("LOAD_FAST" if BEHAVIOUR.closure_loads_are_fast_loads else "LOAD_CLOSURE", argval=name)

    def load_global(self, name: str, push_null: bool = False) -> None:
        if push_null and not BEHAVIOUR.global_loads_push_null:
            raise ValueError("push_null=True: LOAD_GLOBAL pushes a NULL slot only on CPython 3.11 and later")
        self.emit("LOAD_GLOBAL", argval=name, flags=1 if push_null else 0)

    def load_const(self, value: Any) -> None:
        self.emit("LOAD_CONST", argval=value)

    def load_attr(self, name: str) -> None:
        self.emit("LOAD_ATTR", argval=name)

    def subscr(self) -> None:
        if BEHAVIOUR.subscripts_are_binary_ops:
            self.emit("BINARY_OP", arg=DECODER.binary_op_arg("[]"))
        else:
            self.emit("BINARY_SUBSCR")

    def call_builtin(self, fn: Callable[..., Any], emit_args: Callable[[], None], nargs: int = 1) -> None:
        """Call ``fn`` (held as a constant, so user globals cannot shadow it) on the values
        ``emit_args`` pushes."""
        self.push_callable(lambda: self.load_const(fn))
        emit_args()
        self.call(nargs)

    def push_callable(self, emit_callable: Callable[[], None]) -> None:
        """The callable of a call and, where calls have one, its NULL slot."""
        if BEHAVIOUR.calls_push_null and not BEHAVIOUR.null_after_callable:
            self.emit("PUSH_NULL")
        emit_callable()
        if BEHAVIOUR.calls_push_null and BEHAVIOUR.null_after_callable:
            self.emit("PUSH_NULL")

    def call(self, nargs: int) -> None:
        """Call the callable under ``nargs`` positional arguments (``push_callable``)."""
        if BEHAVIOUR.precall_before_call:
            self.emit("PRECALL", arg=nargs)
        self.emit("CALL" if BEHAVIOUR.calls_push_null else "CALL_FUNCTION", arg=nargs)

    def return_value(self) -> None:
        self.emit("RETURN_VALUE")
