"""Python source for the code objects the translator generates: the code that replaces a
frame's body (a graph call, the state rebuilt, side effects replayed, the instructions
that broke, the call of a resume function) and resume functions (a prologue, then the
frame's own code from the break on).

``render_code(code, const_name, resume=...)`` returns a ``Rendered``: ``exact`` when the
text does what the bytecode does, i.e.

* the parts the translator generated are decompiled (``decompile.py``: straight
  line, each expression evaluated where the bytecode evaluates it);
* the parts copied from the user's code (a statement run in Python at a break inside a
  loop or a try block; the rest of the function in a resume function) are the user's own
  source lines (``source_match.py``), kept only when compiling the rendered
  function gives those lines the very instructions the code object runs;
* every name is what it is in the bytecode (a local stays a local, a global a global).

Otherwise the text renders what it can up to a statement boundary, then says in comments
why the rest is not rendered and which lines of the original it comes from.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Set, Tuple

from ..bytecode import ControlFlow, decode, prefix_length
from ..bytecode.instructions import Instruction
from ..bytecode.kinds import Kind
from .decompile import Decompiled, decompile
from .source_match import (
    SourceRun,
    exit_chain,
    flow_signature,
    future_flags,
    module_context,
    region_source,
    remainder_source,
    same_flow,
    source_lines,
)

__all__ = ["Rendered", "render_code", "signature_text"]

_INDENT = "    "
_TRIES = 6
_MAX_EXIT_SEARCH = 400


@dataclass
class Rendered:
    """``text``: a ``def`` (valid Python in every case); ``exact``: it does what the code
    object does; ``how``: one line saying how it was made, or why it is not exact;
    ``origin``: ``file:line: text`` of the user's lines it comes from (or that the part not
    rendered comes from)."""

    text: str
    exact: bool
    how: str
    origin: List[str] = field(default_factory=list)
    future: List[str] = field(default_factory=list)  # ``from __future__`` features to compile it with


def signature_text(code: types.CodeType) -> str:
    n = code.co_argcount
    params = list(code.co_varnames[:n])
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    if code.co_flags & 0x04:  # CO_VARARGS
        params.append("*" + code.co_varnames[n + code.co_kwonlyargcount])
    elif code.co_kwonlyargcount:
        params.append("*")
    params += list(code.co_varnames[n : n + code.co_kwonlyargcount])
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        params.append("**" + code.co_varnames[n + code.co_kwonlyargcount + bool(code.co_flags & 0x04)])
    return ", ".join(params)


def _first_line(flow: ControlFlow, k: int) -> Optional[int]:
    """The line of the first instruction that does something, from ``k`` on."""
    insts = flow.insts
    seen = set()
    while k < len(insts) and k not in seen:
        seen.add(k)
        inst = insts[k]
        # (only a plain NOP: the other no-op kinds carry the line of what they follow)
        if inst.kind == Kind.RESUME or inst.opname == "NOP":
            k += 1
        elif inst.kind == Kind.JUMP and inst.target is not None:
            k = flow.index_of(inst.target)
        else:
            return inst.lineno
    return None


def _reach(flow: ControlFlow, start: int, stop: Optional[int]) -> Optional[Set[int]]:
    """Instructions reachable from ``start`` without passing ``stop``; None if any is
    before ``start`` or after ``stop``."""
    seen = flow.reachable_from(start, stop)
    if any(j < start or (stop is not None and j > stop) for j in seen):
        return None
    return seen


class _Text:
    """The rendered function, line by line, remembering where the source run is."""

    def __init__(self, code: types.CodeType, global_names: Sequence[str]) -> None:
        imports, self.future = module_context(code.co_filename)
        self.flags = future_flags(self.future)
        self.lines = [f"def {code.co_name}({signature_text(code)}):"]
        # compiled with the module's imports in sight, as in the module (never run)
        self.trailer: List[str] = []
        if imports:
            self.trailer = [
                "",
                "",
                "if False:  # never runs: the module's imports, for the function to compile as in its module (3.11+)",
            ] + [f"{_INDENT}{statement}" for statement in imports]
        if global_names:
            self.lines.append(f"{_INDENT}global {', '.join(sorted(global_names))}")
        self.span: Optional[Tuple[int, int]] = None

    def code(self, d: Decompiled, upto: Optional[int] = None) -> None:
        self.lines += d.text(_INDENT, 1, upto).splitlines()

    def source(self, run: SourceRun) -> None:
        first = len(self.lines) + 1
        self.lines += run.text(_INDENT).splitlines()
        self.span = (first, len(self.lines))

    def text(self) -> str:
        return "\n".join(self.lines + self.trailer) + "\n"


def _check(
    text: _Text,
    code: types.CodeType,
    parts: Sequence[Tuple[Decompiled, Optional[int]]],
    flow: ControlFlow,
    start: Optional[int] = None,
    exit_at: Optional[int] = None,
) -> Optional[str]:
    """Why the rendered text does not do what ``code`` does, or None. With a source run:
    ``insts[start:exit_at]`` (to the end without ``exit_at``) are the instructions its
    lines must compile to."""
    try:
        module = compile(text.text(), f"<framehook: {code.co_name}>", "exec", flags=text.flags, dont_inherit=True)
    except SyntaxError as e:
        return f"the rendered text does not compile ({e.msg})"
    fn = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    if fn.co_cellvars or fn.co_freevars:
        return "the rendered function has cells"
    local = set(fn.co_varnames)
    for d, upto in parts:
        fast, glob, derefs = d.names("fast", upto), d.names("globals", upto), d.names("derefs", upto)
        if not fast <= local:
            return f"{', '.join(sorted(fast - local))} would not be local in the rendered function"
        if glob & local:
            return f"{', '.join(sorted(glob & local))} would be local in the rendered function"
        if derefs:
            return f"the code reads or assigns cells ({', '.join(sorted(derefs))})"
    if text.span is None:
        return None
    lo, hi = text.span
    rendered = ControlFlow(decode(fn))
    first = next((k for k, x in enumerate(rendered.insts) if x.lineno is not None and lo <= x.lineno <= hi), None)
    if first is None:
        return "the source lines compile to nothing"

    def inside_rendered(k: int) -> bool:
        line = rendered.insts[k].lineno
        return line is None or lo <= line <= hi

    assert start is not None
    if exit_at is None:
        ours = flow_signature(flow, start, lambda k: True)
        theirs = flow_signature(rendered, first, inside_rendered, lambda k: False)
    else:
        exits = exit_chain(flow, exit_at)
        ours = flow_signature(flow, start, lambda k: start <= k < exit_at, exits.__contains__)
        # the code after the lines (3.10+ may copy a small return block to each way out)
        theirs = flow_signature(
            rendered, first, inside_rendered, lambda k: k >= len(rendered) or (rendered.insts[k].lineno or 0) > hi
        )
    if not same_flow(ours, theirs):
        return "the source lines do not compile to the instructions the code runs"
    return None


def _global_stores(insts: Sequence[Instruction]) -> Set[str]:
    return {x.argval for x in insts if x.kind in (Kind.STORE_GLOBAL, Kind.DELETE_GLOBAL)}


def render_code(code: types.CodeType, const_name: Callable[[Any], str], resume: bool) -> Rendered:
    """``code`` (a generated replacement body, or with ``resume`` a resume function) as Python."""
    flow = ControlFlow(decode(code))
    insts = flow.insts
    start = prefix_length(insts)
    d = decompile(flow, start, const_name=const_name, consts=code.co_consts)
    global_names = sorted(_global_stores(insts) | d.global_stores)
    why: List[str] = []
    if code.co_cellvars or code.co_freevars:
        why.append(
            f"the frame has cell variables ({', '.join(code.co_cellvars + code.co_freevars)}): the cells "
            f"it shares with its closures have no Python source form"
        )
    else:
        attempt = _with_source(code, flow, d, const_name, global_names, resume, why)
        if attempt is not None:
            return attempt
        if d.complete:
            text = _Text(code, global_names)
            text.code(d)
            problem = _check(text, code, [(d, None)], flow)
            if problem is None:
                return Rendered(text.text(), True, "decompiled from the bytecode", future=text.future)
            why.append(problem)
    if not why and d.reason:
        why.append(f"{d.reason}")
    return _partial(code, flow, d, global_names, why)


def _with_source(
    code: types.CodeType,
    flow: ControlFlow,
    d: Decompiled,
    const_name: Callable[[Any], str],
    global_names: Sequence[str],
    resume: bool,
    why: List[str],
) -> Optional[Rendered]:
    """Decompiled code up to a statement boundary, then the user's lines: to the end of the
    function (a resume function), or for a statement followed by generated code that
    calls the next resume function."""
    insts = flow.insts
    if resume:
        for b, n in d.boundaries[:_TRIES]:
            run, reason = remainder_source(code, _first_line(flow, b))
            if run is None:
                why.append(reason)
                continue
            text = _Text(code, global_names)
            text.code(d, n)
            text.source(run)
            problem = _check(text, code, [(d, n)], flow, b)
            if problem is None:
                return Rendered(
                    text.text(),
                    True,
                    _how(d, n, run, "the rest of the function"),
                    source_lines(code.co_filename, run.line_numbers()),
                    text.future,
                )
            why.append(problem)
        return None
    if d.complete or d.stopped_at is None:
        return None
    stuck = d.stopped_at
    tries = 0
    for b, n in reversed([x for x in d.boundaries if x[0] <= stuck]):
        for j in _exits(flow, b, stuck, const_name, code.co_consts):
            tries += 1
            if tries > _TRIES:
                return None
            region = _reach(flow, b, j)
            if region is None:
                continue
            run, reason = region_source(code, [insts[k].lineno for k in region])
            if run is None:
                why.append(reason)
                continue
            tail = (
                decompile(flow, j, const_name=const_name, consts=code.co_consts, temp_prefix="___e")
                if j < len(insts)
                else Decompiled(complete=True)
            )
            text = _Text(code, global_names)
            text.code(d, n)
            text.source(run)
            text.code(tail)
            problem = _check(text, code, [(d, n), (tail, None)], flow, b, j if j < len(insts) else None)
            if problem is None:
                return Rendered(
                    text.text(),
                    True,
                    _how(d, n, run, "a statement run as in the original"),
                    source_lines(code.co_filename, run.line_numbers()),
                    text.future,
                )
            why.append(problem)
    return None


def _exits(flow: ControlFlow, b: int, stuck: int, const_name: Callable[[Any], str], consts: Sequence[Any]) -> List[int]:
    """Where the generated code after a statement copied from the user's code may start:
    code that decompiles to its end, which the statement's instructions only jump to."""
    insts = flow.insts
    out = []
    for j in range(stuck + 1, len(insts) + 1):
        if j < len(insts) and j - stuck > _MAX_EXIT_SEARCH:
            break
        if j < len(insts) and not decompile(flow, j, const_name=const_name, consts=consts, temp_prefix="___e").complete:
            continue
        if _reach(flow, b, j) is not None:
            out.append(j)
            if len(out) == 2:
                break
    return out


