"""Nodes and graphs.

A graph is a list of nodes in execution order. Node kinds:

* ``placeholder``: an input (``target`` is the input's name);
* ``call``: ``target(*args, **kwargs)`` for a function object (numpy function, ufunc, operator);
* ``call_method``: ``args[0].<target>(*args[1:], **kwargs)``;
* ``getattr``: ``args[0].<target>``;
* ``output``: the graph's result, ``args[0]``: a node, a constant, or tuples/lists/dicts of them.

Arguments hold nodes, constants, and tuples/lists/dicts/slices of those. Each node has a
``meta`` dict: ``val`` (an ``ArrayMeta``/``ScalarMeta`` or None), ``stack`` (the user's
location as ``(filename, lineno, function name)``), ``impure`` (True for nodes that
mutate their arguments; dead-code elimination keeps those) and ``cannot_raise`` (True for
an operation whose target may raise in general but not here, like reading ``x.shape[0]``
of an array whose ndim is guarded: dead-code elimination may drop it) and ``errstate`` (a
dict of ``numpy.errstate`` keyword arguments the operation runs under, from a captured
``with np.errstate(...)`` block: code generation and the interpreter apply it; nodes get
it from ``Graph.errstate`` while it is set; dead-code elimination keeps such a call unless
the settings, over the caller's, ignore every kind of error: it would raise or warn).

A graph's ``meta`` may name the frame it was captured from: ``filename`` and
``firstlineno`` of its code and its ``globals``. The compiled function then reports the
user's file, lines and module (``pysource.compile_graph``).

This module imports no other of the package. The code generator (``pysource.py``) is
handed in by the package's ``__init__`` (``set_code_generator``), so that ``Graph.forward``
and ``Graph.python_code`` work without the data model importing its compiler; loop targets
(``loop.py``) derive from ``LoopTarget``.
"""

from __future__ import annotations

import collections
import enum
import math
import operator
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

__all__ = [
    "NodeKind",
    "Node",
    "Graph",
    "Location",
    "LoopTarget",
    "map_arg",
    "target_name",
    "format_arg",
    "writes_as_literal",
    "display_name",
    "set_code_generator",
    "IMPURE_TARGETS",
]


class Location(tuple):
    """A node's ``meta["stack"]``: ``(filename, lineno, function name)``, a plain tuple to
    compare and unpack, plus ``frame_lineno``: the line the graph's own frame was at when
    the node was recorded (inside an inlined call, the line of that call; None if unknown)."""

    frame_lineno: Optional[int]

    def __new__(cls, filename: str, lineno: Optional[int], name: str, frame_lineno: Optional[int] = None) -> "Location":
        self = tuple.__new__(cls, (filename, lineno, name))
        self.frame_lineno = frame_lineno
        return self

    def __reduce__(self) -> Any:
        return (Location, (*self, self.frame_lineno))


class NodeKind(str, enum.Enum):
    PLACEHOLDER = "placeholder"
    CALL = "call"
    CALL_METHOD = "call_method"
    GETATTR = "getattr"
    OUTPUT = "output"


#: call targets that mutate an argument in place
IMPURE_TARGETS = frozenset(
    {
        operator.setitem,
        operator.delitem,
        operator.iadd,
        operator.isub,
        operator.imul,
        operator.itruediv,
        operator.ifloordiv,
        operator.imod,
        operator.ipow,
        operator.imatmul,
        operator.iand,
        operator.ior,
        operator.ixor,
        operator.ilshift,
        operator.irshift,
    }
)
IMPURE_METHODS = frozenset({"fill", "sort", "put", "itemset", "resize", "setfield", "partition"})
# Operations that can raise (ZeroDivisionError, IndexError, OverflowError, ValueError on a
# negative shift...): Python raises even when the result goes unused, so dead-code
# elimination must keep them. (Found by fuzz/run.py: an unused `0 % p` vanished.)
MAY_RAISE_TARGETS = frozenset(
    {
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.pow,
        divmod,
        operator.lshift,
        operator.rshift,
        operator.getitem,
        pow,
        int,
        float,
    }
)
# numpy.linalg raises LinAlgError on singular or non-converging input (inv, solve, eigh,
# cholesky, svd...), whether or not the result is used
_MAY_RAISE_MODULES = frozenset({"numpy.linalg"})


