"""Version shims (3.9-3.13), kept apart so the other modules read the same on every version."""
from __future__ import annotations

import sys
import threading
import types
from typing import Any, Callable, Optional

HAS_GETPROFILE = sys.version_info >= (3, 10)


def thread_profile_hook() -> Optional[Callable[..., Any]]:
    """The hook that threading installs on new threads (threading.getprofile is 3.10+)."""
    if HAS_GETPROFILE:
        return threading.getprofile()
    return threading._profile_hook  # type: ignore[attr-defined]  # pragma: no cover


def code_qualname(code: types.CodeType) -> str:
    """co_qualname exists from 3.11; before that the plain name is the best we have."""
    return getattr(code, "co_qualname", code.co_name)
