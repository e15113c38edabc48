"""The symbolic bytecode interpreter: the opcode executor.

``FrameTracer`` executes one code object (the translated frame, or a user function being
inlined) instruction by instruction on symbolic values (``values.py``); ``Tracer``
(``tracer.py``) owns the graph and the guards. Array operations become graph nodes;
everything known at trace time is computed on the spot, guarded where it was read.
Whatever cannot be handled raises ``GraphBreak`` with an ``FH`` identifier.
"""

from __future__ import annotations

import builtins
import inspect
import operator
import sys
import traceback
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..bytecode import ControlFlow, decode
from ..bytecode.arguments import FUNCTION_PARTS, OLD_BINARY_OPS
from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.effects import call_shape
from ..config import config
from ..exc import RestartAnalysis
from ..graph import Location
from ..guards import GuardKind
from ..guards.sources import AttrSource, GlobalSource, ItemSource, Source
from . import errstate
from . import numpy_support as nps
from .breaks import GraphBreak
from .loops import LoopAbort, SymIter, SymRange, capture_loop, capture_while, exits_early, holds_loop, left_body
from . import objects
from .tracer import Tracer
from .values import (
    IMMUTABLE_TYPES,
    NULL,
    Cell,
    CellContents,
    CellV,
    Const,
    DictV,
    FuncV,
    IterV,
    Lazy,
    ListV,
    MethodV,
    NewObjV,
    ObjV,
    SliceV,
    Tensor,
    TupleV,
    V,
    flatten,
)

__all__ = ["FrameTracer", "ReturnValue", "StopTrace"]

_NOT_INLINABLE = (
    inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
)

BINARY_NAMES: Dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "@": operator.matmul,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "@=": operator.imatmul,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
}
INPLACE_TO_PLAIN = {BINARY_NAMES[k]: BINARY_NAMES[k[:-1]] for k in BINARY_NAMES if k.endswith("=")}
COMPARE: Dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}

#: the parts of a function MAKE_FUNCTION pops, in order
FUNCTION_PARTS_POPPED = tuple(name for _, name in FUNCTION_PARTS)
_CONVERTERS = {"str": str, "repr": repr, "ascii": ascii}


def _convert(value: Any, conversion: Optional[str]) -> Any:
    return _CONVERTERS[conversion](value) if conversion else value


class StopTrace(Exception):
    """Raised before the root frame executes ``Tracer.stop_at``: the trace ends there (a
    graph break that resumes; ``resume.py``)."""

    def __init__(self, frame: "FrameTracer") -> None:
        super().__init__("stop")
        self.frame = frame


class ReturnValue(Exception):
    def __init__(self, value: V) -> None:
        self.value = value


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


