"""The symbolic interpreter's constants, locals, globals and cells (a ``FrameTracer`` mixin)."""

from __future__ import annotations

import builtins
import types
from typing import Any

from ..bytecode.behaviour import BEHAVIOUR
from ..guards.sources import GlobalSource, ItemSource, Source
from . import numpy_support as nps
from .loops import LoopAbort
from .values import NULL, Cell, CellContents, CellV, Const, Lazy, V

__all__ = ["VariableHandlers"]


class VariableHandlers:
    """Loads, stores and deletions of constants, locals, globals and cells."""

    # ------------------------------------------------------------ constants
    def k_load_const(self, inst: Any) -> None:
        value = inst.argval
        if isinstance(value, type) and issubclass(value, BaseException) and not self.code_constant(inst):
            # one of the interpreter's own constants (3.14's AssertionError for an assert)
            raise self.brk("FH009", "an explicit raise")  # as LOAD_ASSERTION_ERROR did
        self.push(Const(value))

    def code_constant(self, inst: Any) -> bool:
        """Is the value ``inst`` loads one of the code object's constants (rather than a
        small int or a constant of the interpreter's, which the argument stands for)?"""
        consts = self.code.co_consts
        return inst.arg is not None and 0 <= inst.arg < len(consts) and consts[inst.arg] is inst.argval

    # ------------------------------------------------------------ locals
    def load_local(self, name: str) -> V:
        if name not in self.locals:
            raise self.brk("FH009", f"local variable {name!r} is read before it is assigned")
        v = self.locals[name]
        if isinstance(v, Lazy):
            v = self.tracer.wrap(v.value, v.source)
            self.locals[name] = v
        return v

    def k_load_local(self, inst: Any) -> None:
        # the checked and the borrowed loads are loads too: they differ in reference counting
        name = inst.argval
        if BEHAVIOUR.closure_loads_are_fast_loads and name in self.cells and name not in self.locals:
            self.push(CellV(self.cells[name]))  # a closure being built loads the cell itself
            return
        self.push(self.load_local(name))

    def k_load_local_and_clear(self, inst: Any) -> None:
        self.push(self.locals.pop(inst.argval, NULL))

    def k_load_local_pair(self, inst: Any) -> None:
        for name in inst.argval:
            self.push(self.load_local(name))

    def k_store_local(self, inst: Any) -> None:
        v = self.pop()
        if v is NULL:
            self.locals.pop(inst.argval, None)
        else:
            self.locals[inst.argval] = v

    def k_store_load_local(self, inst: Any) -> None:
        self.locals[inst.argval[0]] = self.pop()
        self.push(self.load_local(inst.argval[1]))

    def k_store_local_pair(self, inst: Any) -> None:
        self.locals[inst.argval[0]] = self.pop()
        self.locals[inst.argval[1]] = self.pop()

    def k_delete_local(self, inst: Any) -> None:
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

    def k_load_global(self, inst: Any) -> None:
        v = self.load_global(inst.argval)
        self.push_with_null(v, inst.push_null)

    def k_store_global(self, inst: Any) -> None:
        self.tracer.side_effects.store_global(self, inst.argval, self.pop())

    def k_delete_global(self, inst: Any) -> None:
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

    def k_load_deref(self, inst: Any) -> None:
        self.push(self.cell_value(self.cell(inst.argval), inst.argval))

    def k_store_deref(self, inst: Any) -> None:
        c = self.cell(inst.argval)
        if c.external:
            raise self.brk("FH006", f"assignment to the closure variable {inst.argval!r} of an enclosing function")
        if self.tracer.mutation_floor is not None:
            raise LoopAbort(f"the loop body assigns the cell variable {inst.argval!r}")
        c.value = self.pop()

    def k_load_closure(self, inst: Any) -> None:
        self.push(CellV(self.cell(inst.argval)))
