"""What the numba backend did with each graph: ``NumbaNote``s, handed to observers
(``explain`` is one) as they are made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List

__all__ = ["FALLBACK_CODE", "NumbaNote", "add_note_observer", "remove_note_observer", "notify"]

FALLBACK_CODE = "FH016"


@dataclass
class NumbaNote:
    """What the backend did with one graph: ``status`` is ``"pending"`` (the kernel is
    being compiled, or loaded from the cache, in the background: the calls run eager until then), ``"compiled"`` or ``"fallback"``
    (then ``reason`` says why); times in seconds (``numba_seconds``: compiling or loading
    from the cache, ``cache``: ``"hit"``, ``"miss"`` or ``""``)."""

    graph: str
    status: str
    reason: str = ""
    lowering_seconds: float = 0.0
    numba_seconds: float = 0.0
    cache: str = ""

    @property
    def code(self) -> str:
        return FALLBACK_CODE if self.status == "fallback" else ""

    def __str__(self) -> str:
        if self.status == "fallback":
            return f"{FALLBACK_CODE} {self.graph}: runs eager: {self.reason}"
        if self.status == "pending":
            return f"{self.graph}: numba kernel compiling or loading in the background (runs eager meanwhile)"
        return (
            f"{self.graph}: numba, lowering {self.lowering_seconds * 1e3:.1f} ms, "
            f"numba {self.numba_seconds * 1e3:.1f} ms (cache {self.cache or 'off'})"
        )


_observers: List[Callable[[NumbaNote], None]] = []


def add_note_observer(fn: Callable[[NumbaNote], None]) -> None:
    _observers.append(fn)


def remove_note_observer(fn: Callable[[NumbaNote], None]) -> None:
    if fn in _observers:
        _observers.remove(fn)


def notify(note: NumbaNote) -> None:
    # a copy: a background compile may note while an observer is being removed
    for fn in list(_observers):
        fn(note)
