"""Translator decisions in a form comparable across interpreters and machines."""
from __future__ import annotations

import re
from typing import Any, Optional

# what the translator decided, without what only says where or when it ran
KEPT = ("guards", "graphs", "restarts", "recompile_reasons", "backend")
# guard texts may cut a long repr short with "..."
# (cut at any character, so the path is read up to its closing quote or the final "...")
_MODULE_REPR = re.compile(r"<module '([^']+)' (?:from '[^']*(?:'>|\.\.\.$)|\(built-in\)>|\(frozen\)>)")


def normalize(decisions: Optional[dict]) -> Optional[dict]:
    """Drops compile ids and install paths (module reprs name the module only)."""
    if not decisions:
        return None

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return _MODULE_REPR.sub(r"<module '\1'>", value)
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return {key: clean(decisions.get(key)) for key in KEPT if key in decisions}


def translate(fn, args, kwargs) -> Optional[dict]:
    """Runs fn once through the translator (eager), on copies of its arguments so that the
    case's own recording sees them untouched, and returns its normalized decisions."""
    import copy

    import framehook.translator as tr

    try:
        args, kwargs = copy.deepcopy((args, kwargs))
    except Exception:  # noqa: BLE001 - uncopyable arguments: no decisions for this case
        return None
    try:
        result = tr.optimize(backend="eager")(fn)(*args, **kwargs)
    except BaseException:  # noqa: BLE001 - the case's own exception is part of its outcome
        result = None
    if hasattr(result, "close") and hasattr(result, "send"):
        result.close()  # generator or coroutine objects: only the frame that made them ran
    return normalize(tr.last_decisions(fn))
