"""Tiered first calls: a graph's first calls run the eager code while its kernel compiles
in a background thread; the compiled entry point is used from the first call after it is
ready.

A thread, not a process: a child process compiling into numba's on-disk cache would use
the second core and could be killed at the budget, but it must import numpy, numba and the
translator first (about a second) and rebuild the kernel's globals, which are not all
picklable; numba's compiler holds the GIL for much of its work, so a thread slows the
eager calls running meanwhile (they are time-sliced with it, never stalled for the whole
compile). The thread:

* runs with no frame callback (``runtime.call_with(None, ...)``; a new thread has none
  anyway): numba's own Python code is never traced;
* never raises into anybody's call: whatever goes wrong is a fallback with an FH016 note;
* is a daemon, so a process exits without waiting for it; numba writes its cache files
  and framehook its markers to a temporary name first, then renames: an exit mid-compile
  leaves no corrupt entry;
* writes into the ``NumbaGraph`` only: a graph the translator dropped meanwhile (its
  guards failed, it was recompiled) gets a kernel nobody calls, which does no harm.

A compile that is still running ``config.numba_compile_budget`` seconds after it started
leaves the graph eager for good (FH016), and a ``slow`` marker in the cache directory keeps
the next process from trying again; the thread cannot be stopped, its result is dropped.
A kernel an earlier process compiled is loaded from the cache the same way, in the
background: loading takes 10-50 ms, and importing numba a quarter of a second more, which
a first call is spared.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Sequence, Tuple

from ..._runtime import runtime
from ...config import config
from . import diskcache
from .notes import NumbaNote

__all__ = ["entry", "budget_marker"]


def budget_marker(graph: Any) -> str:
    return os.path.join(diskcache.cache_dir(), f"fh_{graph.lowered.key}.slow")


def _over_budget(graph: Any, seconds: float, budget: float) -> None:
    reason = (
        f"compiling took over the budget of {budget:g} s (config.numba_compile_budget; "
        f"{seconds:.1f} s so far): runs eager; remembered in the cache for later processes"
    )
    if graph.fallback_reason is None:
        graph._fall_back(reason)
    if diskcache.usable_dir() is not None:
        diskcache.write_marker(budget_marker(graph), reason)


def _compile_in_background(graph: Any, key: Tuple[Any, ...], args: Tuple[Any, ...], started: float) -> None:
    try:
        runtime.call_with(None, graph._prepare_untraced, key, args)
        budget = config.numba_compile_budget
        took = time.perf_counter() - started
        if budget is not None and took > budget:
            _over_budget(graph, took, budget)
    except BaseException:  # noqa: BLE001 - nothing may escape a background thread
        pass


def entry(graph: Any, key: Tuple[Any, ...], args: Sequence[Any]) -> Any:
    """The graph's entry point for these argument types, or None (the call runs eager):
    compiled now (``config.numba_background`` off), or started compiling
    in the background; past the budget, the graph falls back."""
    started = graph._jobs.get(key)
    if started is None:
        slow = diskcache.read_marker(budget_marker(graph))
        if slow is not None:
            graph._fall_back(slow)
            return None
        if not config.numba_background:
            return graph._ready.get(key) if graph._prepare(key, args) else None
        started = graph._jobs[key] = time.perf_counter()
        thread = threading.Thread(
            target=_compile_in_background,
            args=(graph, key, tuple(args), started),
            name=f"framehook-numba-{graph.graph.name}",
            daemon=True,
        )
        thread.start()
        graph._note(NumbaNote(graph.graph.name, "pending", "", graph.lowering_seconds))
        return None
    budget = config.numba_compile_budget
    if budget is not None and key not in graph._ready:
        took = time.perf_counter() - started
        if took > budget:
            _over_budget(graph, took, budget)
    return graph._ready.get(key)
