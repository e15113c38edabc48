"""The symbolic translator: traces a frame into a graph, compiles it with the backend and
returns replacement code that loads the graph's inputs, calls the compiled graph and
returns its result. On a graph break the frame is traced again up to the break and its code
runs the graph so far, the broken instruction (or statement) in Python and a resume
function (``resume.py``); when that is not possible the frame keeps its original code,
guarded on the types of its arguments. The break is reported either way."""

from __future__ import annotations

import logging
import threading
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import logs as fh_logging
from ..bytecode import Codegen, ControlFlow, Positions, decode, prefix_length, transform_code_object
from ..config import config
from ..guards.contexts import CompileContext, TracingContext
from ..exc import SkipFrame
from ..graph import Graph
from ..guards import GuardKind
from ..guards.sources import LocalSource, Source
from ..translation.base import (
    InstructionTranslatorBase,
    TranslationOutput,
    argument_names,
    call_backend,
    make_output_code,
    source_value,
)
from .breaks import CannotResume, GraphBreak
from .interpreter import FrameTracer, StopTrace
from .rebuild import Rebuilder
from .resume import BreakPlan, BreakSite, break_site, emit_break, frame_label, is_resume_code, statement_site
from .tracer import Tracer
from .values import Cell, Const, DictV, Lazy, ListV, ObjV, Tensor, TupleV, V

__all__ = ["SymbolicTranslator", "FrameReport", "add_observer", "remove_observer", "make_output_code"]

_local = threading.local()
_breaks_log = fh_logging.get_logger("graph_breaks")
_GAVE_UP = "trace_gave_up"  # frame_state key: the reason a trace of this code gave up


@dataclass
class FrameReport:
    """What one translation of one frame produced (for explain())."""

    code: types.CodeType
    graph: Optional[Graph] = None
    graph_break: Optional[GraphBreak] = None
    guards: List[str] = field(default_factory=list)  # as the trace made them (Guard.describe())
    compile_time: float = 0.0
    resume_failure: Optional[str] = None  # why a break did not resume (the frame ran its original code)
    loops: List[Any] = field(default_factory=list)  # symbolic.loops.LoopNote: each loop captured or unrolled
    compile_id: Optional[str] = None  # that of the cache entry made from this translation ("0/1")


def _observers() -> List[Callable[[FrameReport], None]]:
    obs = getattr(_local, "observers", None)
    if obs is None:
        obs = _local.observers = []
    return obs


def add_observer(fn: Callable[[FrameReport], None]) -> None:
    """Call ``fn(report)`` after every translation on this thread."""
    _observers().append(fn)


def observing() -> bool:
    """Does anything watch this thread's translations (explain(), debug tools)?"""
    return bool(_observers())


def remove_observer(fn: Callable[[FrameReport], None]) -> None:
    obs = _observers()
    if fn in obs:
        obs.remove(fn)


