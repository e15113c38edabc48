"""The symbolic bytecode interpreter: the frame loop.

``FrameTracer`` executes one code object (the translated frame, or a user function being
inlined) instruction by instruction on symbolic values (``values.py``); ``Tracer``
(``tracer.py``) owns the graph and the guards. Array operations become graph nodes;
everything known at trace time is computed on the spot, guarded where it was read.
Whatever cannot be handled raises ``GraphBreak`` with an ``FH`` identifier.

Instructions are dispatched on their kind (``bytecode/kinds.py``), never on a concrete
opcode name: a handler is a method named ``k_`` + the kind, and reads the instruction's
typed operands. This module holds the loop, the stack and the trace-time values; the
handlers are grouped by concern in mixins:

- ``variables.py``: constants, locals, globals and cells
- ``operators.py``: operators, comparisons, ``is`` and ``in``
- ``access.py``: attributes and subscripts
- ``containers.py``: building containers, unpacking and formatting
- ``control_flow.py``: jumps, branches, iteration, blocks and raising
- ``functions.py``: making and calling functions, inlining, imports
"""

from __future__ import annotations

import traceback
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..bytecode import ControlFlow, decode
from ..bytecode.kinds import Kind
from ..exc import RestartAnalysis
from ..graph import Location
from ..guards import GuardKind
from ..guards.sources import Source
from . import errstate
from .access import AccessHandlers
from .breaks import GraphBreak
from .containers import ContainerHandlers
from .control_flow import ControlFlowHandlers
from .functions import FunctionHandlers, ReturnValue
from .loops import LoopAbort, left_body
from .operators import BINARY_NAMES, COMPARE, OperatorHandlers
from .tracer import Tracer
from .values import NULL, Cell, Const, DictV, FuncV, ListV, MethodV, ObjV, SliceV, Tensor, TupleV, V, flatten
from .variables import VariableHandlers

__all__ = ["FrameTracer", "ReturnValue", "StopTrace", "BINARY_NAMES", "COMPARE", "HANDLER_PREFIX"]

#: a handler's name: this prefix and the kind it executes
HANDLER_PREFIX = "k_"


class StopTrace(Exception):
    """Raised before the root frame executes ``Tracer.stop_at``: the trace ends there (a
    graph break that resumes; ``resume.py``)."""

    def __init__(self, frame: "FrameTracer") -> None:
        super().__init__("stop")
        self.frame = frame


def _const_value(v: V) -> Any:
    """The Python value of a symbolic value known at trace time, or raise KeyError."""
    if isinstance(v, Const):
        return v.value
    if isinstance(v, TupleV):
        return tuple(_const_value(i) for i in v.items)
    raise KeyError(v)


# exceptions the interpreter uses to steer itself, not errors
_SIGNALS = (StopTrace, ReturnValue, LoopAbort, RestartAnalysis)


def _stamp(e: BaseException, frame: "FrameTracer") -> None:
    # the innermost frame knows the stack: the contexts around the translation attach a
    # stack only to exceptions that have none
    if not hasattr(e, "real_stack"):
        try:
            e.real_stack = frame.user_stack()  # type: ignore[attr-defined]
        except AttributeError:  # pragma: no cover - exceptions with __slots__
            pass


