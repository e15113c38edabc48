"""The backend registry. A backend is ``callable(graph, example_inputs) -> callable``;
``optimize(backend=...)`` takes one, or the name it was registered under. The plugins
(``numexpr``, ``numba``) register themselves here; ``backends/__init__.py`` imports them."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ..exc import InvalidBackendError

__all__ = [
    "CompilerFn",
    "register_backend",
    "lookup_backend",
    "list_backends",
    "unavailable_reason",
    "backend_name",
    "eager",
]

CompilerFn = Callable[[Any, Sequence[Any]], Callable[..., Any]]

_registry: Dict[str, CompilerFn] = {}
_lock = threading.Lock()


def register_backend(
    compiler_fn: Optional[CompilerFn] = None, name: Optional[str] = None, *, replace: bool = False
) -> Any:
    """Register ``compiler_fn`` under ``name`` (default: its __name__); usable as a decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name, replace=replace)
    if not callable(compiler_fn):
        raise InvalidBackendError(f"register_backend: a backend must be callable, got {type(compiler_fn).__name__}")
    key = name if name is not None else getattr(compiler_fn, "__name__", None)
    if not isinstance(key, str) or not key:
        raise InvalidBackendError("register_backend: give the backend a name")
    with _lock:
        if key in _registry and _registry[key] is not compiler_fn and not replace:
            raise InvalidBackendError(f"a backend named {key!r} is already registered (pass replace=True)")
        _registry[key] = compiler_fn
    try:
        compiler_fn.compiler_name = key  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass
    return compiler_fn


def lookup_backend(backend: Union[str, CompilerFn]) -> CompilerFn:
    """The backend for a name or a callable; raises InvalidBackendError naming the known ones."""
    if isinstance(backend, str):
        with _lock:
            fn = _registry.get(backend)
        if fn is None:
            raise InvalidBackendError(
                f"unknown backend {backend!r}; registered backends: {', '.join(list_backends(include_unavailable=True))}"
            )
        check = getattr(fn, "check_available", None)
        if check is not None:
            check()  # e.g. an optional dependency that is missing: say which extra installs it
        return fn
    if callable(backend):
        return backend
    raise InvalidBackendError(
        f"backend must be a registered name or a callable(graph, example_inputs), got {type(backend).__name__}"
    )


def list_backends(include_unavailable: bool = False) -> List[str]:
    """The registered backends' names, sorted. A backend whose optional dependency is not
    installed here (its ``unavailable()`` gives the reason) is left out unless
    ``include_unavailable``."""
    with _lock:
        items = sorted(_registry.items())
    return [name for name, fn in items if include_unavailable or unavailable_reason(fn) is None]


def unavailable_reason(backend: Any) -> Optional[str]:
    """Why a backend cannot do its work here (an optional package missing), or None."""
    probe = getattr(backend, "unavailable", None)
    if probe is None:
        return None
    try:
        return probe()
    except Exception as e:  # noqa: BLE001 - a probe that fails says the backend is not usable
        return f"{type(e).__name__}: {e}"


def backend_name(backend: Any) -> str:
    return getattr(backend, "compiler_name", None) or getattr(backend, "__name__", None) or repr(backend)


@register_backend
def eager(graph: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """Run the captured graph as it is."""
    return graph.forward