class SymbolicTranslator(InstructionTranslatorBase):
    """Captures the whole frame into one graph, or falls back to the original code."""

    def run(self) -> TranslationOutput:
        gave_up = self.frame_state.get(_GAVE_UP)
        if gave_up is not None and not self.one_graph:  # nopython=True still traces and raises
            # a trace of this code already ran out of budget with nothing to show: no retrace
            raise SkipFrame(f"an earlier translation gave up: {gave_up}")
        tctx = TracingContext.get()
        before = tctx.guards_context.copy_graphstate()
        start = time.perf_counter()
        compile_id = CompileContext.current_compile_id()
        report = FrameReport(self.frame.code, compile_id=str(compile_id) if compile_id is not None else None)
        self.whole_statement = False
        try:
            out = self.capture(report)
        except GraphBreak as e:
            report.graph_break = e
            if self.one_graph:
                raise
            tctx.guards_context.restore_graphstate(before)
            out = self.resume_after(report, e)
            if out is None:
                report.graph = None
                report.loops = []
                tctx.guards_context.restore_graphstate(before)
                out = self.fallback()
                out.notes.append(str(e))
            if _gave_up(e) and (out.code is None or self.whole_statement):
                self.frame_state[_GAVE_UP] = e.reason
            _log_break(report, e, self.whole_statement)
        report.compile_time = time.perf_counter() - start
        report.guards = [g.describe() for g in tctx.guards_context.guards.sorted()]
        for fn in list(_observers()):
            fn(report)
        return out

    # ------------------------------------------------------------ resuming after a break
    def resume_after(self, report: FrameReport, e: GraphBreak) -> Optional[TranslationOutput]:
        """Re-trace up to the instruction that broke and emit code that runs the graph, the
        instruction and a resume function (``resume.py``); None when the break cannot resume."""
        if e.break_index is None:
            return None
        refused = getattr(e, "resume_refused", None)
        if refused is not None:
            report.resume_failure = refused
            return None
        code = self.frame.code
        flow = ControlFlow(decode(code))
        try:
            try:
                if getattr(e, "whole_statement", False):
                    raise CannotResume("the break asks for its whole statement")
                site = break_site(code, flow.insts, e.break_index, flow)
            except CannotResume:
                # run the whole statement holding it (a loop, a try/with block) in Python
                site = statement_site(code, flow.insts, e.break_index, flow)
                self.whole_statement = True
            return self.capture(report, stop_at=site)
        except (CannotResume, GraphBreak) as why:
            report.resume_failure = str(why)
            return None

    # ------------------------------------------------------------ capture
    def capture(self, report: FrameReport, stop_at: Optional[BreakSite] = None) -> TranslationOutput:
        frame = self.frame
        code = frame.code
        name = getattr(code, "co_qualname", code.co_name).replace("<", "").replace(">", "").replace(".", "_")
        tracer = Tracer(code, frame.f_globals, frame.f_builtins, self.add_guard, name=name)
        tracer.dynamic_dims = self.source_dynamic_dims
        tracer.dynamic_int = lambda source, value: self.dynamic_int(source.name(), value)
        tracer.unspecialized_int = lambda source: self.unspecialized_int(source.name())
        report.loops = tracer.loop_notes
        values: Dict[Any, Any] = {}
        derefs = set(code.co_cellvars) | set(code.co_freevars)
        locals_: Dict[str, Any] = {}
        cells: Dict[str, Cell] = {}
        for arg in argument_names(code):
            if arg not in frame.f_locals:
                continue
            lazy = Lazy(frame.f_locals[arg], LocalSource(arg, cell_or_freevar=arg in derefs))
            if arg in code.co_cellvars:
                cells[arg] = Cell(lazy)
            else:
                locals_[arg] = lazy
        for cell_name in code.co_cellvars:
            cells.setdefault(cell_name, Cell(None))
        for free in code.co_freevars:
            # a free variable absent from f_locals is an empty cell (a resume function's
            # cell that the frame before the break had not assigned yet)
            value = (
                Lazy(frame.f_locals[free], LocalSource(free, cell_or_freevar=True)) if free in frame.f_locals else None
            )
            cells[free] = Cell(value, external=True)
        root = FrameTracer(tracer, code, frame.f_globals, locals_, cells, None)
        if stop_at is not None:
            tracer.stop_at = stop_at.start
            try:
                root.run()
            except StopTrace:
                return self.output_at_break(tracer, root, stop_at, report)
            raise CannotResume("the trace did not reach the break again")  # pragma: no cover - deterministic
        try:
            result = root.run()
        except GraphBreak as e:
            e.unrolled = sum(root.loop_counts.values())  # loop iterations traced before it (a give-up?)
            raise
        if tracer.side_effects:
            tracer.current = root  # errors name the frame's return line
            try:
                return self.output_with_side_effects(tracer, result, report)
            finally:
                tracer.current = None
        tracer.current = root
        try:
            out = self.output_arg(tracer, result)
        finally:
            tracer.current = None
        graph = tracer.graph
        graph.output(out)
        graph.eliminate_dead_code()
        if graph.operations() or not is_resume_code(code):
            report.graph = graph  # a resume function that only returns values has no graph to show
        from ..bytecode import moves_values_only

        if not graph.operations() and moves_values_only(root.insts):
            # nothing to compute and the code only returns its inputs or constants: keep it, guarded
            # (as Dynamo does); no backend call, output code or extra call per run
            return TranslationOutput(code=None, graphs=[graph], portable=(None, []))
        sources = [tracer.inputs[p] for p in graph.placeholders]
        values = {p: _value_of(s, frame.f_locals, frame.f_globals) for p, s in zip(graph.placeholders, sources)}
        example_inputs = [values[p] for p in graph.placeholders]
        compiled = call_backend(self.compiler_fn, graph, example_inputs)
        new_code = make_output_code(code, compiled, sources)
        return TranslationOutput(code=new_code, graphs=[graph], compiled_fns=[compiled], portable=(graph, sources))

    def output_with_side_effects(self, tracer: Tracer, result: V, report: FrameReport) -> TranslationOutput:
        """Code that runs the graph, replays the side effects in program order and returns."""
        frame = self.frame
        code = frame.code
        graph = tracer.graph
        effects = tracer.side_effects
        effects.install_guards()
        rebuilder = Rebuilder(tracer)
        try:
            rebuilder.collect(result)
        except CannotResume:
            raise tracer.brk("FH008", f"the function returns {result.describe()}") from None
        try:
            effects.collect(rebuilder)
        except CannotResume as why:
            raise tracer.brk("FH006", f"a side effect cannot be replayed: {why}") from None
        graph.output(tuple(rebuilder.outputs))
        graph.eliminate_dead_code()
        if graph.operations() or not is_resume_code(code):
            report.graph = graph
        sources = [tracer.inputs[p] for p in graph.placeholders]
        example_inputs = [_value_of(s, frame.f_locals, frame.f_globals) for s in sources]
        compiled = call_backend(self.compiler_fn, graph, example_inputs)
        run_graph = bool(graph.operations())
        where = Positions(code.co_firstlineno, code.co_firstlineno, None, None)

        def transform(insts: List[Any], opts: Dict[str, Any]) -> None:
            cg = Codegen()
            if run_graph:

                def load_inputs() -> None:
                    for s in sources:
                        s.reconstruct(cg)

                rebuilder.graph_out = "___graph_out"
                cg.call_builtin(compiled, load_inputs, nargs=len(sources))
                cg.emit("STORE_FAST", argval=rebuilder.graph_out)
            rebuilder.emit(cg, result)  # read before any store: it may read a location stored to
            out = rebuilder.temp()
            cg.emit("STORE_FAST", argval=out)
            effects.emit(cg, rebuilder)
            cg.load_fast(out)
            cg.return_value()
            for inst in cg.instructions:
                inst.positions = where
            insts[prefix_length(insts) :] = cg.instructions

        new_code = transform_code_object(code, transform)
        portable = (graph, sources) if run_graph else (None, [])
        return TranslationOutput(code=new_code, graphs=[graph], compiled_fns=[compiled], portable=portable)

    def output_at_break(
        self, tracer: Tracer, root: FrameTracer, site: BreakSite, report: FrameReport
    ) -> TranslationOutput:
        frame = self.frame
        graph = tracer.graph
        stack = list(root.stack)
        locals_ = dict(root.locals)
        compiled: List[Any] = []
        graph_sources: List[Source] = []

        def compile_graph(outputs: List[Any]) -> Optional[Tuple[Any, List[Source]]]:
            graph.output(tuple(outputs))
            graph.eliminate_dead_code()
            if not graph.operations():
                return None
            report.graph = graph
            sources = [tracer.inputs[p] for p in graph.placeholders]
            values = [_value_of(s, frame.f_locals, frame.f_globals) for s in sources]
            compiled.append(call_backend(self.compiler_fn, graph, values))
            graph_sources.extend(sources)
            return compiled[0], sources

        cache = self.frame_state.setdefault("resume_functions", {})
        effects = tracer.side_effects
        effects.install_guards()
        own_cells = {name: c.value for name, c in root.cells.items() if not c.external}
        rebuilder = Rebuilder(tracer)
        rebuilder.cell_names = {id(c): name for name, c in root.cells.items()}
        new_code = emit_break(
            BreakPlan(
                frame.code,
                root.insts,
                site,
                stack,
                locals_,
                rebuilder,
                compile_graph,
                frame.f_globals,
                cache,
                effects,
                own_cells,
            )
        )
        portable = (graph, graph_sources) if compiled else (None, [])
        return TranslationOutput(
            code=new_code, graphs=[graph] if compiled else [], compiled_fns=compiled, portable=portable
        )

    def source_dynamic_dims(self, source: Source, value: np.ndarray) -> Any:
        """Dimensions to leave unspecialized: all with dynamic=True, none with dynamic=False,
        otherwise those that changed between compilations (automatic dynamic shapes)."""
        key = source.local_name if isinstance(source, LocalSource) else source.name()
        return self.dynamic_dims(key, value)

    def output_arg(self, tracer: Tracer, v: V) -> Any:
        """The graph output for the frame's return value."""
        if isinstance(v, Tensor):
            return v.node
        if isinstance(v, Const):
            return v.value
        if isinstance(v, (TupleV, ListV, DictV, ObjV)):
            if v.source is not None:
                # a container the function received: return that very object
                node = tracer.placeholder_for(v.source, None)
                return node
            if isinstance(v, DictV):
                return {k: self.output_arg(tracer, i) for k, i in v.items.items()}
            items = [self.output_arg(tracer, i) for i in v.items]
            return tuple(items) if isinstance(v, TupleV) else items
        raise tracer.brk("FH008", f"the function returns {v.describe()}")

    # ------------------------------------------------------------ fallback
    def fallback(self) -> TranslationOutput:
        """The original code, guarded on the types of the arguments (arrays: dtype, shape...)."""
        code = self.frame.code
        f_locals = self.frame.f_locals
        derefs = set(code.co_cellvars) | set(code.co_freevars)
        first: Dict[int, LocalSource] = {}
        for arg in argument_names(code) + list(code.co_freevars):
            if arg not in f_locals:
                continue
            value = f_locals[arg]
            source = LocalSource(arg, cell_or_freevar=arg in derefs)
            if isinstance(value, np.ndarray):
                if id(value) in first:
                    self.add_guard(source.make_guard(GuardKind.DUPLICATE_INPUT, other=first[id(value)]))
                    continue
                first[id(value)] = source
                dims = self.source_dynamic_dims(source, value)
                self.add_guard(source.make_guard(GuardKind.NDARRAY_MATCH, **({"dynamic_dims": dims} if dims else {})))
            else:
                self.add_guard(source.make_guard(GuardKind.TYPE_MATCH))
        return TranslationOutput(code=None)


def _gave_up(e: GraphBreak) -> bool:
    """Did the trace spend its work for nothing: the trace budget ran out (FH015), or a loop
    was unrolled up to config.max_unrolled_iterations (FH010 after unrolling, not the FH010
    of a loop refused before its first iteration, which costs nothing to find again)?"""
    if e.code == "FH015":
        return True
    return e.code == "FH010" and getattr(e, "unrolled", 0) >= config.max_unrolled_iterations


def _log_break(report: FrameReport, e: GraphBreak, whole_statement: bool) -> None:
    """One line per break under FRAMEHOOK_LOGS=graph_breaks: code, frame, location, reason
    and what runs instead."""
    if not _breaks_log.isEnabledFor(logging.INFO):
        return
    where = f"{e.filename}:{e.lineno}" if e.filename else "an unknown location"
    if report.resume_failure:
        then = f"the frame runs unmodified ({report.resume_failure})"
    elif whole_statement:
        then = "the statement holding it runs in Python, then the rest resumes"
    else:
        then = "the rest resumes after it"
    _breaks_log.info(
        "graph break %s (%s) in %s at %s: %s; %s", e.code, e.kind.title, frame_label(report.code), where, e.reason, then
    )


_value_of = source_value