def may_raise(node: "Node") -> bool:
    """Does dead-code elimination have to keep this call although its value is unused?"""
    errstate = node.meta.get("errstate")
    if errstate and node.kind in (NodeKind.CALL, NodeKind.CALL_METHOD):
        # in a captured errstate block the plain code raises FloatingPointError or warns
        # (under the block's settings over the caller's, which the guards keep) even when
        # the value goes unused (found by fuzz/run.py's errstate programs)
        settings = dict(np.geterr(), **errstate)
        if any(mode != "ignore" for mode in settings.values()):
            return True
    if node.kind is not NodeKind.CALL or node.meta.get("cannot_raise"):
        return False
    target = node.target
    try:
        if target in MAY_RAISE_TARGETS:
            return True
    except TypeError:  # an unhashable callable object
        pass
    return getattr(target, "__module__", None) in _MAY_RAISE_MODULES


def target_name(target: Any) -> str:
    """``numpy.add``, ``operator.getitem``, ``numpy.linalg.norm``: readable names of targets."""
    if isinstance(target, str):
        return target
    own = getattr(target, "graph_target_name", None)
    if isinstance(own, str):
        return own
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None) or type(target).__name__
    if module is None and type(target).__name__ == "ufunc":
        module = "numpy"
    if module in (None, "builtins"):
        return name
    if module.startswith("numpy"):
        # numpy.core.xxx / numpy._core.fromnumeric: show the public spelling
        import numpy as np

        if getattr(np, name, None) is target:
            return f"numpy.{name}"
        for sub in ("linalg", "fft", "random"):
            if getattr(getattr(np, sub), name, None) is target:
                return f"numpy.{sub}.{name}"
    if module == "_operator":
        module = "operator"
    return f"{module}.{name}"


def map_arg(arg: Any, fn: Callable[["Node"], Any]) -> Any:
    """Apply ``fn`` to every node inside ``arg`` (tuples, lists, dicts, slices), rebuilding them."""
    if isinstance(arg, Node):
        return fn(arg)
    t = type(arg)
    if t is tuple:
        return tuple(map_arg(a, fn) for a in arg)
    if t is list:
        return [map_arg(a, fn) for a in arg]
    if t is dict:
        return {k: map_arg(v, fn) for k, v in arg.items()}
    if t is slice:
        return slice(map_arg(arg.start, fn), map_arg(arg.stop, fn), map_arg(arg.step, fn))
    return arg


def _nodes_in(arg: Any, out: List["Node"]) -> None:
    """The nodes inside ``arg``, in ``map_arg``'s order, without rebuilding the containers."""
    if isinstance(arg, Node):
        out.append(arg)
        return
    t = type(arg)
    if t is tuple or t is list:
        for a in arg:
            _nodes_in(a, out)
    elif t is dict:
        for a in arg.values():
            _nodes_in(a, out)
    elif t is slice:
        _nodes_in(arg.start, out)
        _nodes_in(arg.stop, out)
        _nodes_in(arg.step, out)


def writes_as_literal(value: Any) -> bool:
    """Whether generated code (and a listing) writes ``value`` as a Python literal."""
    if value is None or value is Ellipsis or isinstance(value, (bool, str, bytes)):
        return True
    if type(value) is int:
        return value.bit_length() < 10_000  # repr() refuses ints of more than 4300 digits: bind those
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is complex:
        return math.isfinite(value.real) and math.isfinite(value.imag)
    return False


def display_name(arg: Any) -> str:
    """A short name for an object that is no literal: a target's name, or its (cut) repr."""
    if callable(arg) and hasattr(arg, "__name__"):
        return target_name(arg)
    text = repr(arg)
    return text if len(text) <= 60 else text[:57] + "..."


