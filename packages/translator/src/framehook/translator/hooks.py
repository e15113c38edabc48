"""User hooks passed to optimize()."""

from __future__ import annotations

import traceback
import types
from dataclasses import dataclass
from typing import Any, Callable, List, NamedTuple, Optional

__all__ = ["Hooks", "GuardFail"]


class GuardFail(NamedTuple):
    """Passed to guard_fail_fn when a cached entry's guards fail and the frame recompiles."""

    reason: str
    orig_code: types.CodeType
    # the Python stack at the call that missed the cache, outermost first (framehook's own frames left out)
    user_stack: Optional[traceback.StackSummary] = None


@dataclass
class Hooks:
    guard_export_fn: Optional[Callable[[List[Any]], Any]] = None
    guard_fail_fn: Optional[Callable[[GuardFail], Any]] = None
    guard_filter_fn: Optional[Callable[[List[Any]], Any]] = None
