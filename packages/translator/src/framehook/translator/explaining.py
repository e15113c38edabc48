"""``explain(fn)(*args, **kwargs)``: what the translator captures of a call.

    out = explain(step)(x, 0.1)
    out.graph_count, out.graph_break_count
    out.break_reasons[0].code, .reason, .filename, .lineno
    out.guards[0], .frame, .guard   # "TYPE_MATCH(L['k']): type(L['k']) is int", in frame "step"
    print(out)                      # graphs, breaks with hints, op counts, guards, compile times

The call runs once under ``optimize("eager")`` after ``reset()`` (as Dynamo's explain does),
so every frame it reaches is translated and reported; the entries it made are dropped afterwards. When the call raises,
the exception propagates with the report attached as ``exc.explain_output``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ._runtime import runtime
from .graph import Graph
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

    def __new__(cls, text: str = "", frame: str = "", guard: Any = None,
                conditions: Optional[List[str]] = None) -> "ExplainedGuard":
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
    guards: List[str] = field(default_factory=list)   # ExplainedGuard: readable, with its frame
    compile_times: List[float] = field(default_factory=list)
    frames: List[FrameReport] = field(default_factory=list)
    loops: List[Any] = field(default_factory=list)   # one LoopNote per loop met: captured, or unrolled and why
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
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.op_count}", f"Compile time: {self.compile_time * 1e3:.2f} ms", ""]
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
        if self.guards:
            lines.append("Guards:")
            frame = None
            for g in self.guards:
                where = getattr(g, "frame", None)
                if where != frame and where is not None:
                    lines.append(f"  {where}:")
                    frame = where
                lines.append(f"    {g}" if frame is not None else f"  {g}")
        return "\n".join(lines).rstrip() + "\n"


def explain(fn: Callable[..., Any]) -> Callable[..., ExplainOutput]:
    """A callable that runs ``fn(*args, **kwargs)`` under the translator and reports
    the graphs, graph breaks, op counts, guards and compile time (``.result`` holds the
    return value)."""
    if not callable(fn):
        raise TypeError(f"explain() expects a callable, got {type(fn).__name__}")
    from .eval_frame import innermost_fn, optimize, reset

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        reports: List[FrameReport] = []
        reset()   # as Dynamo's explain: every frame the call reaches is translated afresh
        add_observer(reports.append)
        error: Optional[BaseException] = None
        result = None
        try:
            result = optimize("eager")(innermost_fn(fn))(*args, **kwargs)
        except Exception as e:
            error = e
        finally:
            remove_observer(reports.append)
            check_fns: Dict[str, Any] = {}
            for seen in {id(r.code): r.code for r in reports}.values():
                for entry in runtime.cache_entries(seen):
                    check_fns[getattr(entry.check_fn, "compile_id", "")] = entry.check_fn
                runtime.reset_code(seen)
        out = _summarize(reports, result, check_fns)
        if error is not None:
            error.explain_output = out  # type: ignore[attr-defined]
            raise error
        return out

    return run


def _summarize(reports: List[FrameReport], result: Any, check_fns: Optional[Dict[str, Any]] = None) -> ExplainOutput:
    out = ExplainOutput(result=result, frames=reports)
    shown: Dict[str, set] = {}
    for r in reports:
        out.compile_times.append(r.compile_time)
        frame = frame_label(r.code)
        seen = shown.setdefault(frame, set())
        for g in _frame_guards(r, (check_fns or {}).get(r.compile_id or ""), frame):
            if g not in seen:   # the same guard from another compilation of the frame
                seen.add(g)
                out.guards.append(g)
        out.loops.extend(r.loops)
        if r.graph is not None:
            out.graphs.append(r.graph)
            out.ops_per_graph.append(r.graph.op_counts())
        if r.graph_break is not None:
            b = r.graph_break
            out.break_reasons.append(BreakReason(b.code, b.reason, b.filename, b.lineno,
                                                 getattr(r.code, "co_qualname", r.code.co_name)))
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
    return [ExplainedGuard(f"{g.describe()}: " + " and ".join(by_guard[id(g)]), frame, g, by_guard[id(g)])
            for g in order]
