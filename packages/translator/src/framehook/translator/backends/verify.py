"""``config.verify_backend``: check what a backend's compiled graph returns.

With the setting on when a frame is compiled, the backend's callable is wrapped so that
every result is compared with the graph's output metadata (container structure, Python
type, dtype, number of dimensions and every static dimension). A mismatch raises
``BackendVerificationError`` at the call, naming the backend, the graph, the output
position, what was expected and what came back.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, List, Sequence

import numpy as np

from .registry import CompilerFn, backend_name
from ..exc import TranslatorError
from ..graph import ArrayMeta, Graph, Node, ScalarMeta, TupleMeta, format_shape

__all__ = ["BackendVerificationError", "verifying_backend", "check_result"]


class BackendVerificationError(TranslatorError):
    """A compiled graph returned a result that does not match the graph (config.verify_backend)."""


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{type(value).__name__} {value.dtype}{format_shape(value.shape)}"
    if isinstance(value, np.generic):
        return f"numpy scalar {type(value).__name__}"
    return type(value).__name__


def _expected(meta: Any) -> str:
    if isinstance(meta, TupleMeta):
        return f"{meta.pytype.__name__} of {len(meta.items)}"
    if isinstance(meta, ArrayMeta):
        if meta.is_array:
            return f"ndarray {meta.dtype}{format_shape(meta.shape)}"
        return f"numpy scalar {meta.pytype.__name__}"
    return meta.pytype.__name__


def _mismatch(meta: Any, value: Any) -> bool:
    if isinstance(meta, ScalarMeta):
        return type(value) is not meta.pytype
    if type(value) is not meta.pytype:
        return True
    if value.dtype != meta.dtype:
        return True
    if not meta.is_array:
        return False
    if value.ndim != meta.ndim:
        return True
    return any(isinstance(d, int) and d != n for d, n in zip(meta.shape, value.shape))


def check_result(spec: Any, value: Any, where: str, problems: List[str]) -> None:
    """Compare ``value`` with the output argument ``spec``; append one line per mismatch."""
    if isinstance(spec, Node):
        meta = spec.meta.get("val")
        if isinstance(meta, TupleMeta):  # a named tuple: its type, then item by item
            if type(value) is not meta.pytype or len(value) != len(meta.items):
                problems.append(
                    f"{where}: expected {_expected(meta)}, got {_describe(value)}"
                    + (f" of {len(value)}" if isinstance(value, tuple) else "")
                )
                return
            for f, m, v in zip(meta.fields, meta.items, value):
                if _mismatch(m, v):
                    problems.append(f"{where}.{f}: expected {_expected(m)}, got {_describe(v)}")
            return
        if isinstance(meta, (ArrayMeta, ScalarMeta)) and _mismatch(meta, value):
            problems.append(f"{where}: expected {_expected(meta)}, got {_describe(value)}")
        return
    if type(spec) in (tuple, list):
        if type(value) is not type(spec) or len(value) != len(spec):
            problems.append(
                f"{where}: expected a {type(spec).__name__} of {len(spec)}, got "
                f"{type(value).__name__}" + (f" of {len(value)}" if hasattr(value, "__len__") else "")
            )
            return
        for i, (s, v) in enumerate(zip(spec, value)):
            check_result(s, v, f"{where}[{i}]", problems)
        return
    if type(spec) is dict:
        if type(value) is not dict or list(value) != list(spec):
            problems.append(
                f"{where}: expected a dict with keys {list(spec)}, got {_describe(value)}"
                + (f" with keys {list(value)}" if isinstance(value, dict) else "")
            )
            return
        for k in spec:
            check_result(spec[k], value[k], f"{where}[{k!r}]", problems)


def verifying_backend(compiler_fn: CompilerFn) -> CompilerFn:
    """``compiler_fn`` whose compiled callables check every result against the graph."""
    name = backend_name(compiler_fn)

    def verify(graph: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        compiled = compiler_fn(graph, example_inputs)
        out = graph.output_node if isinstance(graph, Graph) else None
        if out is None or not callable(compiled):
            return compiled
        spec = out.args[0]
        graph_name = graph.name

        @functools.wraps(compiled)
        def checked(*inputs: Any) -> Any:
            result = compiled(*inputs)
            problems: List[str] = []
            check_result(spec, result, "output", problems)
            if problems:
                raise BackendVerificationError(
                    f"backend {name!r} returned a wrong result for graph {graph_name} "
                    f"(config.verify_backend):\n" + "\n".join(f"  {p}" for p in problems)
                )
            return result

        checked.verified = compiled  # type: ignore[attr-defined]
        return checked

    verify.compiler_name = name  # type: ignore[attr-defined]
    return verify
