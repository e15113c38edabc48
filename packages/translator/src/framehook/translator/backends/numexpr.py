"""The ``numexpr`` backend: maximal elementwise subgraphs fused into numexpr expressions.

    @optimize("numexpr")                  # pip install "framehook-translator[numexpr]"
    def f(a, b):
        return np.exp(-a * a) + 2.0 * np.sin(b) ** 2

The graph is rewritten before it is compiled: each run of elementwise operations whose
intermediate values are used only inside the run becomes one ``call`` node to a
``FusedKernel``, which evaluates the whole expression
in one numexpr pass (blocked, multi-threaded, no temporaries). An intermediate used by
several operations, or by anything that is not elementwise, is materialized and starts
a new run. Operations come in three categories: ``arith`` (+ - * / ** negation, square,
abs on floats), ``math`` (exp, log, sin, sqrt, ... ) and ``logic`` (comparisons, & | ~ on
booleans, ``np.where``); ``default_categories()`` says which the registered backend fuses
and why, ``make_numexpr_backend(categories)`` builds one that fuses others. Every other node is left as it is, and the rewritten graph is compiled like
the ``eager`` backend's: one straight-line Python function.

Results follow numpy's within float tolerance: each kernel casts its result to the
dtype numpy would give (numexpr computes Python-float constants in double precision,
so a float32 expression can differ in the last bits).

``plan(graph)`` returns the rewritten graph without needing numexpr (the kernels then
refuse to run), so the fusion itself can be inspected: ``print(plan(g))``.
"""

from __future__ import annotations

import importlib.util
import math
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._runtime import runtime
from .infix import COMPARISONS
from .registry import register_backend
from ..exc import InvalidBackendError
from ..graph import ArrayMeta, Graph, Node, NodeKind, ScalarMeta
from ..graph.ir import map_arg

__all__ = [
    "numexpr_backend",
    "make_numexpr_backend",
    "plan",
    "FusedKernel",
    "require_numexpr",
    "NUMEXPR_EXTRA",
    "fusable",
    "default_categories",
    "CATEGORIES",
]

NUMEXPR_EXTRA = "framehook-translator[numexpr]"
_call_with = runtime.call_with

#: operator -> numexpr infix spelling
_BINARY = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.pow: "**",
    np.add: "+",
    np.subtract: "-",
    np.multiply: "*",
    np.true_divide: "/",
    np.power: "**",
    **COMPARISONS,
}
#: boolean-only operators (numexpr's & | ~ are logical)
_LOGICAL = {
    operator.and_: "&",
    operator.or_: "|",
    np.logical_and: "&",
    np.logical_or: "|",
    np.bitwise_and: "&",
    np.bitwise_or: "|",
}
_NEGATE = {operator.neg, np.negative}
_INVERT = {operator.invert, np.logical_not, np.invert}
#: ufunc -> numexpr function name
_FUNCTIONS = {
    np.exp: "exp",
    np.log: "log",
    np.log10: "log10",
    np.log1p: "log1p",
    np.expm1: "expm1",
    np.sqrt: "sqrt",
    np.sin: "sin",
    np.cos: "cos",
    np.tan: "tan",
    np.arcsin: "arcsin",
    np.arccos: "arccos",
    np.arctan: "arctan",
    np.sinh: "sinh",
    np.cosh: "cosh",
    np.tanh: "tanh",
    np.arcsinh: "arcsinh",
    np.arccosh: "arccosh",
    np.arctanh: "arctanh",
    np.arctan2: "arctan2",
}
_SQUARE = {np.square}
_COMPARISONS = frozenset(COMPARISONS.values())
#: operation categories: arithmetic (+ - * / ** neg square abs), transcendental maths
#: (exp, log, sin, sqrt, ...), and logic (comparisons, & | ~ on booleans, where)
CATEGORIES = ("arith", "math", "logic")
#: result dtypes a kernel may produce, and input dtypes it may read
_RESULT_KINDS = "fb"
_INPUT_DTYPES = frozenset(np.dtype(t) for t in ("bool", "int32", "int64", "float32", "float64"))


def _numexpr_missing() -> Optional[str]:
    """Why ``list_backends()`` leaves numexpr out, found without importing it."""
    if importlib.util.find_spec("numexpr") is None:
        return f'the numexpr package is not installed; install it with: pip install "{NUMEXPR_EXTRA}"'
    return None


def require_numexpr() -> Any:
    """The numexpr module, or an error naming the extra that installs it."""
    try:
        import numexpr
    except ImportError as e:
        raise InvalidBackendError(
            f"the 'numexpr' backend needs the numexpr package, which is not installed; "
            f"install it with: pip install \"{NUMEXPR_EXTRA}\""
        ) from e
    return numexpr


