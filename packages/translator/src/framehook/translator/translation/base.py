"""The instruction translator interface (the default translator is the symbolic
interpreter, ``symbolic/``) and a minimal translator: it guards the types of the frame's
arguments (arrays by dtype, shape, strides, writeability), hands the backend a graph with a
placeholder per array argument and returns the original code. Its rules for which
dimensions and ints are dynamic are the symbolic translator's too."""

from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..backends import CompilerFn, backend_name
from ..config import config
from ..guards.contexts import TracingContext
from ..exc import BackendCompilerFailed
from ..guards import Guard, GuardKind
from ..guards.sources import LocalSource, Source, read_value
from ..bytecode import Codegen, Positions, prefix_length, transform_code_object
from .speculation import SpeculationLog

__all__ = [
    "FrameInfo",
    "FrameGraph",
    "TranslationOutput",
    "InstructionTranslatorBase",
    "MinimalTranslator",
    "TranslatorFactory",
    "argument_names",
    "call_backend",
    "make_output_code",
    "source_value",
]


@dataclass
class FrameInfo:
    """What the translator may read of the frame (the runtime's view dies with the callback)."""

    code: types.CodeType
    f_globals: Dict[str, Any]
    f_builtins: Dict[str, Any]
    f_locals: Dict[str, Any]
    f_lineno: int
    # the runtime's view, kept only to read ``function`` on demand during the callback: on
    # 3.9/3.10 that read is a heap scan, and only a failure record needs the function
    _view: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_view(cls, frame: Any) -> "FrameInfo":
        return cls(frame.f_code, frame.f_globals, frame.f_builtins, frame.f_locals, frame.f_lineno, frame)

    @functools.cached_property
    def function(self) -> Optional[Callable[..., Any]]:
        """The function being called, or None (read while the callback runs)."""
        return getattr(self._view, "function", None)


class FrameGraph:
    """The part-1 graph: placeholders for the array arguments and no operations."""

    def __init__(self, placeholders: Sequence[str], meta: Optional[Dict[str, Any]] = None) -> None:
        self.placeholders = list(placeholders)
        self.meta = dict(meta or {})

    def forward(self, *inputs: Any) -> Tuple[Any, ...]:
        if len(inputs) != len(self.placeholders):
            raise TypeError(f"graph takes {len(self.placeholders)} inputs, got {len(inputs)}")
        return ()

    __call__ = forward

    def __repr__(self) -> str:
        return f"FrameGraph(placeholders={self.placeholders})"


