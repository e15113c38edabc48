"""Graph -> one straight-line Python function.

Operators are written infix (``x + y``, ``x[1:, None]``), numpy functions and other
targets are bound as globals of the generated function under readable names
(``numpy_exp``), constants that have no literal spelling likewise. The function has no
loop and no per-node dispatch: it runs at the speed of the same numpy calls written out
by hand.

The compiled function reports the user's locations, so warnings, warning filters and
tracebacks see what they would in the plain function: its code is in the user's file
(``graph.meta["filename"]``), each statement on the user's line of the node it computes,
and its globals carry the user's ``__name__`` (and share the module's
``__warningregistry__``). A node recorded inside an inlined call into another file is
reported at that call's line in the graph's file (``Location.frame_lineno``); a node without
a location, a ``del`` and the ``return`` keep the line before them. A single-use result is
written inside its user's expression (numpy then reuses its memory, as in plain Python),
across as many generated lines as the user's statement has.
"""

from __future__ import annotations

import itertools
import linecache
import marshal
import operator
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..bytecode.linetable import relocate
from .ir import Graph, Node, NodeKind, format_arg, target_name, writes_as_literal
from .loop import WhileLoop, is_loop

__all__ = [
    "GraphCodegenError",
    "python_code",
    "compile_graph",
    "forward_state",
    "forward_from_state",
    "render_arg",
    "replace_call",
    "BINARY_OPS",
    "UNARY_OPS",
    "INPLACE_OPS",
]


class GraphCodegenError(ValueError):
    """The graph cannot be written as Python (malformed arguments, no output)."""


BINARY_OPS: Dict[Any, str] = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.floordiv: "//",
    operator.mod: "%",
    operator.pow: "**",
    operator.matmul: "@",
    operator.and_: "&",
    operator.or_: "|",
    operator.xor: "^",
    operator.lshift: "<<",
    operator.rshift: ">>",
    operator.lt: "<",
    operator.le: "<=",
    operator.gt: ">",
    operator.ge: ">=",
    operator.eq: "==",
    operator.ne: "!=",
}
INPLACE_OPS: Dict[Any, str] = {
    operator.iadd: "+=",
    operator.isub: "-=",
    operator.imul: "*=",
    operator.itruediv: "/=",
    operator.ifloordiv: "//=",
    operator.imod: "%=",
    operator.ipow: "**=",
    operator.imatmul: "@=",
    operator.iand: "&=",
    operator.ior: "|=",
    operator.ixor: "^=",
    operator.ilshift: "<<=",
    operator.irshift: ">>=",
}
UNARY_OPS: Dict[Any, str] = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}

_counter = itertools.count()

#: generated statements as (text, the user's line or None)
_Lines = List[Tuple[str, Optional[int]]]
_Where = Callable[[Node], Optional[int]]


def _main_file(graph: Graph) -> Optional[str]:
    """The file the graph's function reports: its frame's, else that of its first located node."""
    filename = graph.meta.get("filename")
    if isinstance(filename, str):
        return filename
    for node in graph.nodes:
        stack = node.meta.get("stack")
        if stack:
            return stack[0]
    return None


def _line_finder(main_file: Optional[str]) -> _Where:
    def where(node: Node) -> Optional[int]:
        stack = node.meta.get("stack")
        if not stack or main_file is None:
            return None
        if stack[0] == main_file:
            return stack[1]
        # an inlined call into another file: the line of the call in the graph's file
        return getattr(stack, "frame_lineno", None)

    return where


class _Names:
    """Globals of the generated function: one readable, unique name per bound object."""

    def __init__(self) -> None:
        self.globals: Dict[str, Any] = {}
        self._by_id: Dict[int, str] = {}
        self._vars: Dict[Node, str] = {}
        self._taken: set = set()

    def fresh(self, base: str) -> str:
        """A local name no node uses (the exit flag of a loop)."""
        name, n = base, 1
        while name in self._taken:
            n += 1
            name = f"{base}_v{n}"
        self._taken.add(name)
        return name

    def var(self, node: Node) -> str:
        """The local variable holding ``node``'s value: its name, made unique across the
        graph and the bodies of its loops (which may come from different graphs)."""
        name = self._vars.get(node)
        if name is None:
            name, n = node.name, 1
            while name in self._taken:
                n += 1
                name = f"{node.name}_v{n}"
            self._taken.add(name)
            self._vars[node] = name
        return name

    def bind(self, obj: Any, hint: str) -> str:
        key = id(obj)
        name = self._by_id.get(key)
        if name is not None:
            return name
        base = "".join(c if c.isalnum() else "_" for c in hint).strip("_") or "c"
        name = f"__{base}"
        n = 1
        while name in self.globals:
            n += 1
            name = f"__{base}_{n}"
        self.globals[name] = obj
        self._by_id[key] = name
        return name


