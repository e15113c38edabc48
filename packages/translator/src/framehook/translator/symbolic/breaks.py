"""Graph-break identifiers: ``FH`` + number, each with a one-line explanation and a hint.

Documented in ``docs/graph-breaks.md`` (generated from this table by ``render_markdown``;
a test checks the page is up to date).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from ..exc import Unsupported

__all__ = ["BreakKind", "BREAKS", "CannotResume", "GraphBreak", "render_markdown"]


@dataclass(frozen=True)
class BreakKind:
    code: str
    title: str
    explanation: str
    hint: str


_TABLE = [
    BreakKind(
        "FH001",
        "unsupported instruction",
        "the frame uses a bytecode instruction the symbolic interpreter does not execute",
        "move the construct (e.g. a generator, an async construct, `del` of a global) out of the optimized function",
    ),
    BreakKind(
        "FH002",
        "data-dependent control flow",
        "a branch (`if`, `while`, `and`/`or`, an assert) depends on the contents of an array; a `while` "
        "loop whose condition is a 0-d array, a numpy scalar or a graph number is captured as a "
        "while-loop node instead (`while a and b:` and one `if <graph value>: break` in its body "
        "included), as is a `for` loop over a range whose body has one `if <graph value>: break` (a "
        "loop node that exits early); either breaks here (saying why) only when its body cannot be "
        "captured (a third exit, a `return` or a `for`-`else` on a graph value)",
        "compute both sides and select with `np.where`, or move the decision out of the function",
    ),
    BreakKind(
        "FH003",
        "call to an unsupported callable",
        "the function calls something the translator cannot look into (a C function outside numpy, "
        "a method of an unknown object), or a class whose objects it does not model: one with a "
        "metaclass, `__new__`, `__del__`, `__slots__`, attribute hooks (`__getattr__`, "
        "`__setattr__`, ...; frozen dataclasses have them) or a builtin base, or an `__init__` that is "
        "not a Python function (the reason names which). Calling a plain class (dataclasses included) "
        "is captured: its `__init__` is inlined, and the new object is made after the graph where it "
        "outlives it",
        "call it outside the optimized function, or wrap the numpy part in its own function",
    ),
    BreakKind(
        "FH004",
        "unsupported numpy function or arguments",
        "a numpy function (or array method) is not in the supported set, or is called with arguments "
        "it cannot capture (for example `np.linalg.eig` of a real array on numpy before 2.5, whose "
        "result is real or complex depending on the values, or `np.ndarray(...)` over a `buffer=`; "
        "`np.ndarray(shape, dtype, order=...)` and `np.histogram` are captured)",
        "see the supported list in the translator README; rewrite with supported functions",
    ),
    BreakKind(
        "FH005",
        "I/O or other side effect",
        "the function prints, opens files or does other I/O while running",
        "do the I/O outside the optimized function (return what you want to print)",
    ),
    BreakKind(
        "FH006",
        "mutation of state outside the frame that cannot be replayed",
        "stores to the frame's globals, to attributes of plain objects and modules, and mutations of "
        "lists and dicts the function received are traced and replayed after the graph runs; this "
        "break is for the rest: deleting a global or an attribute, storing to a closure variable of "
        "an enclosing function, to another module's globals, to an attribute of a function, class or "
        "object with attribute hooks (`__setattr__`: frozen dataclasses) or a descriptor (a property "
        "setter, a slot), or mutating an object the function also reaches through a second name (an "
        "alias the translator cannot track). `x.shape = ...` on an array is an in-place reshape in "
        "the graph (numpy raises as in plain code when the layout needs a copy); it breaks here only "
        "when another graph value may be the same array object (`np.asarray(x)`, `x.real`, ...)",
        "return the new value instead and store it at the caller, or pass the object once",
    ),
    BreakKind(
        "FH007",
        "try/except/finally or with block",
        "the frame runs code inside a try, except, finally or with block; the whole statement "
        "runs in Python, between the graphs before and after it. A `with np.errstate(...)` "
        "block with constant keyword arguments (`all`, `divide`, `over`, `under`, `invalid` set "
        "to `ignore`, `warn`, `raise` or `print`; also `**` of a constant dict) is captured "
        "instead: its operations run under those settings in the graph. It still breaks here "
        "when something inside it breaks (the reason names that break), when its arguments "
        "are not constant or use `call=` or the `call`/`log` modes, or when the manager is "
        "not entered where it is made",
        "move the array computation out of the try/with block (or into a helper function) to have it captured",
    ),
    BreakKind(
        "FH008",
        "unsupported Python value",
        "the function reads a value of a type the translator does not model (an object of a user "
        "class with `__getattr__`/`__getattribute__` or a builtin base, an attribute its class defines "
        "as a descriptor other than a method, a property with a Python getter or a slot, a special "
        "`__name__`, a generator, a set of arrays, ...). Attributes of other objects of user classes "
        "(dataclasses, frozen ones and slotted ones included) are read and guarded; methods, "
        "classmethods, staticmethods and property getters are inlined",
        "pass arrays, numbers, strings, tuples, lists and dicts of those",
    ),
    BreakKind(
        "FH009",
        "the code raises",
        "the traced code raises an exception (an explicit raise, or an operation that fails for these inputs)",
        "nothing to do when the exception is intended: the raising code runs in ordinary Python and raises",
    ),
    BreakKind(
        "FH010",
        "loop unroll limit",
        "a loop ran more iterations than config.max_unrolled_iterations while being traced",
        "raise config.max_unrolled_iterations, or use a vectorized numpy formulation",
    ),
    BreakKind(
        "FH011",
        "data-dependent or dynamic size needed as a number",
        "Python needs, at trace time, the value of a size that is only known when the graph runs: "
        "a dimension marked dynamic (after a recompilation, or with `dynamic=True`), an int input "
        "whose value changed between compilations (config.automatic_dynamic_ints: guarded on its "
        "type only, so one entry serves every value) or the length of a "
        "boolean-mask result used by `range()`, a branch, formatting, list indexing or as an axis; "
        "iteration over an array whose first dimension is dynamic; a mask inside a list or a nested "
        "tuple of an index (masks as items of a tuple index, and 0-d masks, are captured), "
        "nonzero, unique, shape arguments computed from array values. Reading such a size "
        "(`x.shape[0]`, `len(x)`, `x.size`) and using it in arithmetic, comparisons, as a size "
        "argument (`np.zeros(n)`, `x.reshape(n, -1)`), an index or a slice bound stays in the graph, "
        "and so does a `for` loop over `range(k)` of such an int (a loop node bounded by the graph "
        "int); it breaks here, running the whole loop in Python, only when its body cannot be "
        "captured (the reason says why)",
        "keep the size in the graph (`x[: n // 2]`, `np.arange(n)`, `x[m].sum()`), use "
        "`np.where(mask, a, b)` instead of a mask, or pass `dynamic=False` to specialize on every shape",
    ),
    BreakKind(
        "FH012",
        "array value converted to a Python object",
        "an array or numpy scalar computed in the graph is turned into a Python number, bool, list or "
        "string (`float(x)`, `x.item()`, `x.tolist()`, `bool(x)`, formatting). An integer element used "
        "as a slice bound of an array (`x[:idx[0]]`) stays in the graph",
        "keep the value as a numpy scalar or 0-d array, or return it and convert at the caller",
    ),
    BreakKind(
        "FH013",
        "unsupported array attribute",
        "the code reads an array attribute the translator does not model (strides, flags, ctypes, base, ...)",
        "read it outside the optimized function",
    ),
    BreakKind(
        "FH014",
        "cannot inline the call",
        "a user function could not be inlined (a generator or coroutine function, recursion deeper "
        "than the inlining limit, arguments that do not bind)",
        "call it outside the optimized function, or decorate it separately",
    ),
    BreakKind(
        "FH015",
        "trace budget exhausted",
        "one trace did more work than its budget allows, so that a trace that cannot finish (a loop "
        "nest unrolled until a limit, a long `while` loop) costs little: more instructions than "
        "config.max_traced_instructions, more graph operations than config.max_traced_ops (unrolled "
        "iterations and loop-capture attempts count), or more wall time than config.max_trace_seconds; "
        "the reason names the budget. In straight-line code the graph so far runs and the rest resumes "
        "in a new graph; inside a loop the loop runs in Python, and the function is not traced again "
        "(a later call that misses the cache runs it unmodified)",
        "vectorize the loop, move it into a function of its own, or raise the budget the reason names "
        "(`config.patch(max_traced_ops=...)`)",
    ),
    BreakKind(
        "FH016",
        "compiling backend fell back to eager",
        "not a graph break: the graph is captured whole, but the `numba` backend runs it as the "
        "`eager` backend's Python code, because lowering found integer arithmetic whose numba semantics "
        "differ from plain Python's (Python integers that could outgrow 64 bits, integer-array `//` or "
        "`%`, a Python scalar with an array narrower than int64, a float converted to a Python int), a "
        "bound object numba cannot compile, numba could not type or compile the graph (the reason quotes "
        "numba's first line) or types a value with another dtype than numpy; or, at run time, the graph "
        "returned a view of an input, needed plain Python's floating-point error handling or exceptions "
        "on 3 calls (each of those calls was redone eager, with plain's warnings and errors), or was not "
        "measured faster than eager over its first calls (kernel and eager calls alternate; it must win "
        "three pairs in four by 5%), or, kept, was demoted when sampled calls found it slower than eager "
        "in steady state; or its background compile ran past `config.numba_compile_budget` (remembered "
        "in the cache for later processes); or numba is missing, too old or fails to import. "
        "`explain(fn, backend=\"numba\")` "
        "lists these under backend notes, with the compile time of every graph that did compile. When "
        "the whole graph is refused at lowering or by numba, each of its top-level loop nodes is still "
        "tried as a kernel of its own (listed as `<graph>_<loop>`, with its own FH016 when it too runs "
        "eager), so a statement numba cannot take outside a loop does not keep the loop from compiling",
        "the result is the same as plain; for speed, keep the graph to numpy arrays, numbers and the "
        "numpy functions numba supports, or move the named operation out of the hot function",
    ),
]

BREAKS: Dict[str, BreakKind] = {k.code: k for k in _TABLE}


class GraphBreak(Unsupported):
    """Capture stops here. Carries the identifier, the user's location and a reason."""

    def __init__(self, code: str, reason: str, filename: Optional[str] = None, lineno: Optional[int] = None) -> None:
        if code not in BREAKS:
            raise ValueError(f"unknown graph-break identifier {code!r}")
        self.code = code
        self.reason = reason
        self.filename = filename
        self.lineno = lineno
        self.break_index: Optional[int] = None  # index of the root frame's instruction that broke
        super().__init__(self._message())

    @property
    def kind(self) -> BreakKind:
        return BREAKS[self.code]

    def locate(self, filename: str, lineno: Optional[int]) -> "GraphBreak":
        if self.filename is None:
            self.filename = filename
            self.lineno = lineno
            self.args = (self._message(),)
        return self

    def _message(self) -> str:
        where = f" at {self.filename}:{self.lineno}" if self.filename else ""
        return f"{self.code} ({BREAKS[self.code].title}){where}: {self.reason}. Hint: {BREAKS[self.code].hint}"


def render_markdown() -> str:
    lines = [
        "# Graph-break identifiers",
        "",
        "When the translator cannot capture part of a function it stops the graph there (a *graph",
        "break*). In straight-line code of the function the graph captured so far runs, then the",
        "unsupported instruction runs in ordinary Python, then a generated *resume function*",
        "continues from the next instruction and is translated in its turn. Inside a loop or a",
        "try/with block the whole statement holding the break runs in Python instead, and the resume",
        "function continues after it (see \"Graph breaks and resume functions\" in the translator",
        "README). Every break carries one of these identifiers;",
        "`explain(fn)(*args)` lists them with the file and line, and with `nopython=True` the error",
        "message starts with it. This page is generated from",
        "`packages/translator/src/framehook/translator/symbolic/breaks.py`.",
        "",
    ]
    for k in _TABLE:
        lines += [
            f"## {k.code}: {k.title}",
            "",
            k.explanation[0].upper() + k.explanation[1:] + ".",
            "",
            f"Hint: {k.hint}.",
            "",
        ]
    return "\n".join(lines)


class CannotResume(Exception):
    """This break cannot resume; the frame runs its original code."""