def format_arg(arg: Any) -> str:
    """An argument as a listing shows it (``Node.format``): nodes by name, slices as
    ``a:b:c``, literals as Python, other objects by ``display_name``. ``pysource.render_arg``
    writes arguments as the generated code's source."""
    if isinstance(arg, Node):
        return arg.name
    t = type(arg)
    if t is tuple:
        inner = ", ".join(format_arg(a) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if t is list:
        return "[" + ", ".join(format_arg(a) for a in arg) + "]"
    if t is dict:
        return "{" + ", ".join(f"{format_arg(k)}: {format_arg(v)}" for k, v in arg.items()) + "}"
    if t is slice:
        parts = ["" if arg.start is None else format_arg(arg.start), "" if arg.stop is None else format_arg(arg.stop)]
        if arg.step is not None:
            parts.append(format_arg(arg.step))
        return ":".join(parts)
    if writes_as_literal(arg):
        return "..." if arg is Ellipsis else repr(arg)
    return display_name(arg)


class LoopTarget:
    """Base of the targets of loop nodes (``loop.Loop``, ``loop.WhileLoop``): a call of one
    runs a body graph repeatedly, and is impure when the body is (``impure``)."""

    impure: bool


class Node:
    """One operation of a graph."""

    __slots__ = ("graph", "name", "kind", "target", "args", "kwargs", "meta", "users")

    def __init__(
        self, graph: "Graph", name: str, kind: NodeKind, target: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]
    ) -> None:
        self.graph = graph
        self.name = name
        self.kind = kind
        self.target = target
        self.args = args
        self.kwargs = kwargs
        self.meta: Dict[str, Any] = {}
        self.users: Dict["Node", None] = {}

    def inputs(self) -> List["Node"]:
        found: List[Node] = []
        _nodes_in(self.args, found)
        _nodes_in(self.kwargs, found)
        return found

    @property
    def impure(self) -> bool:
        if self.meta.get("impure"):
            return True
        if self.kind is NodeKind.CALL:
            if self.target in IMPURE_TARGETS or "out" in self.kwargs:
                return True
            return isinstance(self.target, LoopTarget) and self.target.impure
        if self.kind is NodeKind.CALL_METHOD:
            return self.target in IMPURE_METHODS or "out" in self.kwargs
        return False

    def format(self) -> str:
        """One line: ``t3: float64(4, 3) = call numpy.exp(t2)  # file.py:12 in f``."""
        val = self.meta.get("val")
        head = f"{self.name}: {val}" if val is not None else self.name
        if self.kind is NodeKind.PLACEHOLDER:
            body = f"placeholder {self.target}"
        elif self.kind is NodeKind.OUTPUT:
            body = f"output {format_arg(self.args[0])}"
        elif self.kind is NodeKind.GETATTR:
            body = f"getattr {format_arg(self.args[0])}.{self.target}"
        else:
            parts = [format_arg(a) for a in self.args]
            parts += [f"{k}={format_arg(v)}" for k, v in self.kwargs.items()]
            name = self.target if self.kind is NodeKind.CALL_METHOD else target_name(self.target)
            body = f"{self.kind.value} {name}({', '.join(parts)})"
        text = f"{head} = {body}"
        errstate = self.meta.get("errstate")
        if errstate:
            text += "  [errstate " + ", ".join(f"{k}={v}" for k, v in sorted(errstate.items())) + "]"
        stack = self.meta.get("stack")
        if stack:
            filename, lineno, fname = stack
            text += f"  # {filename.rsplit('/', 1)[-1]}:{lineno} in {fname}"
        return text

    def __repr__(self) -> str:
        return self.name


