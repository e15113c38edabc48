"""The ``translator`` replay mode, registered under the ``framehook.replay_modes`` entry
point group for ``framehook replay`` (framehook-records)."""

from __future__ import annotations

from typing import Any, Callable, Dict

__all__ = ["translator_replay"]


def translator_replay(fn: Callable[..., Any], run: Callable[[Callable[..., Any]], Any]) -> Dict[str, Any]:
    """``run`` the function through ``optimize(backend="eager")``; reports the translator's
    decisions for it (guards, graphs) alongside the outcome."""
    from .conversion.convert_frame import last_decisions
    from .eval_frame import optimize

    outcome = run(optimize(backend="eager")(fn))
    return {"outcome": outcome, "decisions": last_decisions(fn)}
