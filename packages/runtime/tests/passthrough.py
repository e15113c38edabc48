"""The pass-through callback used across the runtime's tests (importable without pytest,
so subprocess runners do not drag in pytest's monkeypatches)."""
from __future__ import annotations

import framehook.runtime as rt


def always_true(f_locals):
    return True


class PassThrough:
    """Intercepts every frame and runs a distinct copy of its code behind a true guard."""

    def __init__(self) -> None:
        self.calls = 0
        self.codes = set()

    def __call__(self, frame, cache_entry, frame_state):
        self.calls += 1
        self.codes.add(frame.f_code)
        return rt.GuardedCode(frame.f_code.replace(), always_true)