class Graph:
    """An ordered list of nodes with one output node."""

    def __init__(self, name: str = "graph", names_from: Optional["Graph"] = None) -> None:
        self.name = name
        self.nodes: List[Node] = []
        # a loop body shares its enclosing graph's names, so listings never show one name twice
        self._names: collections.Counter = names_from._names if names_from is not None else collections.Counter()
        self._forward: Optional[Callable[..., Any]] = None
        self.meta: Dict[str, Any] = {}
        # the numpy.errstate settings of the operations added now (a captured errstate block)
        self.errstate: Optional[Dict[str, str]] = None

    # ---- construction
    def _fresh(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "v"
        if base[0].isdigit():
            base = "_" + base
        n = self._names[base]
        self._names[base] += 1
        return base if n == 0 and base not in _RESERVED else f"{base}_{n + 1}"

    def _add(
        self,
        kind: NodeKind,
        target: Any,
        args: Tuple[Any, ...],
        kwargs: Dict[str, Any],
        name: str,
        meta: Any = None,
        stack: Any = None,
    ) -> Node:
        if self.nodes and self.nodes[-1].kind is NodeKind.OUTPUT:
            raise ValueError("the graph already has its output node")
        node = Node(self, self._fresh(name), kind, target, tuple(args), dict(kwargs))
        node.meta["val"] = meta
        if stack is not None:
            node.meta["stack"] = stack
        if self.errstate and kind not in (NodeKind.PLACEHOLDER, NodeKind.OUTPUT):
            node.meta["errstate"] = dict(self.errstate)
        for inp in node.inputs():
            if inp.graph is not self:
                raise ValueError(f"node {inp.name} belongs to another graph")
            inp.users[node] = None
        self.nodes.append(node)
        self._forward = None
        return node

    def placeholder(self, name: str, meta: Any = None) -> Node:
        """A new input, placed after the existing inputs (before every operation)."""
        node = self._add(NodeKind.PLACEHOLDER, name, (), {}, name, meta)
        self.nodes.pop()
        self.nodes.insert(len(self.placeholders), node)
        return node

    def call(
        self,
        target: Callable[..., Any],
        args: Tuple[Any, ...] = (),
        kwargs: Optional[Dict[str, Any]] = None,
        *,
        meta: Any = None,
        stack: Any = None,
    ) -> Node:
        if not callable(target):
            raise TypeError(f"call target must be callable, got {type(target).__name__}")
        name = getattr(target, "__name__", "call")
        return self._add(NodeKind.CALL, target, args, kwargs or {}, name, meta, stack)

    def call_method(
        self,
        method: str,
        args: Tuple[Any, ...],
        kwargs: Optional[Dict[str, Any]] = None,
        *,
        meta: Any = None,
        stack: Any = None,
    ) -> Node:
        if not method.isidentifier() or not args:
            raise ValueError("call_method needs a method name and the object as first argument")
        return self._add(NodeKind.CALL_METHOD, method, args, kwargs or {}, method, meta, stack)

    def getattr(self, obj: Any, attr: str, *, meta: Any = None, stack: Any = None) -> Node:
        if not attr.isidentifier():
            raise ValueError(f"{attr!r} is not an attribute name")
        return self._add(NodeKind.GETATTR, attr, (obj,), {}, attr, meta, stack)

    def output(self, value: Any) -> Node:
        return self._add(NodeKind.OUTPUT, "output", (value,), {}, "output")

    # ---- queries
    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def placeholders(self) -> List[Node]:
        return [n for n in self.nodes if n.kind is NodeKind.PLACEHOLDER]

    @property
    def output_node(self) -> Optional[Node]:
        return self.nodes[-1] if self.nodes and self.nodes[-1].kind is NodeKind.OUTPUT else None

    def operations(self) -> List[Node]:
        return [n for n in self.nodes if n.kind not in (NodeKind.PLACEHOLDER, NodeKind.OUTPUT)]

    def op_counts(self) -> Dict[str, int]:
        """Operations by target name, e.g. ``{"numpy.exp": 1, "operator.truediv": 1}``."""
        counts: Dict[str, int] = collections.Counter()
        for n in self.operations():
            key = f".{n.target}" if n.kind in (NodeKind.CALL_METHOD, NodeKind.GETATTR) else target_name(n.target)
            counts[key] += 1
            body = getattr(n.target, "body", None) if n.kind is NodeKind.CALL else None
            if isinstance(body, Graph):
                counts.update(body.op_counts())  # a loop's body counts once, as in its code
        return dict(counts)

    def eliminate_dead_code(self) -> int:
        """Remove pure operations that cannot raise and whose value nobody uses; returns how
        many were removed."""
        removed = 0
        for node in reversed(list(self.nodes)):
            if node.kind in (NodeKind.PLACEHOLDER, NodeKind.OUTPUT) or node.users or node.impure:
                continue
            if may_raise(node):
                continue
            for inp in node.inputs():
                inp.users.pop(node, None)
            self.nodes.remove(node)
            removed += 1
        if removed:
            self._forward = None
        return removed

    # ---- pickling (the translation cache): the compiled forward is rebuilt on demand, and
    # the frame's globals (meta "globals": warnings' module name and registry) are the
    # loading frame's, given to bind_globals
    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_forward"] = None
        if self._forward is not None:  # its code, where writing and compiling it took 0.5-2 ms
            state["_forward_state"] = _forward_state(self._forward)
        if "globals" in self.meta:
            state["meta"] = dict(self.meta, globals=None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)

    def bind_globals(self, f_globals: Dict[str, Any]) -> None:
        """Give this graph and its loops' bodies the globals of the frame it runs for."""
        if "globals" in self.meta:
            self.meta["globals"] = f_globals
            self._forward = None
        for n in self.nodes:
            body = getattr(n.target, "body", None) if n.kind is NodeKind.CALL else None
            if isinstance(body, Graph):
                body.bind_globals(f_globals)

    # ---- code
    def python_code(self) -> str:
        return _python_code(self)

    @property
    def forward(self) -> Callable[..., Any]:
        """The graph as one generated straight-line Python function (compiled once)."""
        if self._forward is None:
            state = self.__dict__.pop("_forward_state", None)
            self._forward = _compile_graph(self) if state is None else _forward_from_state(self, state)
        return self._forward

    def __call__(self, *inputs: Any) -> Any:
        return self.forward(*inputs)

    def __str__(self) -> str:
        return "\n".join(self._listing("    "))

    def _listing(self, indent: str) -> List[str]:
        lines = [f"{indent[4:]}graph {self.name}({', '.join(n.name for n in self.placeholders)}):"]
        for n in self.nodes:
            lines.append(f"{indent}{n.format()}")
            body = getattr(n.target, "body", None) if n.kind is NodeKind.CALL else None
            if isinstance(body, Graph):
                lines += body._listing(indent + "    ")
        return lines

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self.placeholders)} inputs, {len(self.operations())} operations>"


