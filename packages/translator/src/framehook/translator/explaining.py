"""``explain(fn)(*args, **kwargs)``: what the translator captures of a call.

    out = explain(step)(x, 0.1)
    out.graph_count, out.graph_break_count
    out.break_reasons[0].code, .reason, .filename, .lineno
    out.guards[0], .frame, .guard   # "TYPE_MATCH(L['k']): type(L['k']) is int", in frame "step"
    print(out)                      # graphs, breaks with hints, op counts, guards, compile times

The call runs once under ``optimize(backend)`` (default "eager") with every cache entry set aside, so every
frame it reaches is translated afresh and reported; afterwards the entries it made are dropped
and those set aside come back (on each function's next call, with no retranslation), so
functions compiled before keep their cache. When the call raises, the exception propagates
with the report attached as ``exc.explain_output``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ._runtime import runtime
from .config import config
from .graph import Graph
from .conversion.set_aside import set_aside
from .symbolic import BREAKS, FrameReport, add_observer, remove_observer
from .symbolic.resume import frame_label

__all__ = ["explain", "ExplainOutput", "BreakReason", "ExplainedGuard"]


class ExplainedGuard(str):
    """One guard of a translated frame, as text: ``KIND(source)`` and what it checks, the
    conditions of the cache entry's check function as ``debug.dump`` and ``last_decisions``
    write them (``NDARRAY_MATCH(L['x']): type(L['x']) is numpy.ndarray and ... and
    L['x'].shape == (3, 4) and ...``). A str, with ``frame`` (the function or resume function
    it guards, as ``frame_label`` names it), ``guard`` (the ``Guard``, or None when the entry
    was not found) and ``conditions``."""

    frame: str
    guard: Any
    conditions: List[str]

    def __new__(
        cls, text: str = "", frame: str = "", guard: Any = None, conditions: Optional[List[str]] = None
    ) -> "ExplainedGuard":
        self = super().__new__(cls, text)
        self.frame = frame
        self.guard = guard
        self.conditions = list(conditions or [])
        return self


@dataclass
class BreakReason:
    """One graph break: its identifier, why, and where in the user's code."""

    code: str
    reason: str
    filename: Optional[str]
    lineno: Optional[int]
    function: str

    @property
    def hint(self) -> str:
        return BREAKS[self.code].hint

    def __str__(self) -> str:
        where = f"{self.filename}:{self.lineno}" if self.filename else "<unknown location>"
        return f"{self.code} in {self.function} at {where}: {self.reason}"


@dataclass
class ExplainOutput:
    graphs: List[Graph] = field(default_factory=list)
    break_reasons: List[BreakReason] = field(default_factory=list)
    ops_per_graph: List[Dict[str, int]] = field(default_factory=list)
    guards: List[str] = field(default_factory=list)  # ExplainedGuard: readable, with its frame
    compile_times: List[float] = field(default_factory=list)
    frames: List[FrameReport] = field(default_factory=list)
    loops: List[Any] = field(default_factory=list)  # one LoopNote per loop met: captured, or unrolled and why
    # what a compiling backend did with each graph (backends.numba.NumbaNote: compiled, with
    # its numba time, or a FH016 fallback and why); compile_times are the tracing times
    backend_notes: List[Any] = field(default_factory=list)
    result: Any = None

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    @property
    def op_count(self) -> int:
        return sum(sum(ops.values()) for ops in self.ops_per_graph)

    @property
    def compile_time(self) -> float:
        return sum(self.compile_times)

    def __str__(self) -> str:
        lines = [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Op count: {self.op_count}",
            f"Compile time: {self.compile_time * 1e3:.2f} ms",
            "",
        ]
        if self.break_reasons:
            lines.append("Break reasons:")
            for i, b in enumerate(self.break_reasons, 1):
                lines.append(f"  {i}. {b}")
                lines.append(f"     hint: {b.hint}")
            lines.append("")
        for i, (g, ops) in enumerate(zip(self.graphs, self.ops_per_graph), 1):
            lines.append(f"Graph {i}: " + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))
            lines += ["  " + line for line in str(g).splitlines()]
            lines.append("")
        if self.loops:
            lines.append("Loops:")
            lines += [f"  {note}" for note in self.loops]
            lines.append("")
        if self.backend_notes:
            lines.append("Backend notes:")
            lines += [f"  {note}" for note in self.backend_notes]
            lines.append("")
        if self.guards:
            lines.append("Guards:")
            frame = None
            for guard in self.guards:
                where = getattr(guard, "frame", None)
                if where != frame and where is not None:
                    lines.append(f"  {where}:")
                    frame = where
                lines.append(f"    {guard}" if frame is not None else f"  {guard}")
        return "\n".join(lines).rstrip() + "\n"