def render_arg(arg: Any, names: Any) -> str:
    """Python source for an argument. ``names`` is a ``_Names`` (binding non-literals) or a
    plain dict (for display: what ``ir.format_arg`` shows, non-literals by repr)."""
    if not isinstance(names, _Names):
        return format_arg(arg)
    if isinstance(arg, Node):
        return names.var(arg)
    t = type(arg)
    if t is tuple:
        inner = ", ".join(render_arg(a, names) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if t is list:
        return "[" + ", ".join(render_arg(a, names) for a in arg) + "]"
    if t is dict:
        return "{" + ", ".join(f"{render_arg(k, names)}: {render_arg(v, names)}" for k, v in arg.items()) + "}"
    if t is slice and any(isinstance(p, Node) for p in (arg.start, arg.stop, arg.step)):
        return f"slice({render_arg(arg.start, names)}, {render_arg(arg.stop, names)}, {render_arg(arg.step, names)})"
    if writes_as_literal(arg):
        return "..." if arg is Ellipsis else repr(arg)
    return names.bind(arg, _hint(arg))


def _slice_text(s: slice, names: Any) -> str:
    parts = ["" if s.start is None else render_arg(s.start, names), "" if s.stop is None else render_arg(s.stop, names)]
    if s.step is not None:
        parts.append(render_arg(s.step, names))
    return ":".join(parts)


def _hint(obj: Any) -> str:
    if isinstance(obj, slice):
        return "slice"
    if callable(obj) and hasattr(obj, "__name__"):
        return target_name(obj).replace(".", "_")
    return type(obj).__name__


def _index_text(idx: Any, names: _Names) -> str:
    """``x[...]`` subscript text: slices as ``a:b:c``, tuples without parentheses."""

    def one(i: Any) -> str:
        if type(i) is slice:
            return _slice_text(i, names)
        return render_arg(i, names)

    if type(idx) is tuple and idx:
        return ", ".join(one(i) for i in idx) + ("," if len(idx) == 1 else "")
    return one(idx)


def _loop_statements(node: Node, names: _Names, where: _Where) -> _Lines:
    """A loop node as a Python ``for`` loop around its body's statements."""
    loop = node.target
    line = where(node)
    start, stop, step, carried, invariants = node.args
    lines = [
        (f"{names.var(ph)} = {render_arg(arg, names)}", line)
        for ph, arg in zip(loop.carried + loop.invariants, list(carried) + list(invariants))
    ]
    bounds = ", ".join(render_arg(b, names) for b in (start, stop, step))
    lines.append((f"for {names.var(loop.index)} in range({bounds}):", line))
    body = _body_lines(loop.body, names, where)
    out = loop.body.output_node.args[0]
    if loop.exits:
        flag = names.fresh("exit_now")
        targets = ", ".join([names.var(ph) for ph in loop.carried] + [flag])
        body.append((f"{targets}, = {render_arg(out, names)}", None))
        body.append((f"if {flag}:", None))
        body.append(("    break", None))
    elif loop.carried:
        targets = ", ".join(names.var(ph) for ph in loop.carried)
        body.append((f"{targets}, = {render_arg(out, names)}", None))
    lines += [(f"    {text}", at) for text, at in body or [("pass", None)]]
    result = ", ".join(names.var(ph) for ph in loop.carried)
    lines.append((f"{names.var(node)} = ({result}{',' if loop.carried else ''})", line))
    return lines


def _while_statements(node: Node, names: _Names, where: _Where) -> _Lines:
    """A while-loop node as a Python ``while`` loop testing the carried condition."""
    loop = node.target
    line = where(node)
    cond, carried, invariants = node.args
    heads = [loop.condition] + loop.carried + loop.invariants
    lines = [
        (f"{names.var(ph)} = {render_arg(arg, names)}", line)
        for ph, arg in zip(heads, [cond] + list(carried) + list(invariants))
    ]
    test = names.var(loop.condition)
    lines.append((f"while {test if loop.repeat_when else 'not ' + test}:", line))
    body = _body_lines(loop.body, names, where)
    targets = ", ".join(names.var(ph) for ph in loop.carried + [loop.condition])
    body.append((f"{targets}, = {render_arg(loop.body.output_node.args[0], names)}", None))
    lines += [(f"    {text}", at) for text, at in body]
    result = ", ".join(names.var(ph) for ph in loop.carried)
    lines.append((f"{names.var(node)} = ({result}{',' if loop.carried else ''})", line))
    return lines


def _expression(node: Node, names: _Names) -> Optional[str]:
    """The node as one expression, for the kinds that can be one (None: loops, stores,
    in-place operators)."""
    a = node.args
    kw = node.kwargs
    if node.kind is NodeKind.GETATTR:
        return f"{render_arg(a[0], names)}.{node.target}"
    target = node.target
    if _statement_only(node):
        return None
    params = [render_arg(x, names) for x in (a[1:] if node.kind is NodeKind.CALL_METHOD else a)]
    params += [f"{k}={render_arg(v, names)}" for k, v in kw.items()]
    if node.kind is NodeKind.CALL_METHOD:
        return f"{render_arg(a[0], names)}.{node.target}({', '.join(params)})"
    if not kw:
        if target in BINARY_OPS and len(a) == 2:
            return f"{params[0]} {BINARY_OPS[target]} {params[1]}"
        if target in UNARY_OPS and len(a) == 1:
            return f"{UNARY_OPS[target]}{params[0]}"
        if target is operator.getitem and len(a) == 2:
            return f"{params[0]}[{_index_text(a[1], names)}]"
    return f"{names.bind(target, _hint(target))}({', '.join(params)})"


def _statement(node: Node, names: _Names, where: _Where, line: Optional[int]) -> _Lines:
    """The node's statements, on the user's ``line``."""
    a = node.args
    var = names.var(node)
    target = node.target
    if node.kind is NodeKind.CALL and not node.kwargs:
        if type(target) is WhileLoop and len(a) == 3:
            return _while_statements(node, names, where)
        if is_loop(target) and len(a) == 5:
            return _loop_statements(node, names, where)
        params = [render_arg(x, names) for x in a]
        if target in INPLACE_OPS and len(a) == 2:
            return [(f"{var} = {params[0]}", line), (f"{var} {INPLACE_OPS[target]} {params[1]}", line)]
        if target is operator.setitem and len(a) == 3:
            stmts = [(f"{params[0]}[{_index_text(a[1], names)}] = {params[2]}", line)]
            return stmts + ([(f"{var} = None", line)] if node.users else [])
    return _spread(var, str(_expression(node, names)), line)


def _foldable(node: Node) -> bool:
    """Can the node's expression be written inside its only user's? (An intermediate
    without a name has one reference, so numpy can reuse its memory for the next
    operation, as it does for ``a * x + b`` in plain Python.)"""
    if (
        node.kind not in (NodeKind.CALL, NodeKind.CALL_METHOD, NodeKind.GETATTR)
        or node.impure
        or len(node.users) != 1
        or _statement_only(node)
    ):
        return False
    user = next(iter(node.users))
    return user.kind is not NodeKind.OUTPUT and user.inputs().count(node) == 1


def _folds_into(node: Node) -> bool:
    """Does the node evaluate its inputs in the order they appear (so folded expressions
    run in the order their statements had)? Not stores (``x[i] = v`` evaluates ``v``
    first), in-place operators or loops."""
    return node.kind in (NodeKind.CALL, NodeKind.CALL_METHOD, NodeKind.GETATTR) and not _statement_only(node)


def _statement_only(node: Node) -> bool:
    """Loops, stores and in-place operators: written as statements, never inside an expression."""
    return node.kind is NodeKind.CALL and (
        is_loop(node.target) or node.target is operator.setitem or node.target in INPLACE_OPS
    )


def _source(graph: Graph, names: _Names, fn_name: str, where: _Where) -> Tuple[str, List[Optional[int]]]:
    """The function's source, and the user's line of each of its lines (None: the line before)."""
    if graph.output_node is None:
        raise GraphCodegenError(f"graph {graph.name} has no output node")
    args = ", ".join(names.var(n) for n in graph.placeholders)
    lines: _Lines = [(f"def {fn_name}({args}):", None)]
    lines += [(f"    {text}", line) for text, line in _body_lines(graph, names, where)]
    lines.append((f"    return {render_arg(graph.output_node.args[0], names)}", None))
    return "\n".join(text for text, _ in lines) + "\n", [line for _, line in lines]


def _body_lines(graph: Graph, names: _Names, where: _Where) -> _Lines:
    """The statements of every operation (not the placeholders, not the output)."""
    # free each intermediate right after its last use, as plain Python code would: keeping
    # every temporary alive to the end costs memory traffic on large arrays
    last_use: Dict[Node, Node] = {}
    for node in graph.nodes:
        for inp in node.inputs():
            last_use[inp] = node
    dying: Dict[Node, List[Node]] = {}
    for value, user in last_use.items():
        if user.kind is not NodeKind.OUTPUT and value.kind is not NodeKind.PLACEHOLDER:
            dying.setdefault(user, []).append(value)
    lines: _Lines = []
    folded: set = set()
    pending: List[Node] = []  # foldable nodes not written yet, in graph order
    text: Dict[Node, str] = {}  # each pending expression, its folded parts marked (_mark)
    start: Dict[Node, Optional[int]] = {}  # the user's line of each expression's first token
    spans: Dict[Node, set] = {}  # every user line inside each expression
    depth: Dict[Node, int] = {}  # how many folds deep each pending expression is
    # consecutive nodes under the same numpy.errstate settings are one ``with`` block; nothing
    # folds across its edge (an expression runs under the settings of the statement holding it)
    block: List[Any] = [None, 0]  # the open block's settings, and how many lines it has

    def write(node: Node, stmts: _Lines) -> None:
        pad = "    " if block[0] else ""
        lines.extend((pad + t, at) for t, at in stmts)
        gone = [v for v in dying.get(node, ()) if v not in folded]
        if gone:
            lines.append((f"{pad}del {', '.join(names.var(v) for v in gone)}", None))
        block[1] += 1

    def flush(upto: int) -> None:
        for p in pending[:upto]:
            write(p, _spread(names.var(p), text[p], start[p]))
        del pending[:upto]

    def open_block(settings: Any, at: Optional[int]) -> None:
        if block[0] and not block[1]:  # pragma: no cover - every node is written in its block
            lines.append(("    pass", None))
        block[0], block[1] = settings, 0
        if settings:
            kwargs = ", ".join(f"{k}={v!r}" for k, v in sorted(settings.items()))
            lines.append((f"with {names.bind(_np_errstate(), 'numpy_errstate')}({kwargs}):", at))

    for node in graph.nodes:
        if node.kind in (NodeKind.PLACEHOLDER, NodeKind.OUTPUT):
            continue
        settings = node.meta.get("errstate") or None
        if settings != block[0]:
            flush(len(pending))
            open_block(settings, where(node))
        waiting = set(pending)
        uses = [n for n in node.inputs() if n in waiting]
        at = start[node] = where(node)
        spans[node] = {at} - {None}
        size = _fold_size(node, uses, pending, start, spans, depth) if uses and _folds_into(node) else 0
        tail = pending[len(pending) - size :] if size else []
        # an expression that frees a named value is a statement of its own, followed by the
        # ``del``: folded, it would keep that value alive through its user's operations
        frees = any(v not in folded and v not in tail for v in dying.get(node, ()))
        foldable = _foldable(node) and not frees
        if size:
            del pending[len(pending) - size :]
            if not foldable:
                flush(len(pending))
            for p in tail:  # the user's statement evaluates them in their original order
                names._vars[p] = f"{_mark(start[p])}({text[p]})"
                folded.add(p)
                spans[node] |= spans[p]
                dying.setdefault(node, []).extend(dying.pop(p, []))
            depth[node] = 1 + max(depth.get(p, 0) for p in tail)
            lead = _leading_operand(node)
            if lead in tail and start[lead] is not None:
                start[node] = start[lead]  # the operation is reported where its expression starts
        elif uses or not foldable:
            # what the node reads is written first; a pure expression it does not read can
            # wait for its own user (a slice between two links of a chain of additions)
            flush(len(pending) if not foldable else 1 + max(pending.index(u) for u in uses))
        if foldable:
            expr = _expression(node, names)
            if expr is not None:
                text[node] = expr
                pending.append(node)
                continue
        write(node, _statement(node, names, where, start[node]))
    flush(len(pending))
    return lines


# A folded expression is written on the user's lines of its parts: an operation is reported
# at the line of its expression's first token (every CPython from 3.9 agrees), so each
# folded operand starts on a line of its own, mapped to its user's line.
_MARK, _END = "\x00", "\x01"  # never in generated text: repr() escapes both


def _mark(line: Optional[int]) -> str:
    """Where a folded operand's text starts: on a line mapped to ``line`` (None: anywhere)."""
    return "" if line is None else f"{_MARK}{line}{_END}"


def _spread(var: str, expr: str, at: Optional[int]) -> _Lines:
    """``var = expr`` as generated lines: a new line wherever a marked part is on another user line."""
    if _MARK not in expr:
        return [(f"{var} = {expr}", at)]
    out: List[List[Any]] = [["", at]]
    for i, chunk in enumerate(expr.split(_MARK)):
        if i:
            number, chunk = chunk.split(_END, 1)
            if int(number) != out[-1][1]:
                out[-1][0] = out[-1][0].rstrip()
                out.append(["    ", int(number)])
        out[-1][0] += chunk
    if len(out) == 1:
        return [(f"{var} = {out[0][0]}", at)]
    out[0][0] = f"{var} = ({out[0][0]}"  # a line break needs brackets around it
    out[-1][0] += ")"
    return [(t, line) for t, line in out]


def _leading_operand(node: Node) -> Optional[Node]:
    """The operand whose text starts the node's expression (``a`` in ``a + b``, ``a[i]``,
    ``a.m()``); None where the operation's own token comes first (calls, ``-a``)."""
    a = node.args
    if not a or not isinstance(a[0], Node):
        return None
    if node.kind in (NodeKind.GETATTR, NodeKind.CALL_METHOD):
        return a[0]
    infix = node.target in BINARY_OPS or node.target is operator.getitem
    return a[0] if node.kind is NodeKind.CALL and not node.kwargs and len(a) == 2 and infix else None


#: folds nested deeper than this are cut by a statement: each fold opens up to three
#: brackets, and Python's tokenizer refuses more than 200 nested ones
MAX_FOLD_DEPTH = 32


def _fold_size(
    node: Node,
    uses: List[Node],
    pending: List[Node],
    start: Dict[Node, Optional[int]],
    spans: Dict[Node, set],
    depth: Dict[Node, int],
) -> int:
    """How many of the last pending expressions fold into ``node``: all used by it, in the
    order it evaluates them (so the folded code runs in the order of the statements), with
    every operation still on its user's line, and not nested past ``MAX_FOLD_DEPTH``."""
    at = start[node]
    lead = _leading_operand(node)
    # where a method call or attribute is reported differs across versions on several lines
    one_line = node.kind in (NodeKind.GETATTR, NodeKind.CALL_METHOD)
    for size in range(min(len(uses), len(pending)), 0, -1):
        tail = pending[len(pending) - size :]
        if [u for u in uses if u in tail] != tail or max(depth.get(p, 0) for p in tail) >= MAX_FOLD_DEPTH:
            continue
        if lead in tail and None not in (start[lead], at) and start[lead] != at:
            continue
        if one_line and len(set(spans[node]).union(*(spans[p] for p in tail))) > 1:
            continue
        return size
    return 0


def replace_call(lines: List[str], obj: Any, names: _Names, write: Callable[[str, str], List[str]]) -> None:
    """Replace the statement ``var = <obj>(args)`` written for a node whose target is
    ``obj`` by ``write(var, args)``'s lines, at its indentation, and unbind ``obj``: how a
    pass writes such nodes as other code (the numba backend's loop nests, index checks)."""
    bound = names._by_id.get(id(obj))
    if bound is None:
        return
    head = f" = {bound}("
    for i, line in enumerate(lines):
        if head in line and line.rstrip().endswith(")"):
            pad = line[: len(line) - len(line.lstrip())]
            args = line[line.index(head) + len(head) : line.rstrip().rindex(")")]
            lines[i] = "\n".join(pad + t for t in write(line.strip().split(" = ")[0], args))
            break
    del names.globals[bound]


def _np_errstate() -> Any:
    import numpy

    return numpy.errstate


def python_code(graph: Graph) -> str:
    """The source of the function ``compile_graph`` builds (globals shown as ``__name``)."""
    return _source(graph, _Names(), "forward", _line_finder(_main_file(graph)))[0]


def _no_hook(code: Any) -> None:
    pass


# The generated function runs numpy directly: the frame hook must leave it alone. What tells
# the hook so (the runtime's ``skip_code``) is handed in by ``_runtime`` when the translator
# loads the runtime (set_never_intercept): graph/ itself needs no runtime.
_never_intercept: Callable[[Any], None] = _no_hook


def set_never_intercept(skip_code: Callable[[Any], None]) -> None:
    """Call ``skip_code`` on the code of every function ``compile_graph`` makes from now on."""
    global _never_intercept
    _never_intercept = skip_code


def _user_scope(graph: Graph, scope: Dict[str, Any]) -> None:
    """The user's module name (warning filters match it) and warning registry (a warning
    shown once per location is shown once, whether the plain or the compiled code raised it)."""
    user = graph.meta.get("globals")
    if not isinstance(user, dict):
        return
    if isinstance(user.get("__name__"), str):
        scope["__name__"] = user["__name__"]
    registry = user.get("__warningregistry__")
    if registry is None:
        registry = user["__warningregistry__"] = {}  # what the module's first warning would create
    if isinstance(registry, dict):
        scope["__warningregistry__"] = registry


def compile_graph(graph: Graph) -> Callable[..., Any]:
    """Compile the graph into a Python function taking its placeholders in order."""
    names = _Names()
    main_file = _main_file(graph)
    src, user_lines = _source(graph, names, "forward", _line_finder(main_file))
    filename = f"<framehook graph {graph.name} #{next(_counter)}>"
    scope: Dict[str, Any] = dict(names.globals)
    scope["__builtins__"] = __builtins__
    _user_scope(graph, scope)
    exec(compile(src, filename, "exec"), scope)  # noqa: S102 - source we generated
    fn = scope["forward"]
    located = [line for line in user_lines if line is not None]
    if main_file is not None and located:
        first = graph.meta.get("firstlineno")
        first = first if isinstance(first, int) else min(located)
        fn.__code__ = relocate(
            fn.__code__, lambda n: user_lines[n - 1] if n <= len(user_lines) else None, main_file, first
        )
    else:
        # nothing to point at: tracebacks through the graph show its own source lines
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return _finish(fn, f"{graph.name}.forward", src, names.globals)


def _finish(fn: Any, qualname: str, src: str, names: Dict[str, Any]) -> Any:
    _never_intercept(fn.__code__)
    fn.framehook_untraced = True
    fn.__qualname__ = qualname
    fn.graph_source = src
    fn.framehook_names = names  # the objects its source names (forward_state)
    return fn


def forward_state(fn: Any) -> Optional[Tuple[bytes, Dict[str, Any], str, str]]:
    """What rebuilds a compiled graph function in another process without writing and
    compiling its source again: its code (marshal), the objects the source names, the
    source and the qualified name; None for a function ``compile_graph`` did not make."""
    names = getattr(fn, "framehook_names", None)
    if names is None:
        return None
    return marshal.dumps(fn.__code__), dict(names), fn.graph_source, fn.__qualname__


def forward_from_state(graph: Graph, state: Tuple[bytes, Dict[str, Any], str, str]) -> Callable[..., Any]:
    """The function ``forward_state`` describes, in the scope ``compile_graph`` gives it."""
    code_bytes, names, src, qualname = state
    code = marshal.loads(code_bytes)
    scope: Dict[str, Any] = dict(names)
    scope["__builtins__"] = __builtins__
    _user_scope(graph, scope)
    if code.co_filename.startswith("<framehook graph"):
        linecache.cache[code.co_filename] = (len(src), None, src.splitlines(True), code.co_filename)
    return _finish(types.FunctionType(code, scope, "forward"), qualname, src, names)
