"""Guards as people read them: qualified type names, short reprs, and a check function's
conditions with the closure names of its Python form replaced by what they stand for."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from .model import Guard
from .sources import Source

__all__ = ["Deferred", "ReadableParts", "second_name", "short_repr", "type_name"]


def type_name(t: type) -> str:
    """``int``, ``numpy.ndarray``, ``mymod.Point``: readable, qualified outside builtins."""
    module = getattr(t, "__module__", None)
    qual = getattr(t, "__qualname__", getattr(t, "__name__", repr(t)))
    if module in (None, "builtins"):
        return qual
    return f"{module}.{qual}"


def short_repr(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception as e:  # a broken __repr__ must not hide the reason
        text = f"<{type(value).__name__} with failing repr: {e!r}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def second_name(guard: Guard) -> str:
    """The name of a two-source guard's other source (DUPLICATE_INPUT, DISTINCT_INPUT), or ""."""
    other = guard.detail("other")
    return other.name() if isinstance(other, Source) else ""


class Deferred(Sequence[Any]):
    """A list made when first read, by ``make()``: a check function's ``code_parts``, or what
    a loaded translation's check function restores on first use."""

    __slots__ = ("_make", "_items")

    def __init__(self, make: Callable[[], Sequence[Any]]) -> None:
        self._make: Optional[Callable[[], Sequence[Any]]] = make
        self._items: Optional[List[Any]] = None

    def _all(self) -> List[Any]:
        if self._items is None:
            assert self._make is not None
            self._items, self._make = list(self._make()), None
        return self._items

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Deferred, list)):
            return self._all() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._all())


class ReadableParts(Deferred):
    """A check function's ``code_parts``: each condition as readable text, written when first
    read (a translation loaded from the cache runs its first call without them)."""

    __slots__ = ()

    def __init__(self, parts: List[Any], consts: Dict[str, Any]) -> None:
        super().__init__(lambda: _readable_texts(parts, consts))


def _readable_texts(parts: List[Any], consts: Dict[str, Any]) -> List[str]:
    readable = Readable(consts)
    return [readable(p.render(p.guard.name, second_name(p.guard))) for p in parts]


class Readable:
    """Replaces the closure names in a code part by what they stand for (each described once)."""

    def __init__(self, consts: Dict[str, Any]) -> None:
        self.consts = consts
        self.names = sorted(consts, key=len, reverse=True)
        self.shown: Dict[str, str] = {}

    def describe(self, name: str) -> str:
        shown = self.shown.get(name)
        if shown is None:
            value = self.consts[name]
            if isinstance(value, type):
                shown = type_name(value)
            elif hasattr(value, "snapshot"):
                shown = "___global_state_unchanged"
            else:
                shown = short_repr(value, 60)
            self.shown[name] = shown
        return shown

    def __call__(self, text: str) -> str:
        for name in self.names:
            if name in text:
                text = text.replace(name, self.describe(name))
        return text