_RESERVED = frozenset(
    {"output", "np", "numpy", "operator", "builtins"}
    | set(__import__("keyword").kwlist)
    | set(dir(__import__("builtins")))
)


def _no_code_generator(graph: Graph) -> Any:
    raise RuntimeError("no code generator: framehook.translator.graph's __init__ sets pysource's")


# what Graph.python_code, Graph.forward and pickling call (set_code_generator)
_python_code: Callable[[Graph], str] = _no_code_generator
_compile_graph: Callable[[Graph], Callable[..., Any]] = _no_code_generator
_forward_state: Callable[[Any], Any] = lambda fn: None
_forward_from_state: Callable[[Graph, Any], Callable[..., Any]] = _no_code_generator


def set_code_generator(
    python_code: Callable[[Graph], str],
    compile_graph: Callable[[Graph], Callable[..., Any]],
    forward_state: Optional[Callable[[Any], Any]] = None,
    forward_from_state: Optional[Callable[[Graph, Any], Callable[..., Any]]] = None,
) -> None:
    """Use these functions for ``Graph.python_code`` and ``Graph.forward`` (and, pickling a
    graph, for its compiled function): the package's ``__init__`` hands in ``pysource``'s,
    so that the data model does not import its compiler."""
    global _python_code, _compile_graph, _forward_state, _forward_from_state
    _python_code, _compile_graph = python_code, compile_graph
    if forward_state is not None and forward_from_state is not None:
        _forward_state, _forward_from_state = forward_state, forward_from_state