def _how(d: Decompiled, n: int, run: SourceRun, what: str) -> str:
    lines = run.line_numbers()
    where = f"lines {lines[0]}-{lines[-1]}" if len(lines) > 1 else f"line {lines[0]}"
    if n:
        return f"decompiled from the bytecode, then {what}: the source of {where}"
    return f"{what}: the source of {where}"


def _partial(
    code: types.CodeType, flow: ControlFlow, d: Decompiled, global_names: Sequence[str], why: List[str]
) -> Rendered:
    """What decompiles, up to the last statement boundary before the first problem; then
    the reason and the user's lines in comments, and a ``raise``."""
    insts = flow.insts
    text = _Text(code, global_names)
    stuck = d.stopped_at if d.stopped_at is not None else len(insts)
    marks = [x for x in d.boundaries if x[0] <= stuck] if not d.complete else d.boundaries[:1]
    b, n = marks[-1] if marks else (prefix_length(insts), 0)
    if code.co_cellvars or code.co_freevars:
        b, n = prefix_length(insts), 0
    text.code(d, n)
    region = flow.reachable_from(b)
    origin = source_lines(code.co_filename, [insts[k].lineno for k in sorted(region)])
    back = [k for k in region if k < b and insts[k].lineno is not None]
    if back and not (code.co_cellvars or code.co_freevars):
        # the rest jumps back before the point reached: it continues inside a loop
        why.insert(
            0,
            f"the code continues inside a loop (it jumps back to line {insts[min(back)].lineno}), "
            f"which no whole statements of the source do",
        )
    reason = _dedupe(why) or "the bytecode has instructions the decompiler does not handle"
    text.lines.append(f"{_INDENT}# NOT RENDERED AS PYTHON from here: {reason}")
    text.lines.append(f"{_INDENT}# (the bytecode listing below is what runs; the instructions come from these lines)")
    text.lines += [f"{_INDENT}#   {line}" for line in origin]
    text.lines.append(f"{_INDENT}raise NotImplementedError('framehook dump: this part is not rendered as Python')")
    return Rendered(text.text(), False, f"not rendered exactly: {reason}", origin, text.future)


def _dedupe(why: List[str]) -> str:
    seen: List[str] = []
    for w in why:
        if w and w not in seen:
            seen.append(w)
    return "; ".join(seen[:3])
