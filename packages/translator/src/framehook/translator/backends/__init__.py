"""Backends: what compiles a captured graph.

``registry`` holds the backends by name (and the ``eager`` one); importing this package
imports the plugins after it, each registering itself: ``numexpr`` and ``numba`` (both need
their extra installed to run). ``verify`` wraps a backend to check its results against
eager execution (``config.verify_backend``)."""

from .registry import CompilerFn, backend_name, eager, list_backends, lookup_backend, register_backend
from . import numexpr  # noqa: F401 - registers "numexpr" (needs the numexpr extra to run)
from . import numba  # noqa: F401 - registers "numba" (needs the numba extra to run)

__all__ = ["CompilerFn", "register_backend", "lookup_backend", "list_backends", "backend_name", "eager"]
