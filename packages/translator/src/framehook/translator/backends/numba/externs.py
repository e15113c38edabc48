"""C functions a kernel calls by symbol name, bound when the kernel compiles.

The lowering writes a kernel's source without importing numba. A C function the source
calls (libc's ``madvise``, the callback into numpy's loops) stands in its globals as an
``Extern`` until ``resolve`` puts numba's ``ExternalFunction`` there: numba links it by
name, as it links libc, so a kernel calling one is cached on disk like any other.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional

__all__ = ["Extern", "resolve"]


class Extern:
    """A C function of the kernels' globals: ``key`` is its text in the kernel cache key,
    ``declare()`` (run once, importing numba) gives numba's ``ExternalFunction``."""

    def __init__(self, key: str, declare: Callable[[], Any]) -> None:
        self.key = key
        self._declare = declare
        self._function: Optional[Any] = None
        self._lock = threading.Lock()  # kernels are lowered in a background thread

    def __repr__(self) -> str:
        return f"<{self.key}>"

    def function(self) -> Any:
        with self._lock:
            if self._function is None:
                self._function = self._declare()
            return self._function


def resolve(scope: Dict[str, Any]) -> None:
    """Put numba's function where the lowering put an ``Extern`` (imports numba)."""
    for name, value in scope.items():
        if isinstance(value, Extern):
            scope[name] = value.function()
