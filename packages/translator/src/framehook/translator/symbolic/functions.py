"""The symbolic interpreter's functions: making functions, calls (inlined, or modelled in
``calls.py``), returns and imports (a ``FrameTracer`` mixin)."""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any, Dict, List, Tuple

from ..bytecode.arguments import FUNCTION_PARTS
from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.effects import call_shape
from ..config import config
from .values import NULL, Cell, Const, DictV, FuncV, TupleV, V

__all__ = ["FunctionHandlers", "ReturnValue", "FUNCTION_PARTS_POPPED"]

_NOT_INLINABLE = (
    inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
)

#: the parts of a function MAKE_FUNCTION pops, in order
FUNCTION_PARTS_POPPED = tuple(name for _, name in FUNCTION_PARTS)


class ReturnValue(Exception):
    def __init__(self, value: V) -> None:
        self.value = value


class FunctionHandlers:
    """Functions made and called: a Python function's body is traced inline in a child
    frame; every other callable is modelled by ``calls.call_value``."""

    # ------------------------------------------------------------ returns
    def k_return(self, inst: Any) -> None:
        raise ReturnValue(self.pop())

    def k_return_const(self, inst: Any) -> None:
        raise ReturnValue(Const(inst.argval))

    def k_make_function(self, inst: Any) -> None:
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

    def k_set_function_attribute(self, inst: Any) -> None:
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

    # ------------------------------------------------------------ call instructions
    def k_kw_names(self, inst: Any) -> None:
        self.kw_names = inst.kw_names  # the next call's keyword names (3.11-3.12)

    def k_call(self, inst: Any) -> None:
        if inst.call_names:
            names: Tuple[str, ...] = self.const_of(self.pop())  # a tuple on top of the arguments
        else:
            names = self.kw_names or ()
            self.kw_names = None
        args = self.popn(inst.arg)
        if inst.call_slot:
            # the callable and its NULL-or-self slot, in either order: a method's self is
            # its first argument
            b = self.pop()
            a = self.pop()
            if a is NULL:
                fn = b
            elif b is NULL:
                fn = a
            else:
                fn, args = a, [b] + args
        else:
            fn = self.pop()
        kwargs = {}
        if names:
            kwargs = dict(zip(names, args[len(args) - len(names) :]))
            args = args[: len(args) - len(names)]
        self.push(self.call(fn, args, kwargs))

    def k_call_ex(self, inst: Any) -> None:
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
        child = type(self)(self.tracer, code, fv.f_globals, locals_, cells, fv.globals_base, self.depth + 1)
        child.parent = self
        return child.run()

    # ------------------------------------------------------------ imports
    def k_import_name(self, inst: Any) -> None:
        self.popn(2)
        name = inst.argval
        module = sys.modules.get(name)
        if module is None:
            raise self.brk("FH001", f"import of {name!r}, which is not imported yet")
        if "." in name:
            module = sys.modules.get(name.split(".")[0], module)
        self.push(Const(module))

    def k_import_from(self, inst: Any) -> None:
        self.push(self.getattr(self.stack[-1], inst.argval))
