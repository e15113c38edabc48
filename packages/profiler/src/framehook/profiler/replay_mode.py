"""The ``profiled`` replay mode, registered under the ``framehook.replay_modes`` entry
point group for ``framehook replay`` (framehook-records)."""

from __future__ import annotations

from typing import Any, Callable, Dict

__all__ = ["profiled_replay"]


def profiled_replay(fn: Callable[..., Any], run: Callable[[Callable[..., Any]], Any]) -> Dict[str, Any]:
    """``run`` the function while a Profiler records: profiling must not change its outcome."""
    from ._profiler import Profiler

    with Profiler():
        outcome = run(fn)
    return {"outcome": outcome}
