"""The user's own source lines for instructions copied from their code, and the check that
those lines compile to the same instructions.

    run = remainder_source(code, insts[k].lineno)     # statement at that line to the end
    run = region_source(code, lines)                  # the statements spanning these lines
    run.text("    ")                                  # re-indented under a def
    same_flow(sig_a, sig_b)                           # compare flow_signature()s

A ``SourceRun`` is made of whole statements only (nothing else on their first and last
lines). ``flow_signature`` describes instructions as a graph (what each does, where each
goes next, on a jump and on an exception), with no-ops and unconditional jumps skipped and
the forms one compiler writes differently from another (3.13's paired loads, 3.11's
forward/backward jumps) made equal: two regions with the same signature run the same
operations in the same order.
"""

from __future__ import annotations

import __future__
import ast
import dis
import io
import linecache
import tokenize
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from ..bytecode.cfg import ControlFlow
from ..bytecode.kinds import Kind
from ..bytecode.opcodes import NO_OPS, has_arg
from ..bytecode.instructions import Instruction

__all__ = [
    "SourceRun",
    "exit_chain",
    "flow_signature",
    "function_node",
    "future_flags",
    "module_context",
    "region_source",
    "remainder_source",
    "same_flow",
    "source_lines",
]

_HASCONST = frozenset(dis.hasconst)
_HASNAME = frozenset(dis.hasname) | frozenset(dis.haslocal) | frozenset(dis.hasfree)


@dataclass
class SourceRun:
    """Consecutive whole statements of one block, possibly followed by the statements after
    each enclosing ``if`` (a remainder leaving an if's body continues after the ``if``)."""

    filename: str
    # (first line, last line, indentation of the first line) of each block's statements
    spans: List[Tuple[int, int, str]] = field(default_factory=list)

    def lines(self) -> List[Tuple[int, str]]:
        """(line number, text with the block's indentation removed)."""
        out: List[Tuple[int, str]] = []
        for first, last, indent in self.spans:
            inside_string = _string_continuations(self.filename, first, last)
            for n in range(first, last + 1):
                text = linecache.getline(self.filename, n).rstrip("\n").rstrip("\r")
                if n in inside_string:
                    out.append((n, "\0" + text))  # kept as it is, in column 0
                elif not text.strip():
                    out.append((n, ""))
                elif text.startswith(indent):
                    out.append((n, text[len(indent) :]))
                else:
                    out.append((n, "\0" + text))  # a bracket continuation: its indentation is free
        return out

    def text(self, indent: str) -> str:
        return "".join((t[1:] if t.startswith("\0") else (indent + t if t else "")) + "\n" for _, t in self.lines())

    def line_numbers(self) -> List[int]:
        return [n for first, last, _ in self.spans for n in range(first, last + 1)]


def _string_continuations(filename: str, first: int, last: int) -> set:
    """Lines in ``first..last`` that start inside a string literal (their text is the string's)."""
    text = "".join(linecache.getline(filename, n) for n in range(first, last + 1))
    inside = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                for row in range(tok.start[0] + 1, tok.end[0] + 1):
                    inside.add(first + row - 1)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the statements' lines alone may not tokenize (a dedent); the compile check decides
    return inside


_TREES: Dict[str, Tuple[Tuple[int, int], Optional[ast.AST]]] = {}


def _module_tree(filename: str) -> Optional[ast.AST]:
    lines = linecache.getlines(filename)
    if not lines:
        return None
    key = (len(lines), hash("".join(lines)))
    cached = _TREES.get(filename)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        tree: Optional[ast.AST] = ast.parse("".join(lines), filename)
    except (SyntaxError, ValueError):
        tree = None
    _TREES[filename] = (key, tree)
    return tree