class FrameTracer(
    VariableHandlers,
    OperatorHandlers,
    AccessHandlers,
    ContainerHandlers,
    ControlFlowHandlers,
    FunctionHandlers,
):
    """Executes one code object symbolically."""

    #: kind -> handler (the plain function; filled below, once for the class)
    handlers: Dict[str, Callable[["FrameTracer", Any], None]] = {}

    def __init__(
        self,
        tracer: Tracer,
        code: types.CodeType,
        f_globals: Dict[str, Any],
        locals_: Dict[str, Any],
        cells: Dict[str, Cell],
        globals_base: Optional[Source],
        depth: int = 0,
    ) -> None:
        self.tracer = tracer
        self.code = code
        self.f_globals = f_globals
        self.globals_base = globals_base
        self.locals = locals_
        self.cells = cells
        self.depth = depth
        self.insts = decode(code)
        self.flow = ControlFlow(self.insts)
        self.stack: List[Any] = []
        self.ip = 0
        self.lineno = code.co_firstlineno
        self.kw_names: Optional[Tuple[str, ...]] = None
        self.loop_counts: Dict[int, int] = {}
        self.loop_failed: set = set()  # FOR_ITER instructions whose loop could not be captured
        self.exit_failures: Dict[int, Any] = {}  # (head, end) -> why a for loop with a break was not captured
        self.body_range: Any = None  # the instructions of the loop body being captured (loops.py)
        self.cur_index = 0
        self.parent: Optional[FrameTracer] = None  # the frame whose call is being inlined here

    def location(self) -> Location:
        """Where this frame is, for a node's ``meta["stack"]``, with the translated frame's
        line (the outermost call being inlined)."""
        root = self
        while root.parent is not None:
            root = root.parent
        return Location(self.code.co_filename, self.lineno, self.code.co_name, root.lineno)

    def user_stack(self) -> traceback.StackSummary:
        """The user's stack at the current instruction, outermost first, as a traceback shows
        it: the translated frame at its call of the inlined function, ..., this frame's line."""
        rows = []
        fr: Optional[FrameTracer] = self
        while fr is not None:
            rows.append(traceback.FrameSummary(fr.code.co_filename, fr.lineno, fr.code.co_name, lookup_line=False))
            fr = fr.parent
        rows.reverse()
        return traceback.StackSummary.from_list(rows)

    def locate(self, e: GraphBreak) -> None:
        e.locate(self.code.co_filename, self.lineno)
        _stamp(e, self)

    def brk(self, code: str, reason: str) -> GraphBreak:
        e = GraphBreak(code, reason)
        self.locate(e)
        return e

    def unhandled(self, inst: Any) -> GraphBreak:
        """FH001 for an instruction the interpreter does not execute, named by its opcode
        (or, decoded from CALL_INTRINSIC_1, by its intrinsic, as that has always said)."""
        if inst.intrinsic is not None and inst.kind != Kind.CALL_INTRINSIC_2:
            return self.brk("FH001", f"intrinsic {inst.argrepr}")
        return self.brk("FH001", f"instruction {inst.opname}")

    # ------------------------------------------------------------ the loop
    def run(self) -> V:
        tracer = self.tracer
        outer = tracer.current
        tracer.current = self
        try:
            while True:
                if self.depth == 0 and self.ip == tracer.stop_at:
                    raise StopTrace(self)
                if self.body_range is not None and not self.body_range.admits(self.ip):
                    raise left_body(self)
                self.cur_index = self.ip
                inst = self.insts[self.ip]
                self.ip += 1
                if inst.lineno is not None:
                    self.lineno = inst.lineno
                tracer.count_instruction()  # the trace budget (FH015)
                if (
                    inst.exn_tab_entry is not None
                    and inst.exn_tab_entry.target.kind == Kind.PUSH_EXC_INFO
                    and not errstate.allowed(self, inst.exn_tab_entry)
                ):
                    raise self.brk("FH007", "code inside a try or with block")
                self.execute(inst)
        except ReturnValue as r:
            return r.value
        except GraphBreak as e:
            if tracer.errstate_blocks:
                e = errstate.convert(self, e)
            if self.depth == 0 and e.break_index is None:
                e.break_index = self.cur_index  # the root frame's instruction that broke
            raise e
        except _SIGNALS:
            raise
        except Exception as e:
            _stamp(e, self)  # a translator bug: the user's stack where it happened
            raise
        finally:
            tracer.current = outer

    def execute(self, inst: Any) -> None:
        """Run one instruction: the handler of its kind."""
        handler = self.handlers.get(inst.kind)
        if handler is None:
            raise self.unhandled(inst)
        handler(self, inst)

    def jump(self, inst: Any) -> None:
        self.ip = self.flow.index_of(inst.target)

    # ------------------------------------------------------------ stack helpers
    def push(self, v: Any) -> None:
        self.stack.append(v)

    def pop(self) -> Any:
        return self.stack.pop()

    def popn(self, n: int) -> List[Any]:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    # ------------------------------------------------------------ no-ops and stack shuffles
    def k_nop(self, inst: Any) -> None:
        pass

    # the frame set-up (cells, free variables) is the translator's; RESUME marks a start
    k_resume = k_make_cell = k_copy_free_vars = k_nop

    def k_pop_top(self, inst: Any) -> None:
        self.pop()

    def k_copy(self, inst: Any) -> None:
        self.push(self.stack[-inst.depth])

    def k_copy_two(self, inst: Any) -> None:
        self.stack.extend(self.stack[-2:])

    def k_swap(self, inst: Any) -> None:
        i = inst.depth
        self.stack[-1], self.stack[-i] = self.stack[-i], self.stack[-1]

    def k_rotate(self, inst: Any) -> None:
        if not inst.fixed_depth:
            # a rotation as deep as its argument (3.10's pattern matching) was never executed
            raise self.unhandled(inst)
        self.stack.insert(1 - inst.depth, self.pop())

    def k_push_null(self, inst: Any) -> None:
        self.push(NULL)

    # ------------------------------------------------------------ trace-time values
    def const_of(self, v: V, why: str = "") -> Any:
        """The Python value of ``v``; Python-number graph inputs are specialized (guarded)."""
        try:
            return _const_value(v)
        except KeyError:
            pass
        if isinstance(v, Tensor) and v.is_python_scalar and self.specialize(v.node):
            return v.meta.hint
        if isinstance(v, Tensor):
            dims = self.tracer.dims_in(v.node) if v.is_python_scalar else []
            if dims:
                what = "a branch" if why == "branch" else (why or "a Python value")
                raise self.brk("FH011", f"{what} needs the value of {' and '.join(dims)} (a dynamic dimension)")
            ints = self.tracer.unspecialized_in(v.node) if v.is_python_scalar else []
            if ints:
                what = "a branch" if why == "branch" else (why or "a Python value")
                raise self.brk(
                    "FH011",
                    f"{what} needs the value of {' and '.join(ints)} (an int that changed "
                    "between compilations, not specialized: config.automatic_dynamic_ints)",
                )
            code = "FH002" if why == "branch" else "FH012"
            raise self.brk(code, f"{why or 'a Python value'} needs the value of {v.describe()} computed in the graph")
        if (
            isinstance(v, ListV)
            and v.source is None
            or isinstance(v, TupleV)
            and not any(isinstance(i, Tensor) and i.is_array for i in flatten(v.items))
        ):
            items = [self.const_of(i, why) for i in v.items]
            return items if isinstance(v, ListV) else tuple(items)
        if isinstance(v, SliceV):
            return slice(*(self.const_of(p, why) for p in v.parts))
        raise self.brk("FH008", f"{v.describe()} is not known at trace time")

    def specialize(self, node: Any) -> bool:
        """Guard on the value of every Python-number input ``node`` is computed from; False
        when an array takes part (then the value is data-dependent)."""
        sources = self.tracer.number_sources(node, dynamic_ok=True)
        if sources is None:
            return False
        for src in sources:
            self.tracer.guard(src, GuardKind.EQUALS_MATCH)
        return True

    def truth(self, v: V) -> bool:
        if isinstance(v, (TupleV, ListV)):
            return bool(v.items)
        if isinstance(v, DictV):
            return bool(v.items)
        if isinstance(v, (FuncV, MethodV)):
            return True
        if isinstance(v, ObjV) and not any(hasattr(type(v.value), h) for h in ("__bool__", "__len__")):
            return True
        if isinstance(v, Tensor) and v.is_named_tuple:
            return bool(v.meta.items)
        if isinstance(v, Tensor) and v.is_array:
            raise self.brk("FH002", f"a branch on the value of {v.describe()}")
        value = self.const_of(v, "branch")
        try:
            return bool(value)
        except Exception as e:
            raise self.brk("FH009", f"bool() raised {type(e).__name__}: {e}") from None

    def check_mutable(self, v: V) -> None:
        """``v`` (a list, dict or iterator) is about to be mutated: recorded as a side effect
        when it came from outside (``side_effects.py``)."""
        floor = self.tracer.mutation_floor
        if floor is not None and getattr(v, "serial", floor) < floor:
            raise LoopAbort(f"the loop body changes a {v.describe()} made before the loop")
        self.tracer.side_effects.mutate_container(self, v)


def _handler_table(cls: type) -> Dict[str, Callable[..., None]]:
    """Each kind's handler: the method named after it (a kind without one breaks, FH001)."""
    kinds = {value for name, value in vars(Kind).items() if name.isupper()}
    table = {}
    for name in dir(cls):
        if not name.startswith(HANDLER_PREFIX):
            continue
        kind = name[len(HANDLER_PREFIX) :]
        if kind not in kinds:  # a misspelt handler would never run
            raise TypeError(f"{cls.__name__}.{name} names no instruction kind")
        table[kind] = getattr(cls, name)
    return table


FrameTracer.handlers = _handler_table(FrameTracer)
