"""A callback that intercepts every frame and changes nothing: each frame runs a fresh copy
of its own code behind a guard that always holds, so the shadow-frame machinery runs
while the program's behaviour must stay the same.

    with enable(PassThrough()):
        work()

Used by ``framehook replay``'s shadow mode, the pytest plugin's ``--framehook-shadow``
and the differential fuzzer.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable, Dict, Optional

from ._C import CacheEntryInfo, FrameView, GuardedCode, cache_entries, reset_code
from .contexts import enable

__all__ = ["PassThrough", "always", "shadow_replay"]

# Frames of these kinds are created by the call and run later (when first resumed).
_DEFERRED = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


def always(f_locals: Dict[str, Any]) -> bool:
    """A guard that holds for every call."""
    return True


class PassThrough:
    """The pass-through callback; remembers the code objects it intercepted.

    ``calls`` counts cache misses (callback invocations), ``codes`` maps ``id(code)`` to
    each intercepted code object; ``reset()`` drops their cache entries.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.codes: Dict[int, types.CodeType] = {}
        self._copies: Dict[int, types.CodeType] = {}  # the code run in place of each, by id
        self._earlier_hits = 0  # hits of entries reset() dropped

    def __call__(
        self, frame: FrameView, cache_entry: Optional[CacheEntryInfo], frame_state: Dict[str, Any]
    ) -> GuardedCode:
        self.calls += 1
        code = frame.f_code
        self.codes[id(code)] = code
        copy = code.replace()
        self._copies[id(copy)] = copy
        return GuardedCode(copy, always)

    def _hits(self) -> int:
        # only this callback's entries: another callback may cache entries on the same code
        return sum(
            entry.hits
            for code in self.codes.values()
            for entry in cache_entries(code)
            if id(entry.code) in self._copies
        )

    def frames_seen(self) -> int:
        """Frames intercepted so far: callback invocations plus cache hits of its entries."""
        return self.calls + self._earlier_hits + self._hits()

    def reset(self) -> None:
        """Drop the cache entries of every intercepted code object (their hits stay counted
        in ``frames_seen()``; ``codes`` keeps listing the code objects)."""
        self._earlier_hits += self._hits()
        for code in self.codes.values():
            reset_code(code)
        self._copies.clear()


def shadow_replay(fn: Callable[..., Any], run: Callable[[Callable[..., Any]], Any]) -> Dict[str, Any]:
    """The ``shadow`` replay mode (entry point ``framehook.replay_modes``): ``run(fn)``
    under a PassThrough; reports the frames intercepted and, for a plain function, a
    problem when its own frame was not among them."""
    target = fn.__code__
    reset_code(target)  # entries from an earlier replay of the same code would hide the frame
    callback = PassThrough()
    try:
        with enable(callback):
            outcome = run(fn)
        intercepted = callback.calls
        seen = id(target) in callback.codes
    finally:
        callback.reset()
    problems = []
    if not seen and not target.co_flags & _DEFERRED:
        problems.append("the recorded frame was not intercepted by the runtime")
    return {"outcome": outcome, "intercepted": intercepted, "problems": problems}
