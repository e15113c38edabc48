"""The conformance case registry: ``@case(*args, **kwargs)`` registers one call of a function.

Stack several ``@case`` decorators for several inputs. A module may set MIN_VERSION when
its syntax needs a newer CPython than 3.9; its golden records then carry that note.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    args: tuple
    kwargs: dict
    min_version: tuple = (3, 9)
    notes: list = field(default_factory=list)


CASES: list[Case] = []


def case(*args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        module = fn.__module__.rsplit(".", 1)[-1]
        base = f"{module}.{fn.__name__}"
        same = [c for c in CASES if c.fn is fn]
        name = base if not same else f"{base}.{len(same) + 1}"
        min_version = tuple(fn.__globals__.get("MIN_VERSION", (3, 9)))
        CASES.append(Case(name, fn, args, kwargs, min_version))
        return fn
    return register
