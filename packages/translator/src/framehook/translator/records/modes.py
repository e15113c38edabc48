"""The ways a recorded frame is re-executed: plain, shadow frames, translator, profiler.

Each mode is detected at run time; a mode whose package (or feature) is not installed
is skipped with a reason, never reported as a pass.
"""
from __future__ import annotations

import importlib
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from . import driver

MODES = ("plain", "shadow", "translator", "profiler")


@dataclass
class ModeRun:
    outcome: driver.Outcome | None = None
    skip: str | None = None                  # reason the mode could not run
    problems: list = field(default_factory=list)   # mode-specific failures (e.g. frame not intercepted)
    intercepted: int | None = None
    decisions: dict | None = None


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def unavailable(mode: str) -> str | None:
    """None when the mode can run here, else why not."""
    if mode == "plain":
        return None
    if mode == "shadow":
        rt = _import("framehook.runtime")
        if rt is None:
            return "framehook.runtime is not installed"
        if not all(hasattr(rt, n) for n in ("enable", "GuardedCode", "reset_code")):
            return "framehook.runtime lacks enable/GuardedCode/reset_code"
        return None
    if mode == "translator":
        tr = _import("framehook.translator")
        try:
            optimize = getattr(tr, "optimize", None)
        except ImportError as exc:   # the package resolves optimize lazily
            return f"framehook.translator.optimize is not importable yet ({exc})"
        if not callable(optimize):
            return "framehook.translator.optimize is not available yet"
        return None
    if mode == "profiler":
        prof = _import("framehook.profiler")
        if prof is None:
            return "framehook.profiler is not installed"
        if _profiler_context(prof) is None:
            return "framehook.profiler has no profile()/Profiler context manager"
        return None
    return f"unknown mode {mode!r}"


def _profiler_context(prof: Any) -> Callable[[], Any] | None:
    for name in ("profile", "Profiler"):
        factory = getattr(prof, name, None)
        if callable(factory):
            return factory
    return None


def run_mode(mode: str, fn: Callable[..., Any], args: tuple, kwargs: dict, kind: str,
             target_code: types.CodeType) -> ModeRun:
    reason = unavailable(mode)
    if reason is not None:
        return ModeRun(skip=reason)
    if mode == "plain":
        return ModeRun(outcome=driver.run(fn, args, kwargs, kind))
    if mode == "shadow":
        return _shadow(fn, args, kwargs, kind, target_code)
    if mode == "translator":
        return _translator(fn, args, kwargs, kind)
    return _profiler(fn, args, kwargs, kind)


def _always(f_locals: dict) -> bool:
    return True


def _shadow(fn: Callable[..., Any], args: tuple, kwargs: dict, kind: str, target_code: types.CodeType) -> ModeRun:
    rt = importlib.import_module("framehook.runtime")
    seen: list[types.CodeType] = []

    def pass_through(frame: Any, cache_entry: Any, frame_state: Any) -> Any:
        seen.append(frame.f_code)
        return rt.GuardedCode(frame.f_code.replace(), _always)

    # Cache entries from an earlier replay of the same code object would hide the frame.
    rt.reset_code(target_code)
    try:
        with rt.enable(pass_through):
            outcome = driver.run(fn, args, kwargs, kind)
    finally:
        for code in {id(c): c for c in seen}.values():
            rt.reset_code(code)
    run = ModeRun(outcome=outcome, intercepted=len(seen))
    if kind == "function" and not any(c is target_code for c in seen):
        run.problems.append("the recorded frame was not intercepted by the runtime")
    return run


def _translator(fn: Callable[..., Any], args: tuple, kwargs: dict, kind: str) -> ModeRun:
    tr = importlib.import_module("framehook.translator")
    optimized = tr.optimize(backend="eager")(fn)
    outcome = driver.run(optimized, args, kwargs, kind)
    decisions = None
    getter = getattr(tr, "last_decisions", None)
    if callable(getter):
        try:
            decisions = getter(fn)
        except Exception:
            decisions = None
    return ModeRun(outcome=outcome, decisions=decisions)


def _profiler(fn: Callable[..., Any], args: tuple, kwargs: dict, kind: str) -> ModeRun:
    prof = importlib.import_module("framehook.profiler")
    factory = _profiler_context(prof)
    assert factory is not None
    with factory():
        outcome = driver.run(fn, args, kwargs, kind)
    return ModeRun(outcome=outcome)
