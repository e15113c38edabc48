"""Straight-line bytecode back to Python source, by simulating the stack (3.9-3.15).

    out = decompile(decode(code), start, const_name=names.name_for)
    text = "\n".join("    " * (1 + depth) + line for depth, line in out.lines)

Handles the instructions of straight-line code: loads and stores of locals, globals and
cells, constants, attribute and subscript access, operators, displays (tuple, list, set,
dict, f-strings), calls in every version's form (``CALL_FUNCTION``/``CALL_METHOD``,
3.11's ``PRECALL``/``KW_NAMES``, 3.12+'s ``CALL``, 3.13's ``CALL_KW``, ``CALL_FUNCTION_EX``),
unpacking, stack shuffles, ``return`` and ``raise``. Unconditional jumps are followed;
a conditional jump becomes ``if cond:`` with each way rendered to its end (code both ways
reach is written twice), so every path must end in ``return`` or ``raise``. A loop, an
exception handler or an instruction not listed stops the walk: ``Decompiled.stopped_at``.

Statements come out in execution order. The stack holds expressions not yet evaluated;
before a statement runs, every expression still on the stack whose value the statement
could change (a call, a global, an attribute, a local the statement assigns) is bound to a
temporary (``___d<n>``), so it is evaluated where the bytecode evaluated it.

Constants with no literal form (functions, arrays, ``inf``) and the builtins the output
needs (``slice``, ``operator.iadd`` for an in-place operator whose result is not stored
back, ``AssertionError``) are written as the names ``const_name(value)`` returns.

Each instruction is handled by its kind (``bytecode/kinds.py``) and typed operands, never
its concrete opcode name: the handlers live in ``name_steps.py``, ``operator_steps.py``,
``call_steps.py`` and ``flow_steps.py``, the text of stack values in ``text.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from ..bytecode.cfg import ControlFlow
from ..bytecode.instructions import Instruction
from .call_steps import CallsMixin
from .flow_steps import FlowMixin
from .name_steps import NamesMixin
from .operator_steps import OperatorsMixin
from .text import TextMixin
from .stack_values import (
    END,
    NULL,
    At,
    DecompileError,
    Display,
    Expr,
    Formatted,
    FString,
    Interpolation,
    Lines,
    MethodHead,
    SelfSlot,
    Slice,
    Stuck,
    literal_text,
)

__all__ = ["Decompiled", "DecompileError", "decompile", "literal_text"]

_MAX_LINES = 4000


@dataclass
class Decompiled:
    """What ``decompile`` produced.

    ``lines``: (indent level, statement); ``complete``: every path ended in return/raise;
    ``stopped_at``: index of the instruction the main path stopped at, ``reason`` why;
    ``boundaries``: (instruction index, lines before it) where the main path's stack was
    empty between statements (so the rest could be written some other way);
    ``fast``/``globals``/``global_stores``/``derefs``: names by how the code accessed them."""

    lines: List[Tuple[int, str]] = field(default_factory=list)
    complete: bool = False
    stopped_at: Optional[int] = None
    reason: str = ""
    boundaries: List[Tuple[int, int]] = field(default_factory=list)
    fast: Set[str] = field(default_factory=set)
    globals: Set[str] = field(default_factory=set)
    global_stores: Set[str] = field(default_factory=set)
    derefs: Set[str] = field(default_factory=set)
    # (main-path lines written before it, kind, name) of every name access, in order
    uses: List[Tuple[int, str, str]] = field(default_factory=list)

    def names(self, kind: str, upto: Optional[int] = None) -> Set[str]:
        """The names of ``kind`` ("fast", "globals", "global_stores", "derefs") the first
        ``upto`` lines of the main path (all, by default) access."""
        return {n for c, k, n in self.uses if k == kind and (upto is None or c < upto)}

    def text(self, indent: str = "    ", base: int = 1, upto: Optional[int] = None) -> str:
        lines = self.lines if upto is None else self.lines[:upto]
        return "".join(indent * (base + depth) + line + "\n" for depth, line in lines)


def _default_const_name(value: Any) -> str:
    raise DecompileError(f"no name for the constant {value!r:.60}")


def decompile(
    insts: Union[Sequence[Instruction], ControlFlow],
    start: int = 0,
    stack: Sequence[Any] = (),
    const_name: Optional[Callable[[Any], str]] = None,
    temp_prefix: str = "___d",
    consts: Optional[Sequence[Any]] = None,
) -> Decompiled:
    """Decompile ``insts`` from index ``start`` with ``stack`` (Exprs, or texts taken as
    local names) already pushed; ``consts``: the code's ``co_consts`` (3.11's KW_NAMES).
    ``insts`` may be given as their control-flow graph, to share one between calls.
    Never raises for bytecode it does not know: the result says where it stopped."""
    flow = insts if isinstance(insts, ControlFlow) else ControlFlow(insts)
    walker = _Walker(flow, const_name or _default_const_name, temp_prefix)
    walker.consts = consts
    initial = [Expr(s, local=s) if isinstance(s, str) else s for s in stack]
    walker.run(start, initial)
    return walker.result


class _Walker(TextMixin, NamesMixin, OperatorsMixin, CallsMixin, FlowMixin):
    """The walk over the instructions; the handlers of each kind of instruction are the
    mixins' methods marked ``@handles`` (``name_steps.py``, ``operator_steps.py``, ``call_steps.py``,
    ``flow_steps.py``), the text of values comes from ``text.py``."""

    def __init__(self, flow: ControlFlow, const_name: Callable[[Any], str], temp_prefix: str) -> None:
        self.insts = flow.insts
        self.flow = flow
        self.const_name = const_name
        self.temp_prefix = temp_prefix
        self.temps = 0
        self.result = Decompiled()
        self.count = 0
        self.consts: Optional[Sequence[Any]] = None
        self.main_lines: List[Tuple[int, str]] = []

    # ---------------------------------------------------------------- the walk
    def run(self, start: int, stack: List[Any]) -> None:
        out: List[Tuple[int, str]] = []
        self.main_lines = out
        try:
            self.path(start, stack, out, set(), main=True)
            self.result.complete = True
        except Stuck as stuck:
            self.result.stopped_at = stuck.index
            self.result.reason = stuck.reason
        except DecompileError as e:
            self.result.stopped_at = start
            self.result.reason = str(e)
        self.result.lines = out

    def path(self, k: int, stack: List[Any], out: List[Tuple[int, str]], visited: Set[int], main: bool) -> None:
        """Walk from instruction ``k`` until a return or raise (appends to ``out``)."""
        while True:
            if k >= len(self.insts):
                raise Stuck(k, "the code runs past its last instruction")
            if k in visited:
                raise Stuck(k, "a loop")
            visited.add(k)
            if main and not stack:
                self.result.boundaries.append((k, len(out)))
            inst = self.insts[k]
            if inst.exn_tab_entry is not None:
                raise Stuck(k, f"{inst.opname} is inside a try block (exception table)")
            self.count += 1
            if self.count > _MAX_LINES:
                raise Stuck(k, "too much code on every path")
            try:
                nxt = self.step(k, inst, stack, out, visited, main)
            except Stuck:
                raise
            except DecompileError as e:
                raise Stuck(k, str(e)) from None
            except IndexError:
                raise Stuck(k, f"{inst.opname}: stack underflow") from None
            except Exception as e:  # noqa: BLE001 - bytecode this walker does not expect: stop here
                raise Stuck(k, f"{inst.opname}: {type(e).__name__}: {e}") from None
            if nxt is None:
                return
            k = nxt

    # ---------------------------------------------------------------- helpers
    def use(self, kind: str, name: str) -> None:
        getattr(self.result, kind).add(name)
        self.result.uses.append((len(self.main_lines), kind, name))

    def temp(self) -> str:
        name = f"{self.temp_prefix}{self.temps}"
        self.temps += 1
        return name

    def stmt(self, out: List[Tuple[int, str]], stack: List[Any], text: str, stores: Sequence[str] = ()) -> None:
        """Append a statement, first binding to temporaries what on the stack it could change."""
        self.spill(out, stack, lambda e: not e.stable and (e.local is None or e.local in stores))
        out.append((0, text))

    def spill(
        self, out: List[Tuple[int, str]], stack: List[Any], needs: Callable[[Expr], bool], upto: Optional[int] = None
    ) -> None:
        """Bind ``stack[:upto]``'s entries for which ``needs`` holds to temporaries, bottom first."""
        end = len(stack) if upto is None else upto
        for i in range(end):
            v = stack[i]
            if isinstance(v, MethodHead):
                head = Expr(f"{self.atom(v.obj)}.{v.name}")
                if not needs(head) and not needs(v.obj):
                    continue
                t = self.temp()
                out.append((0, f"{t} = {head.text}"))
                stack[i] = Expr(t, stable=True, local=t)
                # the bound method is called as it is: its self slot (always next) is empty
                if i + 1 < len(stack) and isinstance(stack[i + 1], SelfSlot):
                    stack[i + 1] = NULL
                continue
            if isinstance(v, (Display, Slice, FString, Formatted, Interpolation)):
                t = self.temp()
                out.append((0, f"{t} = {self.render(v).text}"))
                stack[i] = Expr(t, stable=True, local=t)
                continue
            if isinstance(v, Expr) and needs(v):
                t = self.temp()
                out.append((0, f"{t} = {self.value(v)}"))
                stack[i] = Expr(t, stable=True, local=t)

    def unstable(self, stack: List[Any]) -> int:
        return sum(
            1
            for v in stack
            if isinstance(v, (Display, FString, Formatted, Slice, Interpolation))
            or (isinstance(v, Expr) and not v.stable and v.local is None)
            or (isinstance(v, MethodHead) and not (v.obj.stable or v.obj.local))
        )

    # ---------------------------------------------------------------- one instruction
    def step(
        self, k: int, inst: Instruction, stack: List[Any], out: Lines, visited: Set[int], main: bool
    ) -> Optional[int]:
        """Simulate ``inst``; the next instruction's index, or None at the path's end."""
        handler = _HANDLERS.get(inst.kind)
        if handler is None:
            raise DecompileError(f"{inst.opname} is not handled")
        nxt = handler(self, At(k, visited, main), inst, stack, out)
        if nxt is None:
            return k + 1
        return None if nxt == END else nxt


def _handlers() -> Dict[str, Callable[..., Optional[int]]]:
    """Each kind's handler, from the methods the mixins mark with ``@handles``."""
    table: Dict[str, Callable[..., Optional[int]]] = {}
    for cls in reversed(_Walker.__mro__):
        for fn in vars(cls).values():
            for kind in getattr(fn, "handled_kinds", ()):
                assert kind not in table, f"two handlers of {kind}"
                table[kind] = fn
    return table


_HANDLERS = _handlers()