class FusedKernel:
    """One numexpr expression over named inputs; called with the inputs in order.

    ``expression`` uses ``names`` as variables; the result is cast to ``dtype``."""

    def __init__(self, expression: str, names: Sequence[str], dtype: np.dtype, ops: int) -> None:
        self.expression = expression
        self.names = tuple(names)
        self.dtype = np.dtype(dtype)
        self.ops = ops
        self.__module__ = "numexpr"
        self.__name__ = "kernel"
        self._evaluate: Optional[Callable[..., Any]] = None

    def __call__(self, *inputs: Any) -> Any:
        evaluate = self._evaluate
        if evaluate is None:
            evaluate = self._evaluate = require_numexpr().evaluate
        # numexpr's own Python frames must not be translated: run them with no callback
        out = _call_with(None, evaluate, self.expression, local_dict=dict(zip(self.names, inputs)), global_dict={})
        return out if out.dtype == self.dtype else out.astype(self.dtype)

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_evaluate"] = None
        return state

    def __repr__(self) -> str:
        return f"FusedKernel({self.expression!r}, {list(self.names)}, {self.dtype})"


def _is_array_meta(meta: Any) -> bool:
    return isinstance(meta, ArrayMeta) and meta.is_array and meta.ndim >= 1


def _constant_text(value: Any) -> Optional[str]:
    t = type(value)
    if t is bool:
        return "True" if value else "False"
    if t is int and abs(value) < 2**31:
        return f"({value})" if value < 0 else str(value)
    if t is float and math.isfinite(value):
        text = repr(value)
        return f"({text})" if value < 0 else text
    return None


def _operand_ok(arg: Any) -> bool:
    if isinstance(arg, Node):
        meta = arg.meta.get("val")
        if isinstance(meta, ArrayMeta):
            return meta.dtype in _INPUT_DTYPES
        return isinstance(meta, ScalarMeta) and meta.pytype in (int, float, bool)
    return _constant_text(arg) is not None


def _category(node: Node) -> Optional[str]:
    """``"arith"``, ``"math"`` or ``"logic"`` when numexpr can compute the node, else None."""
    if node.kind is not NodeKind.CALL or node.kwargs:
        return None
    meta = node.meta.get("val")
    if not _is_array_meta(meta) or meta.dtype.kind not in _RESULT_KINDS or meta.dtype == np.float16:
        return None
    target, args = node.target, node.args
    try:
        hash(target)
    except TypeError:  # pragma: no cover - call targets are functions, which hash
        return None
    if not all(_operand_ok(a) for a in args):
        return None
    floating = meta.dtype.kind == "f"
    if target in _BINARY and len(args) == 2:
        if _BINARY[target] in _COMPARISONS:
            return "logic"
        # integer powers (and integer results) follow numpy's own rules
        return "arith" if floating else None
    if target in _LOGICAL and len(args) == 2:
        return "logic" if not floating and all(_arg_dtype_kind(a) == "b" for a in args) else None
    if target in _NEGATE and len(args) == 1:
        return "arith" if floating else None
    if target in _INVERT and len(args) == 1:
        return "logic" if not floating and _arg_dtype_kind(args[0]) == "b" else None
    if target in _SQUARE and len(args) == 1:
        return "arith" if floating else None
    if target is np.absolute and len(args) == 1:
        return "arith" if floating else None
    if target in _FUNCTIONS and len(args) == (2 if target is np.arctan2 else 1):
        return "math" if floating else None
    if target is np.where and len(args) == 3:
        return "logic" if _arg_dtype_kind(args[0]) == "b" else None
    return None


def fusable(node: Node, categories: Sequence[str] = CATEGORIES) -> bool:
    """Can numexpr compute this node (an elementwise operation on supported dtypes), and is
    its category (``arith``, ``math``, ``logic``) among those fused? Not under a captured
    ``np.errstate`` block: numexpr neither warns nor raises as the settings ask."""
    if node.meta.get("errstate"):
        return False
    return _category(node) in categories


def _arg_dtype_kind(arg: Any) -> str:
    if isinstance(arg, Node):
        meta = arg.meta.get("val")
        if isinstance(meta, ArrayMeta):
            return meta.dtype.kind
        return "b" if isinstance(meta, ScalarMeta) and meta.pytype is bool else "?"
    return "b" if type(arg) is bool else "?"


class _Builder:
    """Builds the expression text of one fused run, naming its external inputs."""

    def __init__(self, inlined: Dict[Node, bool]) -> None:
        self.inlined = inlined
        self.inputs: List[Node] = []
        self.names: Dict[Node, str] = {}
        self.ops = 0

    def operand(self, arg: Any) -> str:
        if not isinstance(arg, Node):
            text = _constant_text(arg)
            assert text is not None
            return text
        if self.inlined.get(arg):
            return f"({self.expression(arg)})"
        name = self.names.get(arg)
        if name is None:
            name = self.names[arg] = f"i{len(self.inputs)}"
            self.inputs.append(arg)
        return name

    def expression(self, node: Node) -> str:
        self.ops += 1
        t, a = node.target, node.args
        if t in _BINARY:
            return f"{self.operand(a[0])} {_BINARY[t]} {self.operand(a[1])}"
        if t in _LOGICAL:
            return f"{self.operand(a[0])} {_LOGICAL[t]} {self.operand(a[1])}"
        if t in _NEGATE:
            return f"-{self.operand(a[0])}"
        if t in _INVERT:
            return f"~{self.operand(a[0])}"
        if t in _SQUARE:
            return f"{self.operand(a[0])} ** 2"
        if t is np.absolute:
            return f"abs({self.operand(a[0])})"
        if t is np.where:
            return f"where({', '.join(self.operand(x) for x in a)})"
        return f"{_FUNCTIONS[t]}({', '.join(self.operand(x) for x in a)})"