class FrameTracer:
    """Executes one code object symbolically."""

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
                    and inst.exn_tab_entry.target.opname == "PUSH_EXC_INFO"
                    and not errstate.allowed(self, inst.exn_tab_entry)
                ):
                    raise self.brk("FH007", "code inside a try or with block")
                handler = getattr(self, "op_" + inst.opname, None)
                if handler is None:
                    raise self.brk("FH001", f"instruction {inst.opname}")
                handler(inst)
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

    # ------------------------------------------------------------ no-ops and stack ops
    def op_NOP(self, inst: Any) -> None:
        pass

    # NOT_TAKEN only marks a branch for sys.monitoring
    op_RESUME = op_PRECALL = op_MAKE_CELL = op_COPY_FREE_VARS = op_EXTENDED_ARG = op_CACHE = op_NOP
    op_NOT_TAKEN = op_NOP

    def op_POP_TOP(self, inst: Any) -> None:
        self.pop()

    def op_ROT_TWO(self, inst: Any) -> None:
        self.stack[-1], self.stack[-2] = self.stack[-2], self.stack[-1]

    def op_ROT_THREE(self, inst: Any) -> None:
        self.stack.insert(-2, self.pop())

    def op_ROT_FOUR(self, inst: Any) -> None:
        self.stack.insert(-3, self.pop())

    def op_DUP_TOP(self, inst: Any) -> None:
        self.push(self.stack[-1])

    def op_DUP_TOP_TWO(self, inst: Any) -> None:
        self.stack.extend(self.stack[-2:])

    def op_COPY(self, inst: Any) -> None:
        self.push(self.stack[-inst.arg])

    def op_SWAP(self, inst: Any) -> None:
        i = inst.arg
        self.stack[-1], self.stack[-i] = self.stack[-i], self.stack[-1]

    def op_PUSH_NULL(self, inst: Any) -> None:
        self.push(NULL)

    # ------------------------------------------------------------ constants, locals
    def op_LOAD_CONST(self, inst: Any) -> None:
        self.push(Const(inst.argval))

    def op_LOAD_SMALL_INT(self, inst: Any) -> None:
        self.push(Const(inst.argval))

    def op_LOAD_COMMON_CONSTANT(self, inst: Any) -> None:
        value = inst.argval
        if isinstance(value, type) and issubclass(value, BaseException):
            raise self.brk("FH009", "an explicit raise")  # as LOAD_ASSERTION_ERROR did
        self.push(self.tracer.wrap(value, None))

    def op_RETURN_VALUE(self, inst: Any) -> None:
        raise ReturnValue(self.pop())

    def op_RETURN_CONST(self, inst: Any) -> None:
        raise ReturnValue(Const(inst.argval))

    def load_local(self, name: str) -> V:
        if name not in self.locals:
            raise self.brk("FH009", f"local variable {name!r} is read before it is assigned")
        v = self.locals[name]
        if isinstance(v, Lazy):
            v = self.tracer.wrap(v.value, v.source)
            self.locals[name] = v
        return v

    def op_LOAD_FAST(self, inst: Any) -> None:
        name = inst.argval
        if BEHAVIOUR.closure_loads_are_fast_loads and name in self.cells and name not in self.locals:
            self.push(CellV(self.cells[name]))  # a closure being built loads the cell itself
            return
        self.push(self.load_local(name))

    # a borrowed load is a load: the difference is reference counting
    op_LOAD_FAST_CHECK = op_LOAD_FAST_BORROW = op_LOAD_FAST

    def op_LOAD_FAST_AND_CLEAR(self, inst: Any) -> None:
        self.push(self.locals.pop(inst.argval, NULL))

    def op_LOAD_FAST_LOAD_FAST(self, inst: Any) -> None:
        for name in inst.argval:
            self.push(self.load_local(name))

    op_LOAD_FAST_BORROW_LOAD_FAST_BORROW = op_LOAD_FAST_LOAD_FAST

    def op_STORE_FAST(self, inst: Any) -> None:
        v = self.pop()
        if v is NULL:
            self.locals.pop(inst.argval, None)
        else:
            self.locals[inst.argval] = v

    def op_STORE_FAST_LOAD_FAST(self, inst: Any) -> None:
        self.locals[inst.argval[0]] = self.pop()
        self.push(self.load_local(inst.argval[1]))

    def op_STORE_FAST_STORE_FAST(self, inst: Any) -> None:
        self.locals[inst.argval[0]] = self.pop()
        self.locals[inst.argval[1]] = self.pop()

    def op_DELETE_FAST(self, inst: Any) -> None:
        self.locals.pop(inst.argval, None)

    # ------------------------------------------------------------ globals
    def global_source(self, name: str) -> Source:
        if self.globals_base is None:
            return GlobalSource(name)
        return ItemSource(self.globals_base, name)

    def load_global(self, name: str) -> V:
        stored = self.tracer.side_effects.load_global(name) if self.globals_base is None else None
        if stored is not None:
            return stored
        if name in self.f_globals:
            value = self.f_globals[name]
            if nps.is_numpy_module(value) and self.globals_base is None:
                return self.tracer.wrap(value, GlobalSource(name))
            return self.tracer.wrap(value, self.global_source(name))
        builtins_ = self.f_globals.get("__builtins__", builtins)
        if isinstance(builtins_, types.ModuleType):
            builtins_ = builtins_.__dict__
        if self.globals_base is None:
            builtins_ = self.tracer.f_builtins
        if name in builtins_:
            return self.tracer.wrap(builtins_[name], None)
        raise self.brk("FH009", f"name {name!r} is not defined")

    def op_LOAD_GLOBAL(self, inst: Any) -> None:
        v = self.load_global(inst.argval)
        self.push_with_null(v, inst.push_null)

    def op_STORE_GLOBAL(self, inst: Any) -> None:
        self.tracer.side_effects.store_global(self, inst.argval, self.pop())

    def op_DELETE_GLOBAL(self, inst: Any) -> None:
        raise self.brk("FH006", f"deletion of the global {inst.argval!r}")

    # ------------------------------------------------------------ cells
    def cell(self, name: str) -> Cell:
        c = self.cells.get(name)
        if c is None:
            raise self.brk("FH001", f"unknown cell {name!r}")
        return c

    def cell_value(self, c: Cell, name: str) -> V:
        v = c.value
        if v is None:
            raise self.brk("FH009", f"free variable {name!r} referenced before assignment")
        if isinstance(v, Lazy):
            v = c.value = self.tracer.wrap(v.value, v.source)
        elif isinstance(v, CellContents):
            try:
                contents = v.cell.cell_contents
            except ValueError:
                raise self.brk("FH009", f"free variable {name!r} referenced before assignment") from None
            v = c.value = self.tracer.wrap(contents, v.source)
        return v

    def op_LOAD_DEREF(self, inst: Any) -> None:
        self.push(self.cell_value(self.cell(inst.argval), inst.argval))

    def op_STORE_DEREF(self, inst: Any) -> None:
        c = self.cell(inst.argval)
        if c.external:
            raise self.brk("FH006", f"assignment to the closure variable {inst.argval!r} of an enclosing function")
        if self.tracer.mutation_floor is not None:
            raise LoopAbort(f"the loop body assigns the cell variable {inst.argval!r}")
        c.value = self.pop()

    def op_LOAD_CLOSURE(self, inst: Any) -> None:
        self.push(CellV(self.cell(inst.argval)))

    # ------------------------------------------------------------ attributes
    def op_LOAD_ATTR(self, inst: Any) -> None:
        obj = self.pop()
        self.push_with_null(self.getattr(obj, inst.argval), inst.is_method)

    def op_LOAD_METHOD(self, inst: Any) -> None:
        obj = self.pop()
        self.push(NULL)  # the slot comes first wherever LOAD_METHOD exists
        self.push(self.getattr(obj, inst.argval))

    def push_with_null(self, v: V, null: bool) -> None:
        """``v`` and, when ``null``, the call's NULL slot on the side this Python puts it."""
        if null and not BEHAVIOUR.null_after_callable:
            self.push(NULL)
        self.push(v)
        if null and BEHAVIOUR.null_after_callable:
            self.push(NULL)

    def op_STORE_ATTR(self, inst: Any) -> None:
        obj = self.pop()
        self.tracer.side_effects.store_attr(self, obj, inst.argval, self.pop())

    def op_DELETE_ATTR(self, inst: Any) -> None:
        raise self.brk("FH006", f"deletion of the attribute {inst.argval!r}")

    def getattr(self, obj: V, name: str) -> V:
        tracer = self.tracer
        if isinstance(obj, Tensor) and obj.is_named_tuple:
            return self.named_tuple_attr(obj, name)
        if isinstance(obj, Tensor):
            if obj.is_array:
                meta = obj.meta
                if name in nps.ARRAY_VALUE_ATTRS:
                    if name == "shape":
                        return tracer.read_shape(obj)
                    if name in ("size", "nbytes"):
                        return tracer.read_size(obj, name)
                    return Const(getattr(meta.proxy(), name))
                if name in nps.ARRAY_NODE_ATTRS:
                    return self.record_getattr(obj, name)
                if name in nps.ARRAY_METHODS:
                    return MethodV(obj, name)
                if callable(getattr(np.ndarray, name, None)):
                    raise self.brk("FH004", f"the array method .{name}()")
                raise self.brk("FH013", f"the array attribute .{name}")
            if name in ("real", "imag"):
                return self.record_getattr(obj, name)
            raise self.brk("FH004", f"the attribute .{name} of a {obj.pytype.__name__} graph value")
        if isinstance(obj, Const):
            value = obj.value
            if isinstance(value, types.ModuleType):
                stored = tracer.side_effects.load_module_attr(value, name)
                if stored is not None:
                    return stored
                try:
                    attr = getattr(value, name)
                except AttributeError as e:
                    raise self.brk("FH009", str(e)) from None
                if nps.is_numpy_module(value):
                    if isinstance(attr, np.ndarray):
                        raise self.brk("FH008", f"the module-level array numpy.{name}")
                    return tracer.wrap(attr, None)  # numpy is trusted: its attributes are not guarded
                return tracer.wrap(attr, AttrSource(obj.source, name) if obj.source is not None else None)
            if isinstance(value, IMMUTABLE_TYPES) or (isinstance(value, type) and name in ("__name__", "__qualname__")):
                try:
                    attr = getattr(value, name)
                except AttributeError as e:
                    raise self.brk("FH009", str(e)) from None
                if callable(attr) and not isinstance(attr, type):
                    return Const(attr)  # a bound method of an immutable value
                return tracer.wrap(attr, None)
            if obj.source is not None and objects.is_user_class(value):
                return objects.class_attribute(self, obj, name)  # Cls.method, Cls.CONST (objects.py)
            if isinstance(value, np.ufunc) and name in nps.UFUNC_METHODS:
                return Const(getattr(value, name))
            if value is np.mgrid or value is np.ogrid:
                raise self.brk("FH004", f"numpy.{'mgrid' if value is np.mgrid else 'ogrid'}.{name}")
            raise self.brk("FH008", f"attribute {name!r} of {obj.describe()}")
        if isinstance(obj, TupleV) and obj.fields and name in obj.fields:
            return obj.items[obj.fields.index(name)]
        if isinstance(obj, (ListV, DictV, TupleV)):
            return MethodV(obj, name)
        if isinstance(obj, ObjV):
            return objects.attribute(self, obj, name)  # data, methods, properties (objects.py)
        raise self.brk("FH008", f"attribute {name!r} of {obj.describe()}")

    def named_tuple_attr(self, obj: Tensor, name: str) -> V:
        """An attribute of a named tuple computed in the graph: a field is its item."""
        meta = obj.meta
        fields = meta.fields
        if name in fields:
            return self.tracer.item(obj, fields.index(name))
        if name in ("_fields", "_field_defaults"):
            return self.tracer.wrap(getattr(meta.pytype, name), None)
        if name == "_asdict":
            return MethodV(obj, name)
        if name in ("count", "index"):
            return MethodV(TupleV(self.tracer.items(obj)), name)
        if not hasattr(meta.pytype, name):
            raise self.brk("FH009", f"AttributeError: {meta.pytype.__name__!r} object has no attribute {name!r}")
        raise self.brk("FH004", f"the attribute .{name} of {obj.describe()}")

    def record_getattr(self, obj: Tensor, name: str) -> V:
        try:
            result = getattr(obj.meta.proxy(), name)
        except Exception as e:  # pragma: no cover - every modelled attribute exists
            raise self.brk("FH009", f".{name} raised {type(e).__name__}: {e}") from None
        node = self.tracer.graph.getattr(self.tracer.to_arg(obj), name, stack=self.tracer.stack_location())
        return self.tracer.wrap_result(node, result, obj.is_array, f".{name}", obj.is_array and not obj.meta.is_static)

    # ------------------------------------------------------------ operators
    def binary(self, op: Callable[[Any, Any], Any], a: V, b: V) -> V:
        a, b = self.tracer.as_plain(a), self.tracer.as_plain(b)  # a named tuple is a tuple here
        if isinstance(a, Const) and isinstance(a.value, (str, bytes)) and isinstance(b, Tensor):
            b = Const(self.const_of(b, "string formatting"))  # "%d" % n: a Python value, not a graph one
        if isinstance(a, Tensor) or isinstance(b, Tensor):
            for side in (a, b):
                if isinstance(side, (TupleV, ListV)) and any(isinstance(i, Tensor) for i in flatten([side])):
                    raise self.brk("FH008", "an operator between an array and a container holding arrays")
            if op in INPLACE_TO_PLAIN and isinstance(a, Tensor) and not a.is_array:
                op = INPLACE_TO_PLAIN[op]  # numbers are immutable: a += b is a = a + b
            if op is operator.pow and self.python_int(a) and isinstance(b, Tensor) and self.python_int(b):
                # int ** int is an int or a float by the exponent's sign: known at trace time
                b = Const(self.const_of(b, "the exponent of an int power"))
                if not isinstance(a, Tensor):
                    return self.binary(op, a, b)
            return self.tracer.record(op, [a, b], name=f"operator.{op.__name__}")
        if isinstance(a, (TupleV, ListV)) or isinstance(b, (TupleV, ListV)):
            return self.sequence_op(op, a, b)
        x = self.const_of(a)
        y = self.const_of(b)
        try:
            with errstate.strict(self):
                return Const(op(x, y))
        except Exception as e:
            raise self.brk("FH009", f"{op.__name__} raised {type(e).__name__}: {e}") from None

    @staticmethod
    def python_int(v: V) -> bool:
        if isinstance(v, Tensor):
            return not v.is_array and issubclass(v.pytype, int)
        return isinstance(v, Const) and type(v.value) in (int, bool)

    def sequence_op(self, op: Callable[[Any, Any], Any], a: V, b: V) -> V:
        plain = INPLACE_TO_PLAIN.get(op, op)
        if plain is operator.add and type(a) is type(b) and isinstance(a, (TupleV, ListV)):
            if op is operator.iadd and isinstance(a, ListV):
                self.check_mutable(a)
                a.items.extend(b.items)
                return a
            return type(a)(a.items + b.items)
        if isinstance(a, TupleV) and isinstance(b, Const) and isinstance(b.value, tuple) and plain is operator.add:
            return TupleV(a.items + [Const(x) for x in b.value])
        if isinstance(b, TupleV) and isinstance(a, Const) and isinstance(a.value, tuple) and plain is operator.add:
            return TupleV([Const(x) for x in a.value] + b.items)
        if plain is operator.mul:
            seq, n = (a, b) if isinstance(a, (TupleV, ListV)) else (b, a)
            count = self.const_of(n)
            if isinstance(count, int):
                return type(seq)(seq.items * count)
        if op in COMPARE.values():
            return Const(op(self.const_of(a), self.const_of(b)))
        raise self.brk("FH008", f"operator {op.__name__} on {a.describe()} and {b.describe()}")

    def check_mutable(self, v: V) -> None:
        """``v`` (a list, dict or iterator) is about to be mutated: recorded as a side effect
        when it came from outside (``side_effects.py``)."""
        floor = self.tracer.mutation_floor
        if floor is not None and getattr(v, "serial", floor) < floor:
            raise LoopAbort(f"the loop body changes a {v.describe()} made before the loop")
        self.tracer.side_effects.mutate_container(self, v)

    def op_BINARY_OP(self, inst: Any) -> None:
        if inst.binary_op == "[]":  # subscripts are binary operators
            self.op_BINARY_SUBSCR(inst)
            return
        b = self.pop()
        a = self.pop()
        self.push(self.binary(BINARY_NAMES[inst.binary_op], a, b))

    for _name in OLD_BINARY_OPS:
        locals()[f"op_{_name}"] = op_BINARY_OP
    del _name

    def unary(self, op: Callable[[Any], Any], v: V) -> V:
        v = self.tracer.as_plain(v)
        if isinstance(v, Tensor):
            return self.tracer.record(op, [v], name=f"operator.{op.__name__}")
        x = self.const_of(v)
        try:
            with errstate.strict(self):
                return Const(op(x))
        except Exception as e:
            raise self.brk("FH009", f"{op.__name__} raised {type(e).__name__}: {e}") from None

    def op_UNARY_NEGATIVE(self, inst: Any) -> None:
        self.push(self.unary(operator.neg, self.pop()))

    def op_UNARY_POSITIVE(self, inst: Any) -> None:
        self.push(self.unary(operator.pos, self.pop()))

    def op_UNARY_INVERT(self, inst: Any) -> None:
        self.push(self.unary(operator.invert, self.pop()))

    def op_UNARY_NOT(self, inst: Any) -> None:
        self.push(Const(not self.truth(self.pop())))

    def op_TO_BOOL(self, inst: Any) -> None:
        v = self.jump_truth(self.pop())
        if v is not NULL:
            self.push(v)

    def op_CALL_INTRINSIC_1(self, inst: Any) -> None:
        if inst.argrepr == "INTRINSIC_UNARY_POSITIVE":
            self.push(self.unary(operator.pos, self.pop()))
        elif inst.argrepr == "INTRINSIC_LIST_TO_TUPLE":
            self.push(TupleV(self.pop().items))
        else:
            raise self.brk("FH001", f"intrinsic {inst.argrepr}")

    def op_COMPARE_OP(self, inst: Any) -> None:
        b = self.tracer.as_plain(self.pop())
        a = self.tracer.as_plain(self.pop())
        op = COMPARE[inst.argval]
        if any(self.tracer.is_symbolic_number(side) for side in (a, b)) and not any(
            isinstance(side, Tensor) and side.is_array for side in (a, b)
        ):
            # ``n > 1`` on a dynamic dimension: a graph bool (a branch on it breaks)
            result = self.binary(op, a, b)
            result = self.jump_truth(result) if inst.to_bool else result
            if result is not NULL:
                self.push(result)
            return
        # Python numbers that entered the graph are specialized when compared
        for side in (a, b):
            if isinstance(side, Tensor) and side.is_python_scalar:
                self.const_of(side)
        if (isinstance(a, Tensor) and a.is_array) or (isinstance(b, Tensor) and b.is_array):
            result = self.binary(op, a, b)
        else:
            a2 = a if not isinstance(a, Tensor) else Const(self.const_of(a))
            b2 = b if not isinstance(b, Tensor) else Const(self.const_of(b))
            result = self.binary(op, a2, b2)
        if inst.to_bool:
            result = self.jump_truth(result)
        if result is not NULL:
            self.push(result)

    def op_IS_OP(self, inst: Any) -> None:
        b = self.pop()
        a = self.pop()
        if isinstance(a, Const) and isinstance(b, Const):
            same = a.value is b.value
        elif type(a) is not type(b) and (
            isinstance(a, Const) and a.value is None or isinstance(b, Const) and b.value is None
        ):
            same = False
        elif a is b:
            same = True
        elif isinstance(a, Const) or isinstance(b, Const) or isinstance(a, NewObjV) or isinstance(b, NewObjV):
            same = False  # a traced value is never one of the known constant objects, nor a new object
        else:
            raise self.brk("FH008", f"`is` between {a.describe()} and {b.describe()}")
        self.push(Const(same != inst.invert))

    def op_CONTAINS_OP(self, inst: Any) -> None:
        container = self.tracer.as_plain(self.pop())
        item = self.tracer.as_plain(self.pop())
        if isinstance(container, DictV):
            found = self.const_of(item) in container.items
        elif isinstance(container, (TupleV, ListV)) and all(not isinstance(i, Tensor) for i in flatten([container])):
            found = self.const_of(item) in self.const_of(container)
        elif isinstance(container, Const) and not isinstance(item, Tensor):
            try:
                found = self.const_of(item) in container.value
            except Exception as e:
                raise self.brk("FH009", f"`in` raised {type(e).__name__}: {e}") from None
        else:
            raise self.brk("FH002", f"`in` on {container.describe()} needs array values")
        self.push(Const(found != inst.invert))

    # ------------------------------------------------------------ subscripts
    def subscr(self, obj: V, idx: V) -> V:
        if isinstance(obj, Tensor) and obj.is_named_tuple:
            key = self.const_of(idx, f"indexing a {obj.describe()}")
            n = len(obj.meta.items)
            if type(key) is int and -n <= key < n:
                return self.tracer.item(obj, key % n)
            obj = self.tracer.as_plain(obj)  # a slice gives a plain tuple; the rest raises as for one
        if isinstance(obj, Tensor):
            if not obj.is_array:
                raise self.brk("FH008", f"indexing a {obj.pytype.__name__}")
            idx = self.tracer.as_plain(idx)
            if nps.is_mask(idx) and idx.meta.ndim > 0:
                return nps.mask_getitem(self, obj, idx)
            self.check_masks(idx)
            if nps.is_mask(idx) or isinstance(idx, TupleV) and any(nps.is_mask(i) for i in idx.items):
                return nps.mask_index_getitem(self, obj, self.index_value(idx))
            for part in flatten([idx]):
                if isinstance(part, Tensor) and not part.is_array:
                    self.index_value(part)
            idx = self.index_value(idx)
            # a slice bound computed in the graph makes the length symbolic; an int index does not
            sized = any(isinstance(p, SliceV) for p in flatten([idx]))
            return self.tracer.record(operator.getitem, [obj, idx], name="operator.getitem", sized=sized)
        if isinstance(obj, (TupleV, ListV)):
            key = self.const_of(idx, f"indexing a {obj.describe()}")
            try:
                if isinstance(key, slice):
                    return type(obj)(obj.items[key]) if isinstance(obj, TupleV) else ListV(obj.items[key])
                return obj.items[key]
            except Exception as e:
                raise self.brk("FH009", f"indexing raised {type(e).__name__}: {e}") from None
        if isinstance(obj, DictV):
            key = self.const_of(idx)
            if key not in obj.items:
                raise self.brk("FH009", f"KeyError: {key!r}")
            return obj.items[key]
        if isinstance(obj, Const):
            if isinstance(idx, Tensor) and idx.is_array:
                raise self.brk("FH004", f"indexing {obj.describe()} with an array")
            key = self.const_of(idx)
            if obj.value is np.mgrid or obj.value is np.ogrid or obj.value is np.index_exp or obj.value is np.s_:
                if obj.value is np.index_exp or obj.value is np.s_:
                    return Const(obj.value[key])
                return self.tracer.record(operator.getitem, [obj, Const(key)], name="numpy.mgrid[]")
            try:
                result = obj.value[key]
            except Exception as e:
                raise self.brk("FH009", f"indexing raised {type(e).__name__}: {e}") from None
            return self.tracer.wrap(result, None)
        raise self.brk("FH008", f"indexing {obj.describe()}")

    def check_masks(self, idx: V) -> None:
        """Masks (boolean graph arrays) are indices on their own or items of a tuple index;
        anywhere deeper (a list index, a tuple inside the tuple) numpy first makes one array
        of the sequence, whose shape and meaning depend on the masks' values."""
        parts = idx.items if isinstance(idx, TupleV) else [idx]
        for part in parts:
            if not nps.is_mask(part) and any(nps.is_mask(p) for p in flatten([self.tracer.as_plain(part, True)])):
                raise self.brk(
                    "FH011",
                    "a boolean mask inside a list or a nested sequence of an index (numpy "
                    "makes one array of the sequence; index with the mask itself, or with "
                    "a tuple of masks, ints, slices and integer arrays)",
                )

    def index_value(self, idx: V) -> V:
        """An index for an array: constants, slices, tuples, arrays of integers, and graph
        ints (a dynamic dimension, a loop index); other graph numbers are specialized."""
        idx = self.tracer.as_plain(idx)
        if isinstance(idx, Tensor) and not idx.is_array:
            if self.tracer.is_symint(idx):
                return idx
            return Const(self.const_of(idx, "an index"))
        if isinstance(idx, TupleV):
            return TupleV([self.index_value(i) for i in idx.items])
        return idx

    def op_BINARY_SUBSCR(self, inst: Any) -> None:
        idx = self.pop()
        obj = self.pop()
        self.push(self.subscr(obj, idx))

    def op_BINARY_SLICE(self, inst: Any) -> None:
        stop = self.pop()
        start = self.pop()
        obj = self.pop()
        self.push(self.subscr(obj, self.make_slice([start, stop])))

    def store_subscr(self, obj: V, idx: V, value: V) -> None:
        if isinstance(obj, Tensor) and obj.is_array:
            idx = self.tracer.as_plain(idx)
            value = self.tracer.as_plain(value, True)
            if nps.is_mask(idx) and idx.meta.ndim > 0:
                nps.mask_setitem(self, obj, idx, value)
                return
            self.check_masks(idx)
            if nps.is_mask(idx) or isinstance(idx, TupleV) and any(nps.is_mask(i) for i in idx.items):
                nps.mask_index_setitem(self, obj, self.index_value(idx), value)
                return
            idx = self.index_value(idx)
            self.tracer.record(operator.setitem, [obj, idx, value], name="operator.setitem")
            return
        if isinstance(obj, ListV):
            self.check_mutable(obj)
            key = self.const_of(idx)
            try:
                if isinstance(key, slice):
                    obj.items[key] = self.iterate(value)
                else:
                    obj.items[key] = value
            except Exception as e:
                raise self.brk("FH009", f"list assignment raised {type(e).__name__}: {e}") from None
            return
        if isinstance(obj, DictV):
            self.check_mutable(obj)
            obj.items[self.const_of(idx)] = value
            return
        raise self.brk("FH006", f"item assignment on {obj.describe()}")

    def op_STORE_SUBSCR(self, inst: Any) -> None:
        idx = self.pop()
        obj = self.pop()
        value = self.pop()
        self.store_subscr(obj, idx, value)

    def op_STORE_SLICE(self, inst: Any) -> None:
        stop = self.pop()
        start = self.pop()
        obj = self.pop()
        value = self.pop()
        self.store_subscr(obj, self.make_slice([start, stop]), value)

    def op_DELETE_SUBSCR(self, inst: Any) -> None:
        idx = self.pop()
        obj = self.pop()
        if isinstance(obj, (ListV, DictV)):
            self.check_mutable(obj)
            key = self.const_of(idx)
            try:
                del obj.items[key]
            except Exception as e:
                raise self.brk("FH009", f"del raised {type(e).__name__}: {e}") from None
            return
        raise self.brk("FH006", f"item deletion on {obj.describe()}")

    # ------------------------------------------------------------ building
    def op_BUILD_TUPLE(self, inst: Any) -> None:
        self.push(TupleV(self.popn(inst.arg)))

    def op_BUILD_LIST(self, inst: Any) -> None:
        self.push(ListV(self.popn(inst.arg)))

    def op_BUILD_MAP(self, inst: Any) -> None:
        flat = self.popn(2 * inst.arg)
        self.push(DictV({self.const_of(flat[i]): flat[i + 1] for i in range(0, len(flat), 2)}))

    def op_BUILD_CONST_KEY_MAP(self, inst: Any) -> None:
        keys = self.const_of(self.pop())
        values = self.popn(inst.arg)
        self.push(DictV(dict(zip(keys, values))))

    def make_slice(self, parts: List[V]) -> V:
        """A slice: bounds that are graph ints (dynamic dimensions, a loop index) stay in the
        graph; other graph numbers are specialized."""
        parts = [nps.slice_bound(self, p) for p in parts]  # x[:idx[0]]: a graph int too
        if any(self.tracer.is_symint(p) for p in parts):
            return SliceV([p if self.tracer.is_symint(p) else Const(self.const_of(p, "a slice bound")) for p in parts])
        return Const(slice(*(self.const_of(p, "a slice bound") for p in parts)))

    def op_BUILD_SLICE(self, inst: Any) -> None:
        self.push(self.make_slice(self.popn(inst.arg)))

    def op_LIST_APPEND(self, inst: Any) -> None:
        v = self.pop()
        self.check_mutable(self.stack[-inst.arg])
        self.stack[-inst.arg].items.append(v)

    def op_LIST_EXTEND(self, inst: Any) -> None:
        v = self.pop()
        self.check_mutable(self.stack[-inst.arg])
        self.stack[-inst.arg].items.extend(self.iterate(v))

    def op_LIST_TO_TUPLE(self, inst: Any) -> None:
        self.push(TupleV(self.pop().items))

    def op_MAP_ADD(self, inst: Any) -> None:
        value = self.pop()
        key = self.pop()
        self.check_mutable(self.stack[-inst.arg])
        self.stack[-inst.arg].items[self.const_of(key)] = value

    def op_DICT_UPDATE(self, inst: Any) -> None:
        v = self.pop()
        target = self.stack[-inst.arg]
        self.check_mutable(target)
        if isinstance(v, DictV):
            target.items.update(v.items)
        elif isinstance(v, Const) and isinstance(v.value, dict):
            target.items.update({k: self.tracer.wrap(x, None) for k, x in v.value.items()})
        else:
            raise self.brk("FH008", f"** of {v.describe()}")

    op_DICT_MERGE = op_DICT_UPDATE

    def op_UNPACK_SEQUENCE(self, inst: Any) -> None:
        items = self.iterate(self.pop())
        if len(items) != inst.arg:
            raise self.brk("FH009", f"cannot unpack {len(items)} values into {inst.arg}")
        self.stack.extend(reversed(items))

    def op_UNPACK_EX(self, inst: Any) -> None:
        items = self.iterate(self.pop())
        before, after = inst.unpack
        if len(items) < before + after:
            raise self.brk("FH009", "not enough values to unpack")
        middle = ListV(items[before : len(items) - after])
        out = items[:before] + [middle] + items[len(items) - after :]
        self.stack.extend(reversed(out))

    def op_FORMAT_VALUE(self, inst: Any) -> None:
        spec = self.pop() if inst.format_spec else Const("")
        value = _convert(self.const_of(self.pop(), "formatting"), inst.conversion)
        self.push(Const(format(value, self.const_of(spec))))

    def op_FORMAT_SIMPLE(self, inst: Any) -> None:
        self.push(Const(format(self.const_of(self.pop(), "formatting"))))

    def op_FORMAT_WITH_SPEC(self, inst: Any) -> None:
        spec = self.const_of(self.pop())
        self.push(Const(format(self.const_of(self.pop(), "formatting"), spec)))

    def op_CONVERT_VALUE(self, inst: Any) -> None:
        value = self.const_of(self.pop(), "formatting")
        self.push(Const(_convert(value, inst.conversion)))

    def op_BUILD_INTERPOLATION(self, inst: Any) -> None:
        # t-strings: built at trace time from known values (an array's value is not known)
        spec = self.const_of(self.pop(), "a t-string") if inst.format_spec else ""
        expression = self.const_of(self.pop(), "a t-string")
        value = self.const_of(self.pop(), "a t-string")
        from string.templatelib import Interpolation  # 3.14+: only reached there

        self.push(Const(Interpolation(value, expression, (inst.conversion or "")[:1] or None, spec)))

    def op_BUILD_TEMPLATE(self, inst: Any) -> None:
        interpolations = self.const_of(self.pop(), "a t-string")
        strings = self.const_of(self.pop(), "a t-string")
        from string.templatelib import Template

        parts: List[Any] = []
        for k, text in enumerate(strings):
            parts.append(text)
            if k < len(interpolations):
                parts.append(interpolations[k])
        self.push(Const(Template(*parts)))

    def op_BUILD_STRING(self, inst: Any) -> None:
        self.push(Const("".join(self.const_of(p) for p in self.popn(inst.arg))))

    # ------------------------------------------------------------ jumps
    def op_JUMP_FORWARD(self, inst: Any) -> None:
        self.jump(inst)

    op_JUMP_ABSOLUTE = op_JUMP_BACKWARD = op_JUMP_BACKWARD_NO_INTERRUPT = op_JUMP = op_JUMP_FORWARD

    def _pop_jump(self, inst: Any, when: bool) -> None:
        v = self.pop()
        try:
            taken = self.truth(v) == when
        except GraphBreak as e:
            if capture_while(self, inst, v, e):  # the condition of a while loop: captured whole
                return
            raise
        if taken:
            self.jump(inst)

    def jump_truth(self, v: V) -> V:
        """``bool(v)`` for the conditional jump that follows (TO_BOOL, COMPARE_OP's bool()):
        a graph value there may be a while loop's condition (``loops.capture_while``)."""
        try:
            return Const(self.truth(v))
        except GraphBreak as e:
            jump = self.insts[self.ip] if self.ip < len(self.insts) else None
            if jump is not None and jump.opname.startswith("POP_JUMP") and capture_while(self, jump, v, e):
                return NULL  # captured: the frame continues after the loop, past the jump
            raise

    def op_POP_JUMP_IF_FALSE(self, inst: Any) -> None:
        self._pop_jump(inst, False)

    def op_POP_JUMP_IF_TRUE(self, inst: Any) -> None:
        self._pop_jump(inst, True)

    op_POP_JUMP_FORWARD_IF_FALSE = op_POP_JUMP_BACKWARD_IF_FALSE = op_POP_JUMP_IF_FALSE
    op_POP_JUMP_FORWARD_IF_TRUE = op_POP_JUMP_BACKWARD_IF_TRUE = op_POP_JUMP_IF_TRUE

    def _is_none(self, v: V) -> bool:
        if isinstance(v, Const):
            return v.value is None
        return False

    def op_POP_JUMP_IF_NONE(self, inst: Any) -> None:
        if self._is_none(self.pop()):
            self.jump(inst)

    def op_POP_JUMP_IF_NOT_NONE(self, inst: Any) -> None:
        if not self._is_none(self.pop()):
            self.jump(inst)

    op_POP_JUMP_FORWARD_IF_NONE = op_POP_JUMP_BACKWARD_IF_NONE = op_POP_JUMP_IF_NONE
    op_POP_JUMP_FORWARD_IF_NOT_NONE = op_POP_JUMP_BACKWARD_IF_NOT_NONE = op_POP_JUMP_IF_NOT_NONE

    def op_JUMP_IF_FALSE_OR_POP(self, inst: Any) -> None:
        if not self.truth(self.stack[-1]):
            self.jump(inst)
        else:
            self.pop()

    def op_JUMP_IF_TRUE_OR_POP(self, inst: Any) -> None:
        if self.truth(self.stack[-1]):
            self.jump(inst)
        else:
            self.pop()

    # ------------------------------------------------------------ iteration
    def iterate(self, v: V) -> List[V]:
        """The values iterating ``v`` yields (trace-time known length)."""
        if isinstance(v, Tensor) and v.is_named_tuple:
            return list(self.tracer.items(v))
        if isinstance(v, (TupleV, ListV)):
            return list(v.items)
        if isinstance(v, DictV):
            return [Const(k) for k in v.items]
        if isinstance(v, IterV):
            self.check_mutable(v)
            return v.rest()
        if isinstance(v, Tensor):
            if not v.is_array or v.meta.ndim == 0:
                raise self.brk("FH009", f"iteration over a 0-d {v.describe()}")
            n = v.meta.shape[0]
            if not isinstance(n, int):
                raise self.brk("FH011", "iteration over an array with a symbolic first dimension")
            if n > config.max_unrolled_iterations:
                raise self.brk("FH010", f"iteration over {n} rows of an array")
            return [self.subscr(v, Const(i)) for i in range(n)]
        if isinstance(v, Const):
            value = v.value
            if isinstance(value, (range, tuple, str, bytes, list)):
                if len(value) > config.max_unrolled_iterations:
                    raise self.brk("FH010", f"iteration over {len(value)} items")
                return [self.tracer.wrap(x, None) for x in value]
        raise self.brk("FH008", f"iteration over {v.describe()}")

    def op_GET_ITER(self, inst: Any) -> None:
        v = self.pop()
        if isinstance(v, IterV):
            self.push(v)
        elif isinstance(v, ListV):
            self.push(IterV([], live=v))
        elif isinstance(v, SymRange):
            self.push(SymIter(v))  # captured as a loop node with graph bounds (loops.py)
        elif isinstance(v, Const) and type(v.value) is range:
            self.push(IterV([], range_=v.value))  # unrolled (FH010 past the limit) or captured as a loop
        else:
            self.push(IterV(self.iterate(v)))
        if BEHAVIOUR.iterators_take_two_slots:
            self.push(NULL)  # the index slot: the IterV keeps its own position

    def iterator(self) -> Any:
        """The iterator FOR_ITER advances (under its index slot where there is one)."""
        return self.stack[-2 if BEHAVIOUR.iterators_take_two_slots else -1]

    def op_FOR_ITER(self, inst: Any) -> None:
        it = self.iterator()
        if not isinstance(it, IterV):
            raise self.brk("FH008", f"iteration over {it.describe()}")
        self.check_mutable(it)
        if isinstance(it, SymIter):
            capture_loop(self, inst, it)  # captured, or LoopAbort: the enclosing loop unrolls
        elif (
            config.capture_loops
            and it.live is None
            and id(inst) not in self.loop_failed
            and (id(inst) in self.loop_counts or exits_early(self, inst) or holds_loop(self, inst))
        ):
            capture_loop(self, inst, it)  # on success the iterator is exhausted: the loop exits below
        v = it.next()
        if v is None:
            if BEHAVIOUR.loops_end_with_end_for:
                self.push(NULL)  # END_FOR (and the POP_TOP after it) pop it with the iterator
            else:
                self.pop()
            self.jump(inst)
            return
        n = self.loop_counts.get(id(inst), 0) + 1
        self.loop_counts[id(inst)] = n
        if n > config.max_unrolled_iterations:
            raise self.brk("FH010", f"a loop ran more than {config.max_unrolled_iterations} iterations")
        self.push(v)

    def op_END_FOR(self, inst: Any) -> None:
        self.pop()
        if not BEHAVIOUR.end_for_followed_by_pop_top:
            self.pop()

    def op_POP_ITER(self, inst: Any) -> None:
        self.pop()
        if BEHAVIOUR.iterators_take_two_slots:
            self.pop()

    # ------------------------------------------------------------ blocks and raising
    def op_SETUP_FINALLY(self, inst: Any) -> None:
        raise self.brk("FH007", "code inside a try block")

    op_SETUP_ASYNC_WITH = op_SETUP_FINALLY

    def op_SETUP_WITH(self, inst: Any) -> None:
        cm = self.stack[-1]
        if not isinstance(cm, errstate.ErrstateV):
            raise self.brk("FH007", "code inside a try block")
        self.pop()
        block = errstate.enter(self, cm, inst)
        self.push(errstate.ErrstateExitV(block))
        self.push(Const(None))  # what numpy.errstate.__enter__ returns

    op_BEFORE_WITH = op_SETUP_WITH

    def op_LOAD_SPECIAL(self, inst: Any) -> None:
        # a with statement: ``__exit__`` is fetched first, then ``__enter__`` enters
        cm = self.stack[-1]
        if not isinstance(cm, errstate.ErrstateV):
            raise self.brk("FH007", "code inside a try block")
        self.pop()
        if inst.argval == "__exit__":
            self.push(errstate.ErrstateExitV(None, cm))
            self.push(NULL)
            return
        block = errstate.enter(self, cm, inst)
        for v in self.stack:
            if isinstance(v, errstate.ErrstateExitV) and v.cm is cm and v.block is None:
                v.block = block
        self.push(errstate.ErrstateEnterV())
        self.push(NULL)

    def op_POP_BLOCK(self, inst: Any) -> None:
        # 3.9/3.10: only an errstate block gets this far (every other SETUP_* breaks); its
        # __exit__ call right after closes it
        pass

    def op_RAISE_VARARGS(self, inst: Any) -> None:
        raise self.brk("FH009", "an explicit raise")

    op_RERAISE = op_LOAD_ASSERTION_ERROR = op_RAISE_VARARGS

    def op_IMPORT_NAME(self, inst: Any) -> None:
        self.popn(2)
        name = inst.argval
        module = sys.modules.get(name)
        if module is None:
            raise self.brk("FH001", f"import of {name!r}, which is not imported yet")
        if "." in name:
            module = sys.modules.get(name.split(".")[0], module)
        self.push(Const(module))

    def op_IMPORT_FROM(self, inst: Any) -> None:
        self.push(self.getattr(self.stack[-1], inst.argval))

    # ------------------------------------------------------------ functions
    def op_MAKE_FUNCTION(self, inst: Any) -> None:
        qualname = self.pop() if BEHAVIOUR.make_function_pops_qualname else None
        code_v = self.pop()
        code = code_v.value
        parts = inst.function_parts
        fv = FuncV(code, self.f_globals, code.co_name, globals_base=self.globals_base)
        if isinstance(qualname, Const) and isinstance(qualname.value, str):
            fv.qualname = qualname.value
        for part in FUNCTION_PARTS_POPPED:
            if part in parts:
                self.set_function_part(fv, part, self.pop())
        self.push(fv)

    def op_SET_FUNCTION_ATTRIBUTE(self, inst: Any) -> None:
        fv = self.pop()
        attr = self.pop()
        for part in inst.function_parts:
            self.set_function_part(fv, part, attr)
        self.push(fv)

    def set_function_part(self, fv: FuncV, part: str, value: V) -> None:
        if part == "closure":
            fv.closure = [c.cell for c in value.items]
        elif part in ("annotations", "annotate"):  # a dict, or (3.14+) the __annotate__ function
            fv.annotated = True
        elif part == "kwdefaults":
            fv.kwdefaults = (
                dict(value.items)
                if isinstance(value, DictV)
                else {k: Const(x) for k, x in self.const_of(value).items()}
            )
        else:
            fv.defaults = self.iterate(value)

    def op_KW_NAMES(self, inst: Any) -> None:
        self.kw_names = inst.kw_names

    def _call_with(self, nargs: int, kw_names: Tuple[str, ...]) -> None:
        args = self.popn(nargs)
        b = self.pop()
        a = self.pop()
        if a is NULL:
            fn = b
        elif b is NULL:
            fn = a
        else:
            fn, args = a, [b] + args
        kwargs = {}
        if kw_names:
            kwargs = dict(zip(kw_names, args[len(args) - len(kw_names) :]))
            args = args[: len(args) - len(kw_names)]
        self.push(self.call(fn, args, kwargs))

    def op_CALL(self, inst: Any) -> None:
        names = self.kw_names or ()
        self.kw_names = None
        self._call_with(inst.arg, names)

    def op_CALL_KW(self, inst: Any) -> None:
        names = self.const_of(self.pop())
        self._call_with(inst.arg, names)

    op_CALL_METHOD = op_CALL

    def op_CALL_FUNCTION(self, inst: Any) -> None:
        args = self.popn(inst.arg)
        fn = self.pop()
        self.push(self.call(fn, args, {}))

    def op_CALL_FUNCTION_KW(self, inst: Any) -> None:
        names = self.const_of(self.pop())
        args = self.popn(inst.arg)
        fn = self.pop()
        kwargs = dict(zip(names, args[len(args) - len(names) :]))
        self.push(self.call(fn, args[: len(args) - len(names)], kwargs))

    def op_CALL_FUNCTION_EX(self, inst: Any) -> None:
        kw = self.pop() if inst.call_kwargs else DictV({})
        if kw is NULL:  # the kwargs slot is always there; NULL when there are none
            kw = DictV({})
        args = self.pop()
        x = self.pop()
        if x is NULL:
            fn = self.pop()
        else:
            fn = x
            if call_shape(inst).callable_slots == 2:  # type: ignore[union-attr]
                self.pop()
        if isinstance(kw, Const) and isinstance(kw.value, dict):
            kw = DictV({k: Const(v) for k, v in kw.value.items()})
        if not isinstance(kw, DictV):
            raise self.brk("FH008", f"** of {kw.describe()}")
        self.push(self.call(fn, self.iterate(args), dict(kw.items)))

    # ------------------------------------------------------------ calls
    def call(self, fn: V, args: List[V], kwargs: Dict[str, V]) -> V:
        from .calls import call_value

        return call_value(self, fn, args, kwargs)

    def inline(self, fv: FuncV, args: List[V], kwargs: Dict[str, V]) -> V:
        code = fv.code
        if code.co_flags & _NOT_INLINABLE:
            e = self.brk("FH014", f"{fv.name} is a generator or coroutine function")
            if self.depth == 0 and code.co_name == "<genexpr>":
                # the generator the call makes would be a resume function's input, which it
                # cannot take (where GET_ITER runs before the call, its iterator is live on
                # the stack and cannot be rebuilt either)
                e.resume_refused = "a generator expression's generator cannot enter a resume function"  # type: ignore[attr-defined]
            raise e
        if self.depth + 1 > config.max_inline_depth:
            raise self.brk("FH014", f"calls nested deeper than config.max_inline_depth={config.max_inline_depth}")
        if code.co_argcount == 1 and code.co_varnames[:1] == (".0",) and len(args) == 1 and not kwargs:
            return self._run_child(fv, {".0": args[0]})  # a comprehension (3.9-3.11)
        dummy = types.FunctionType(
            code, {}, fv.name, tuple(fv.defaults) or None, tuple(types.CellType() for _ in code.co_freevars) or None
        )
        dummy.__kwdefaults__ = dict(fv.kwdefaults) or None
        try:
            bound = inspect.signature(dummy).bind(*args, **kwargs)
        except TypeError as e:
            raise self.brk("FH009", f"calling {fv.name}: {e}") from None
        bound.apply_defaults()
        locals_: Dict[str, Any] = {}
        for name, value in bound.arguments.items():
            param = bound.signature.parameters[name]
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                value = TupleV(list(value))
            elif param.kind is inspect.Parameter.VAR_KEYWORD:
                value = DictV(dict(value))
            locals_[name] = value
        return self._run_child(fv, locals_)

    def _run_child(self, fv: FuncV, locals_: Dict[str, Any]) -> V:
        code = fv.code
        cells: Dict[str, Cell] = {}
        for name in code.co_cellvars:
            cells[name] = Cell(locals_.pop(name, None))
        if len(fv.closure) != len(code.co_freevars):
            raise self.brk("FH014", f"{fv.name}: closure does not match its free variables")
        for name, c in zip(code.co_freevars, fv.closure):
            cells[name] = c
        child = FrameTracer(self.tracer, code, fv.f_globals, locals_, cells, fv.globals_base, self.depth + 1)
        child.parent = self
        return child.run()


__all__ += ["BINARY_NAMES", "COMPARE"]