def module_context(filename: str) -> Tuple[List[str], List[str]]:
    """What compiling a function depends on in its module besides the function: the
    statements by which the module binds names with ``import`` (3.11+ load their
    attributes without LOAD_METHOD), one name each, as written (``import numpy as np``),
    and its ``from __future__`` features."""
    tree = _module_tree(filename)
    if tree is None:
        return [], []
    names: Dict[str, str] = {}
    features: List[str] = []
    todo: List[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # their imports are their own
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            features += [a.name for a in node.names if getattr(__future__, a.name, None) is not None]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            where = "" if isinstance(node, ast.Import) else f"from {'.' * node.level}{node.module or ''} "
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                if name != "*" and name not in names:
                    names[name] = f"{where}import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
    return [names[n] for n in sorted(names)], sorted(set(features))


def future_flags(features: Sequence[str]) -> int:
    flags = 0
    for name in features:
        flags |= getattr(getattr(__future__, name, None), "compiler_flag", 0)
    return flags


def function_node(code: types.CodeType) -> Optional[ast.AST]:
    """The ``def`` of ``code`` in its file's current source, or None."""
    tree = _module_tree(code.co_filename)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first == code.co_firstlineno:
                return node
    return None


def _bodies(node: ast.AST) -> List[List[ast.stmt]]:
    out = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            out.append(value)
    for handler in getattr(node, "handlers", []) or []:
        out.append(handler.body)
    for case in getattr(node, "cases", []) or []:
        out.append(case.body)
    return out


def _alone(filename: str, stmt: ast.stmt, first: bool) -> bool:
    """Nothing but whitespace (or a comment) shares the statement's first or last line."""
    if first:
        line = linecache.getline(filename, stmt.lineno).encode("utf-8")
        return not line[: stmt.col_offset].strip()
    line = linecache.getline(filename, stmt.end_lineno or stmt.lineno).encode("utf-8")
    rest = line[stmt.end_col_offset or 0 :].strip()
    return not rest or rest.startswith(b"#")


def _indent(filename: str, stmt: ast.stmt) -> str:
    return linecache.getline(filename, stmt.lineno).encode("utf-8")[: stmt.col_offset].decode("utf-8")


def _span(filename: str, stmts: Sequence[ast.stmt]) -> Optional[Tuple[int, int, str]]:
    if not _alone(filename, stmts[0], True) or not _alone(filename, stmts[-1], False):
        return None
    return stmts[0].lineno, stmts[-1].end_lineno or stmts[-1].lineno, _indent(filename, stmts[0])


def remainder_source(code: types.CodeType, line: Optional[int]) -> Tuple[Optional[SourceRun], str]:
    """The statement starting at ``line`` and everything the function runs after it, as
    source (the statements after it in its block, then after each enclosing ``if``), or
    None and why not."""
    if line is None:
        return None, "the instruction has no line number"
    fn = function_node(code)
    if fn is None:
        return None, f"the source of {code.co_name} is not available"
    # the chain of blocks from the function body down to the statement
    chain: List[Tuple[ast.AST, List[ast.stmt], int]] = []

    def find(node: ast.AST, bodies: List[List[ast.stmt]]) -> bool:
        for body in bodies:
            for i, stmt in enumerate(body):
                if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                    chain.append((node, body, i))
                    if stmt.lineno == line:
                        return True
                    return find(stmt, _bodies(stmt))
        return False

    if not find(fn, [fn.body]):  # type: ignore[attr-defined]
        return None, f"no statement starts at line {line}"
    run = SourceRun(code.co_filename)
    for depth in range(len(chain) - 1, -1, -1):
        parent, body, i = chain[depth]
        if depth > 0 and not isinstance(parent, ast.If):
            kind = type(parent).__name__.lower()
            return None, f"line {line} is inside a {kind} statement (it would continue back into it)"
        rest = body[i:] if depth == len(chain) - 1 else body[i + 1 :]
        if not rest:
            continue
        span = _span(code.co_filename, rest)
        if span is None:
            return None, f"another statement shares a line with lines {rest[0].lineno}-{rest[-1].end_lineno}"
        run.spans.append(span)
    if not run.spans:
        return None, f"no statement starts at line {line}"
    # the statements of one block come out at one indentation: an inner block's
    # remainder followed by an outer one's is one block under the def
    return run, ""


def region_source(code: types.CodeType, lines: Sequence[int]) -> Tuple[Optional[SourceRun], str]:
    """The fewest consecutive whole statements of one block spanning ``lines``."""
    lines = [n for n in lines if n is not None]
    if not lines:
        return None, "the instructions have no line numbers"
    lo, hi = min(lines), max(lines)
    fn = function_node(code)
    if fn is None:
        return None, f"the source of {code.co_name} is not available"
    best: Optional[List[ast.stmt]] = None
    todo: List[List[ast.stmt]] = [fn.body]  # type: ignore[attr-defined]
    while todo:
        body = todo.pop()
        inside = [s for s in body if (s.end_lineno or s.lineno) >= lo and s.lineno <= hi]
        if not inside:
            continue
        if inside[0].lineno <= lo and (inside[-1].end_lineno or inside[-1].lineno) >= hi:
            best = inside  # a deeper block that still spans them replaces it
            if len(inside) == 1:
                todo += _bodies(inside[0])
    if best is None:
        return None, f"lines {lo}-{hi} are not whole statements of one block"
    span = _span(code.co_filename, best)
    if span is None:
        return None, f"another statement shares a line with lines {best[0].lineno}-{best[-1].end_lineno}"
    return SourceRun(code.co_filename, [span]), ""


def source_lines(filename: str, lines: Sequence[int]) -> List[str]:
    """``file:line: text`` for each line (deduplicated, in order)."""
    out = []
    for n in sorted(set(n for n in lines if n is not None)):
        out.append(f"{filename}:{n}: {linecache.getline(filename, n).rstrip()}")
    return out


# ------------------------------------------------------------------ same instructions
def _const_key(value: Any) -> Any:
    if isinstance(value, types.CodeType):
        return (
            "code",
            value.co_code,
            value.co_names,
            value.co_varnames,
            value.co_freevars,
            value.co_cellvars,
            value.co_argcount,
            value.co_posonlyargcount,
            value.co_kwonlyargcount,
            value.co_flags,
            tuple(_const_key(c) for c in value.co_consts),
        )
    if type(value) in (tuple, frozenset):
        return (type(value).__name__, tuple(_const_key(v) for v in value))
    if value is None or type(value) in (int, float, complex, str, bytes, bool) or value is Ellipsis:
        return (type(value).__name__, repr(value))
    return ("object", id(value))


#: instructions after which control does not go on to the next one
_TERMINAL = frozenset({Kind.RETURN, Kind.RETURN_CONST, Kind.RAISE, Kind.RERAISE})
#: two-local instructions: the kinds of the two one-local accesses each stands for
_HALVES = {
    Kind.LOAD_LOCAL_PAIR: (Kind.LOAD_LOCAL, Kind.LOAD_LOCAL),
    Kind.STORE_LOCAL_PAIR: (Kind.STORE_LOCAL, Kind.STORE_LOCAL),
    Kind.STORE_LOAD_LOCAL: (Kind.STORE_LOCAL, Kind.LOAD_LOCAL),
}


def _label(inst: Instruction, kind: str, argval: Any) -> Tuple[Any, ...]:
    """What ``inst`` does (``kind``: its kind, or that of one half of a paired access)."""
    name: Any = inst.opname
    if kind in (Kind.LOAD_LOCAL, Kind.STORE_LOCAL):
        name = kind  # checked and borrowed loads load the same; halves match single accesses
    elif kind == Kind.BRANCH:
        name = (kind, inst.condition, inst.keeps_operand)  # either direction
    if inst.opcode in _HASCONST:
        return (name, _const_key(argval))
    if inst.opcode in _HASNAME:
        return (name, argval, inst.flags)
    if inst.target is not None:
        return (name,)
    if has_arg(inst.opcode):
        return (name, inst.arg)
    return (name,)


def flow_signature(
    flow: ControlFlow, start: int, inside: Callable[[int], bool], exits: Optional[Callable[[int], bool]] = None
) -> Optional[List[Tuple[Any, ...]]]:
    """What the instructions reachable from ``start`` do, node by node in a fixed walk
    order: (label, successors, exception handler). Leaving the region (``inside`` false)
    is "exit" where ``exits`` holds (anywhere, when ``exits`` is None); anywhere else, the
    signature is None."""
    insts = flow.insts

    def transparent(k: int) -> bool:
        inst = insts[k]
        return inst.opname in NO_OPS or (inst.kind == Kind.JUMP and inst.target is not None)

    def resolve(k: int) -> Any:
        seen = set()
        while True:
            if k >= len(insts) or not inside(k):
                return "exit" if exits is None or exits(k) else "outside"
            if not transparent(k):
                return k
            if k in seen:
                return "spin"
            seen.add(k)
            target = flow.target(k)
            k = target if target is not None else k + 1

    def successors(k: int) -> List[Any]:
        inst = insts[k]
        succ = []
        if inst.kind not in _TERMINAL and inst.kind != Kind.JUMP:
            succ.append(resolve(k + 1))
        target = flow.target(k)
        if target is not None:
            succ.append(resolve(target))
        return succ

    first = resolve(start)
    if not isinstance(first, int):
        return None
    # depth first, successors in order: next, jump target, exception handler
    numbers: Dict[int, int] = {}
    visit: List[int] = []
    todo = [first]
    while todo:
        k = todo.pop()
        if k in numbers:
            continue
        numbers[k] = len(visit)
        visit.append(k)
        succ = successors(k)
        handler = flow.handler(k)
        if handler is not None:
            succ.append(resolve(handler))
        if "outside" in succ:
            return None
        todo.extend(reversed([s for s in succ if isinstance(s, int)]))
    nodes: List[Tuple[Any, ...]] = []
    for k in visit:
        inst = insts[k]
        refs = tuple(numbers[s] if isinstance(s, int) else s for s in successors(k))
        exn = None
        if inst.exn_tab_entry is not None:
            e = inst.exn_tab_entry
            h = resolve(flow.handler(k))  # type: ignore[arg-type]
            exn = (numbers[h] if isinstance(h, int) else h, e.depth, e.lasti)
        pair = _HALVES.get(inst.kind)
        if pair is not None:
            a, b = inst.argval
            nodes.append((_label(inst, pair[0], a) + ("+",) + _label(inst, pair[1], b), refs, exn))
        else:
            nodes.append((_label(inst, inst.kind, inst.argval), refs, exn))
    return nodes


def exit_chain(flow: ControlFlow, k: int) -> Set[int]:
    """``k`` and the instructions an unconditional jump or no-op at ``k`` leads on to."""
    insts = flow.insts
    out: Set[int] = set()
    while k < len(insts) and k not in out:
        out.add(k)
        inst = insts[k]
        if inst.opname in NO_OPS:
            k += 1
        elif inst.kind == Kind.JUMP and inst.target is not None:
            k = flow.index_of(inst.target)
        else:
            break
    return out


def same_flow(a: Optional[List[Tuple[Any, ...]]], b: Optional[List[Tuple[Any, ...]]]) -> bool:
    """Two flow signatures describe the same operations (paired loads split on both sides)."""
    if a is None or b is None:
        return False
    return _normalise(a) == _normalise(b)


def _normalise(sig: List[Tuple[Any, ...]]) -> List[Any]:
    # renumber after splitting: a pair becomes two nodes, the second holding the successors
    starts: List[int] = []
    n = 0
    for label, _, _ in sig:
        starts.append(n)
        n += 2 if "+" in label else 1
    out: List[Any] = []
    for label, refs, exn in sig:
        new_refs = tuple(starts[r] if isinstance(r, int) else r for r in refs)
        new_exn = None if exn is None else ((starts[exn[0]] if isinstance(exn[0], int) else exn[0]),) + exn[1:]
        if "+" in label:
            cut = label.index("+")
            out.append((label[:cut], (len(out) + 1,), new_exn))
            out.append((label[cut + 1 :], new_refs, new_exn))
        else:
            out.append((label, new_refs, new_exn))
    return out