def explain(fn: Callable[..., Any], backend: Any = "eager") -> Callable[..., ExplainOutput]:
    """A callable that runs ``fn(*args, **kwargs)`` under the translator and reports
    the graphs, graph breaks, op counts, guards and compile time (``.result`` holds the
    return value). ``backend`` compiles the graphs (default ``"eager"``); with ``"numba"``
    the report's ``backend_notes`` say which graphs numba compiled, in how long, and which
    fell back to eager (FH016) and why."""
    if not callable(fn):
        raise TypeError(f"explain() expects a callable, got {type(fn).__name__}")
    from .eval_frame import innermost_fn, optimize

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        reports: List[FrameReport] = []
        kept = _set_aside_caches()  # every frame the call reaches is translated afresh
        add_observer(reports.append)
        error: Optional[BaseException] = None
        result = None
        check_fns: Dict[str, Any] = {}
        notes: List[Any] = []
        from .backends import numba as backends_numba

        backends_numba.add_note_observer(notes.append)
        try:
            # compiled in the call, not in the background: the report says what each graph became
            with config.patch(numba_background=False):
                result = optimize(backend)(innermost_fn(fn))(*args, **kwargs)
        except Exception as e:
            error = e
        finally:
            remove_observer(reports.append)
            backends_numba.remove_note_observer(notes.append)
            for seen in {id(r.code): r.code for r in reports}.values():
                for entry in runtime.cache_entries(seen):
                    check_fns[getattr(entry.check_fn, "compile_id", "")] = entry.check_fn
            _restore_caches(kept, [r.code for r in reports])
        out = _summarize(reports, result, check_fns)
        out.backend_notes = notes
        if error is not None:
            error.explain_output = out  # type: ignore[attr-defined]
            raise error
        return out

    return run


def _known_codes() -> List[Any]:
    from .conversion.convert_frame import input_codes, skipped_codes

    return list({id(c): c for c in input_codes.live() + skipped_codes.live()}.values())


def _set_aside_caches() -> Dict[int, Any]:
    """Drop every cache entry, frame_state and skip mark the translator made, keeping them
    (``set_aside``) to be given back when explain() is done."""
    from .conversion.convert_frame import compile_lock

    kept: Dict[int, Any] = {}
    with compile_lock:
        earlier = set_aside.drain()  # still kept from an earlier explain(): not given back during this one
        for code in _known_codes():
            entries = [(e.code, e.check_fn) for e in runtime.cache_entries(code)]
            state = runtime.frame_state(code)
            if id(code) in earlier:
                _, old_entries, old_state = earlier.pop(id(code))
                entries += old_entries
                state = {**(old_state or {}), **(state or {})}
            kept[id(code)] = (code, entries, state, runtime.is_skipped(code))
            runtime.reset_code(code)
        for key, (code, old_entries, old_state) in earlier.items():
            kept[key] = (code, old_entries, old_state, False)
    return kept


def _restore_caches(kept: Dict[int, Any], reached: List[Any]) -> None:
    """Drop what explain() made (entries, skip marks) and give back what was there before:
    skip marks at once, cache entries on each code's next cache miss."""
    from .conversion.convert_frame import compile_lock

    with compile_lock:
        for code in list({id(c): c for c in _known_codes() + reached}.values()):
            if id(code) not in kept:
                runtime.reset_code(code)
        for code, entries, state, skipped in kept.values():
            runtime.reset_code(code)
            if skipped:
                runtime.skip_code(code)
            else:
                set_aside.put(code, entries, state)


def _summarize(reports: List[FrameReport], result: Any, check_fns: Optional[Dict[str, Any]] = None) -> ExplainOutput:
    out = ExplainOutput(result=result, frames=reports)
    shown: Dict[str, set] = {}
    for r in reports:
        out.compile_times.append(r.compile_time)
        frame = frame_label(r.code)
        seen = shown.setdefault(frame, set())
        for g in _frame_guards(r, (check_fns or {}).get(r.compile_id or ""), frame):
            if g not in seen:  # the same guard from another compilation of the frame
                seen.add(g)
                out.guards.append(g)
        out.loops.extend(r.loops)
        if r.graph is not None:
            out.graphs.append(r.graph)
            out.ops_per_graph.append(r.graph.op_counts())
        if r.graph_break is not None:
            b = r.graph_break
            out.break_reasons.append(
                BreakReason(b.code, b.reason, b.filename, b.lineno, getattr(r.code, "co_qualname", r.code.co_name))
            )
    return out


def _frame_guards(report: FrameReport, check_fn: Any, frame: str) -> List[ExplainedGuard]:
    """The guards of the cache entry made from ``report``, each with the conditions its check
    function tests (``check_fn.code_parts``); the trace's own list when the entry is gone."""
    parts = getattr(check_fn, "code_parts", None)
    owners = getattr(check_fn, "code_part_guards", None)
    if parts is None or owners is None:
        return [ExplainedGuard(text, frame) for text in report.guards]
    by_guard: Dict[int, List[str]] = {}
    order: List[Any] = []
    for guard, part in zip(owners, parts):
        if id(guard) not in by_guard:
            by_guard[id(guard)] = []
            order.append(guard)
        by_guard[id(guard)].append(part)
    return [
        ExplainedGuard(f"{g.describe()}: " + " and ".join(by_guard[id(g)]), frame, g, by_guard[id(g)]) for g in order
    ]
