"""Calling a function and capturing what it did, driving generators and coroutines to the end."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

MAX_EVENTS = 10_000

CO_GENERATOR = inspect.CO_GENERATOR
CO_COROUTINE = inspect.CO_COROUTINE
CO_ASYNC_GENERATOR = inspect.CO_ASYNC_GENERATOR
CO_ITERABLE_COROUTINE = inspect.CO_ITERABLE_COROUTINE


def code_kind(flags: int) -> str:
    if flags & CO_ASYNC_GENERATOR:
        return "async_generator"
    if flags & CO_COROUTINE:
        return "coroutine"
    if flags & (CO_GENERATOR | CO_ITERABLE_COROUTINE):
        return "generator"
    return "function"


@dataclass
class Outcome:
    kind: str  # "return" or "raise"
    value: Any = None
    exception: BaseException | None = None
    events: list = field(default_factory=list)  # [("yield" | "await", value)]


class _TooManyEvents(RuntimeError):
    pass


def _append(events: list, kind: str, value: Any) -> None:
    if len(events) >= MAX_EVENTS:
        raise _TooManyEvents(f"more than {MAX_EVENTS} yields/awaits")
    events.append((kind, value))


def _drive(gen: Any, events: list, kind: str) -> Any:
    """Send None until the generator or coroutine returns (no event loop: whatever a
    coroutine's awaited object yields is recorded as ``kind`` and answered with None)."""
    try:
        while True:
            _append(events, kind, gen.send(None))
    except StopIteration as stop:
        return stop.value
    finally:
        gen.close()


def _drive_async_generator(agen: Any, events: list) -> None:
    while True:
        step = agen.__anext__()
        try:
            while True:
                _append(events, "await", step.send(None))
        except StopIteration as stop:
            _append(events, "yield", stop.value)
        except StopAsyncIteration:
            return None
        finally:
            step.close()


def run(fn: Callable[..., Any], args: tuple, kwargs: dict, kind: str) -> Outcome:
    """Call ``fn(*args, **kwargs)`` and drive the result according to the code's kind."""
    events: list = []
    try:
        result = fn(*args, **kwargs)
        if kind == "generator" and inspect.isgenerator(result):
            value = _drive(result, events, "yield")
        elif kind == "coroutine" and inspect.iscoroutine(result):
            value = _drive(result, events, "await")
        elif kind == "async_generator" and inspect.isasyncgen(result):
            value = _drive_async_generator(result, events)
        else:
            value = result
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the outcome is the exception, SystemExit included
        return Outcome("raise", None, exc, events)
    return Outcome("return", value, None, events)