@dataclass
class TranslationOutput:
    """What one successful translation attempt produced."""

    code: Optional[types.CodeType] = None  # None: run the original code
    graphs: List[Any] = field(default_factory=list)
    compiled_fns: List[Callable[..., Any]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    # set when ``code`` is exactly ``make_output_code(frame code, backend(graph), sources)``,
    # dead code removed (or None, with no graph): (graph or None, sources), what another
    # process rebuilds it from
    portable: Optional[Tuple[Any, List[Any]]] = None


def argument_names(code: types.CodeType) -> List[str]:
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return list(code.co_varnames[:n])


def call_backend(compiler_fn: CompilerFn, graph: Any, example_inputs: List[Any]) -> Callable[..., Any]:
    """Run the backend with the user's stack cleared; wrap its failures in BackendCompilerFailed."""
    name = backend_name(compiler_fn)
    try:
        with TracingContext.clear_frame():
            compiled = compiler_fn(graph, example_inputs)
    except Exception as e:
        raise BackendCompilerFailed(name, e) from e
    if not callable(compiled):
        raise BackendCompilerFailed(
            name, TypeError(f"the backend returned {type(compiled).__name__}, which is not callable")
        )
    if getattr(compiled, "framehook_untraced", False):
        return compiled
    # what a backend returns runs as it is: were its Python frames translated, a graph
    # captured from them would go to the backend again, and so on without end
    from .._runtime import runtime

    return functools.partial(runtime.call_with, None, compiled)


_DYNAMIC = object()  # frame_state["ints"]: this int argument changed between compilations


class InstructionTranslatorBase:
    """Translates one frame. Subclasses implement ``run``; guards go into the current
    TracingContext. Built anew for every restart attempt."""

    def __init__(
        self,
        frame: FrameInfo,
        *,
        compiler_fn: CompilerFn,
        speculation_log: SpeculationLog,
        frame_state: Dict[str, Any],
        one_graph: bool = False,
        dynamic: Optional[bool] = None,
    ) -> None:
        self.frame = frame
        self.compiler_fn = compiler_fn
        self.speculation_log = speculation_log
        self.frame_state = frame_state
        self.one_graph = one_graph
        self.dynamic = dynamic

    def add_guard(self, guard: Guard) -> None:
        TracingContext.get().guards_context.guards.add(guard, skip=1)

    def speculate(self, instruction_pointer: int = 0):  # -> SpeculationEntry
        code = self.frame.code
        return self.speculation_log.next(code.co_filename, self.frame.f_lineno, instruction_pointer)

    # Which inputs stay unspecialized: decided per frame from what earlier compilations saw
    # (frame_state), shared by every translator.
    def dynamic_dims(self, name: str, value: np.ndarray) -> Tuple[int, ...]:
        if self.dynamic is True or (self.dynamic is None and not config.assume_static_by_default):
            return tuple(range(value.ndim))
        if self.dynamic is False or not config.automatic_dynamic_shapes:
            return ()
        # automatic dynamic: a dimension that changed between compilations stays dynamic
        shapes = self.frame_state.setdefault("shapes", {})
        seen = shapes.get(name)
        if seen is None or len(seen) != value.ndim:
            shapes[name] = tuple(value.shape)
            return ()
        merged = tuple(None if (s is None or s != n) else s for s, n in zip(seen, value.shape))
        shapes[name] = merged
        return tuple(i for i, s in enumerate(merged) if s is None)

    def dynamic_int(self, name: str, value: int) -> bool:
        """Is the int argument ``name`` dynamic: with dynamic=True always, with dynamic=None
        once its value differed between compilations (it then stays a graph value where it is
        a size, an index or a slice bound, instead of being specialized on)."""
        if self.dynamic is True or (self.dynamic is None and not config.assume_static_by_default):
            return True
        if self.dynamic is False or not config.automatic_dynamic_shapes:
            return False
        ints = self.frame_state.setdefault("ints", {})
        seen = ints.get(name, value)
        if seen is not _DYNAMIC and seen != value:
            seen = _DYNAMIC
        ints[name] = seen
        return seen is _DYNAMIC

    def unspecialized_int(self, name: str) -> bool:
        """Is the int input ``name`` never to be guarded on its value: it went dynamic
        automatically (its value changed between compilations) and
        ``config.automatic_dynamic_ints`` is on. ``dynamic=True`` keeps specializing where
        the value is needed."""
        return (
            self.dynamic is None
            and config.automatic_dynamic_shapes
            and config.automatic_dynamic_ints
            and self.frame_state.get("ints", {}).get(name) is _DYNAMIC
        )

    def run(self) -> TranslationOutput:  # pragma: no cover - abstract
        raise NotImplementedError


TranslatorFactory = Callable[..., InstructionTranslatorBase]


class MinimalTranslator(InstructionTranslatorBase):
    """Guards on the arguments; the original code keeps running."""

    def run(self) -> TranslationOutput:
        code = self.frame.code
        f_locals = self.frame.f_locals
        derefs = set(code.co_cellvars) | set(code.co_freevars)
        arrays: List[str] = []
        first_seen: Dict[int, LocalSource] = {}
        for name in argument_names(code) + list(code.co_freevars):
            if name not in f_locals:
                continue
            value = f_locals[name]
            source = LocalSource(name, cell_or_freevar=name in derefs)
            if isinstance(value, np.ndarray):
                dims = self.dynamic_dims(name, value)
                self.add_guard(source.make_guard(GuardKind.NDARRAY_MATCH, **({"dynamic_dims": dims} if dims else {})))
                arrays.append(name)
                if id(value) in first_seen:
                    self.add_guard(source.make_guard(GuardKind.DUPLICATE_INPUT, other=first_seen[id(value)]))
                else:
                    first_seen[id(value)] = source
            else:
                self.add_guard(source.make_guard(GuardKind.TYPE_MATCH))
        graph = FrameGraph(arrays, {"function": code.co_qualname if hasattr(code, "co_qualname") else code.co_name})
        compiled = call_backend(self.compiler_fn, graph, [f_locals[n] for n in arrays])
        return TranslationOutput(code=None, graphs=[graph], compiled_fns=[compiled])


def source_value(source: Source, f_locals: Dict[str, Any], f_globals: Dict[str, Any]) -> Any:
    """The value ``source`` names on a frame."""
    return read_value(source, f_locals, f_globals)


def make_output_code(code: types.CodeType, compiled: Callable[..., Any], sources: List[Source]) -> types.CodeType:
    """``code`` with its body replaced by ``return compiled(<each source>)``; the frame set-up,
    arguments, cells and free variables are kept, as the runtime requires."""
    where = Positions(code.co_firstlineno, code.co_firstlineno, None, None)

    def transform(insts: List[Any], opts: Dict[str, Any]) -> None:
        cg = Codegen()

        def load_inputs() -> None:
            for s in sources:
                s.reconstruct(cg)

        cg.call_builtin(compiled, load_inputs, nargs=len(sources))
        cg.return_value()
        for inst in cg.instructions:
            inst.positions = where
        insts[prefix_length(insts) :] = cg.instructions

    return transform_code_object(code, transform)