def _worth_a_kernel(node: Node, inlined: Dict[Node, bool]) -> bool:
    """A run of one operation gains nothing from numexpr (numpy's loop is as fast and has no
    set-up cost), except a power, which numexpr turns into multiplications."""
    if node.target in (operator.pow, np.power, np.square):
        return True
    return any(isinstance(a, Node) and inlined.get(a) for a in node.args)


def default_categories() -> Tuple[str, ...]:
    """What the registered ``numexpr`` backend fuses. Measured against numpy 2 on x86-64:
    numexpr wins on chains of arithmetic (one pass, no temporaries, threads), but numpy's
    SIMD exp/log/sin/sqrt beat numexpr's unless numexpr was built with Intel VML, and
    numpy's boolean comparisons and masks beat numexpr's. So: arithmetic always, maths
    only with VML, logic never (``make_numexpr_backend`` chooses otherwise)."""
    try:
        import numexpr
    except ImportError:
        return ("arith",)
    return ("arith", "math") if getattr(numexpr, "use_vml", False) else ("arith",)


def plan(graph: Graph, categories: Optional[Sequence[str]] = None) -> Graph:
    """A copy of ``graph`` with every maximal elementwise run replaced by a FusedKernel call
    (``categories``: which operations to fuse; default ``default_categories()``)."""
    cats = tuple(default_categories() if categories is None else categories)
    unknown = [c for c in cats if c not in CATEGORIES]
    if unknown:
        raise ValueError(f"unknown fusion categories {unknown}; choose from {list(CATEGORIES)}")
    fuse = {n: fusable(n, cats) for n in graph.nodes}
    # an elementwise node is inlined into its user when that single user is elementwise too
    inlined: Dict[Node, bool] = {}
    for node in graph.nodes:
        users = list(node.users)
        inlined[node] = fuse[node] and len(users) == 1 and fuse[users[0]]
    new = Graph(graph.name)
    new.meta.update(graph.meta)
    new.meta["fused_kernels"] = []
    mapping: Dict[Node, Node] = {}

    def remap(arg: Any) -> Any:
        return map_arg(arg, lambda n: mapping[n])

    for node in graph.nodes:
        meta = node.meta.get("val")
        stack = node.meta.get("stack")
        if node.kind is NodeKind.PLACEHOLDER:
            mapping[node] = new.placeholder(node.target, meta)
        elif node.kind is NodeKind.OUTPUT:
            new.output(remap(node.args[0]))
        elif inlined[node]:
            continue  # computed inside its user's expression
        elif fuse[node] and _worth_a_kernel(node, inlined):
            b = _Builder(inlined)
            expression = b.expression(node)
            kernel = FusedKernel(expression, [b.names[i] for i in b.inputs], meta.dtype, b.ops)
            new.meta["fused_kernels"].append(kernel)
            mapping[node] = new.call(kernel, tuple(mapping[i] for i in b.inputs), meta=meta, stack=stack)
        elif node.kind is NodeKind.CALL:
            mapping[node] = new.call(node.target, remap(node.args), remap(node.kwargs), meta=meta, stack=stack)
        elif node.kind is NodeKind.CALL_METHOD:
            mapping[node] = new.call_method(node.target, remap(node.args), remap(node.kwargs), meta=meta, stack=stack)
        else:
            mapping[node] = new.getattr(remap(node.args[0]), node.target, meta=meta, stack=stack)
        if node in mapping and node.meta.get("impure"):
            mapping[node].meta["impure"] = True
        if node in mapping and node.meta.get("errstate"):
            mapping[node].meta["errstate"] = dict(node.meta["errstate"])
    return new


def make_numexpr_backend(categories: Optional[Sequence[str]] = None) -> Callable[..., Any]:
    """A numexpr backend fusing the given categories (default: ``default_categories()``)."""
    if categories is not None:
        plan(Graph("check"), categories)  # validate now

    def numexpr_fused(graph: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        require_numexpr()
        if not isinstance(graph, Graph):
            return graph.forward  # the part-1 FrameGraph has no operations to fuse
        fused = plan(graph, categories)
        forward = fused.forward
        forward.fused_graph = fused  # type: ignore[attr-defined]
        return forward

    numexpr_fused.check_available = require_numexpr  # type: ignore[attr-defined]
    numexpr_fused.unavailable = _numexpr_missing  # type: ignore[attr-defined]
    return numexpr_fused


numexpr_backend = register_backend(make_numexpr_backend(), name="numexpr")
