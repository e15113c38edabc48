"""Tiered first calls: a graph's first calls run the eager code while its kernel compiles
in a background thread (one for the process, taking the queued kernels in turn); the
compiled entry point is used from the first call after it is ready.

A thread, not a process: a child process compiling into numba's on-disk cache would use
the second core and could be killed at the budget, but it must import numpy, numba and the
translator first (about a second) and rebuild the kernel's globals, which are not all
picklable; numba's compiler holds the GIL for much of its work, so a thread slows the
eager calls running meanwhile (they are time-sliced with it, never stalled for the whole
compile). The thread:

* runs with no frame callback (``runtime.call_with(None, ...)``; a new thread has none
  anyway): numba's own Python code is never traced;
* never raises into anybody's call: whatever goes wrong is a fallback with an FH016 note;
* is a daemon, so a process does not wait for the compiles still queued; it waits, at exit,
  for the one in progress (``at_exit``: exiting during an LLVM call crashes the process),
  and numba writes its cache files and framehook its markers to a temporary name first,
  then renames, so a process killed mid-compile leaves no corrupt entry;
* writes into the ``NumbaGraph`` only: a graph the translator dropped meanwhile (its
  guards failed, it was recompiled) gets a kernel nobody calls, which does no harm.

A compile that is still running ``config.numba_compile_budget`` seconds after it started
leaves the graph eager for good (FH016), and a ``slow`` marker in the cache directory keeps
the next process from trying again; the thread cannot be stopped, its result is dropped.
A kernel an earlier process compiled is loaded from the cache the same way, in the
background: loading takes 10-50 ms, and importing numba a quarter of a second more, which
a first call is spared.

A job queued during a call is held until that call's eager run has returned (``release``):
started at once, the compiler would take the GIL in turns with the very call it is meant
to spare, about doubling it (numba's import alone is a quarter of a second of mostly
GIL-holding work). The thread then waits until no graph has returned from an eager run
for ``QUIET`` seconds (at most ``MAX_WAIT``): a call with a graph break runs more graphs
after the first one returned, and a load beginning between them took the GIL in turns with
the rest of the call (radial_profile's warm first call: 31 ms, 10 ms once the load waited).
"""

from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import time
from typing import Any, Optional, Sequence, Tuple

from ..._runtime import runtime
from ...config import config
from . import diskcache
from .notes import NumbaNote

__all__ = ["entry", "release", "start", "budget_marker", "wait"]


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


def _remembered_slow(graph: Any) -> bool:
    """An earlier process found this kernel over the budget: the graph falls back."""
    slow = diskcache.read_marker(budget_marker(graph))
    if slow is not None and graph.fallback_reason is None:
        graph._fall_back(slow)
    return slow is not None


#: the compiler starts a job once no eager run of a graph has ended for this long (seconds)
QUIET = 0.02
#: ... or once it has waited this long for that
MAX_WAIT = 0.2


class _Compiler:
    """One daemon thread compiling the queued kernels in turn: numba's compiler takes a
    process-wide lock anyway, and a thread per graph would time-slice the user's thread
    with all of them. A job's budget counts from when the thread takes it up, not from
    when it was queued behind others."""

    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[Tuple[Any, Tuple[Any, ...], Tuple[Any, ...]]]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._pid = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._unfinished = 0
        self._held: "list[Tuple[Any, Tuple[Any, ...], Tuple[Any, ...]]]" = []
        self._busy: Optional[str] = None  # the graph being compiled now
        self._exiting = False
        self._exit_hook = False
        self._released_at = 0.0  # when a graph's eager run last ended (``release``)

    def hold(self, graph: Any, key: Tuple[Any, ...], args: Tuple[Any, ...]) -> None:
        """Queue a job that starts at the next ``release`` (counted by ``wait`` already)."""
        with self._lock:
            self._unfinished += 1
            self._held.append((graph, key, args))

    def start(self) -> None:
        """Start the thread (idle until a job comes) unless it runs: a fork's child has none."""
        with self._lock:
            self._start_locked()

    def _start_locked(self) -> None:
        # the thread never ends in the process that started it; a fork's child has none (a
        # pid compare, where Thread.is_alive is three Python calls meeting the frame callback)
        if self._thread is None or self._pid != os.getpid():
            self._thread = threading.Thread(target=self._work, name="framehook-numba-compiler", daemon=True)
            self._thread.start()
            self._pid = os.getpid()
            if not self._exit_hook:
                self._exit_hook = True
                atexit.register(self.at_exit)

    def at_exit(self) -> None:
        """Let the compile in progress end before the interpreter does: numba's LLVM calls
        run without the GIL, so a daemon thread inside one keeps running while the process
        exits, and LLVM's own teardown then crashes it (an abort or a segfault after the
        user's script ended, measured on half the exits during a 41 s compile). Queued
        compiles are dropped; a wait over a second is said on stderr, once."""
        with self._idle:
            self._exiting = True
            if self._busy is None or self._thread is None or not self._thread.is_alive():
                return
            if not self._idle.wait_for(lambda: self._busy is None, 1.0):
                sys.stderr.write(
                    f"framehook: waiting for numba to finish compiling {self._busy} in the background before "
                    "exiting (config.numba_background=False compiles in the call instead)\n"
                )
                sys.stderr.flush()
                self._idle.wait_for(lambda: self._busy is None)

    def release(self) -> None:
        self._released_at = time.perf_counter()
        if not self._held:  # the common case
            return
        with self._lock:
            held, self._held = self._held, []
            self._start_locked()
        for job in held:
            self._jobs.put(job)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait until every queued compile has ended; False if ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._unfinished == 0, timeout)

    def _wait_quiet(self) -> None:
        """Sleep (without the GIL) while graphs keep returning from eager runs: the call that
        queued the job may not be over."""
        start = time.perf_counter()
        while not self._exiting:
            now = time.perf_counter()
            idle, waited = now - self._released_at, now - start
            if idle >= QUIET or waited >= MAX_WAIT:
                return
            time.sleep(min(QUIET - idle, MAX_WAIT - waited))

    def _work(self) -> None:
        while True:
            graph, key, args = self._jobs.get()
            self._wait_quiet()
            with self._idle:
                start = not self._exiting  # the process is exiting: no new compile
                self._busy = getattr(getattr(graph, "graph", None), "name", "a graph") if start else None
            try:
                if start:
                    _compile_one(graph, key, args)
            finally:
                with self._idle:
                    self._busy = None
                    self._unfinished -= 1
                    self._idle.notify_all()
            del graph, args  # hold no user arrays while idle


def _compile_one(graph: Any, key: Tuple[Any, ...], args: Tuple[Any, ...]) -> None:
    try:
        # fell back while queued (over budget, a rerun limit), or an earlier process found it
        # slow (the marker is read here: no file access in the call that queued it)
        if graph.fallback_reason is not None or not graph.lower_now() or _remembered_slow(graph):
            return
        started = graph._jobs[key] = time.perf_counter()
        runtime.call_with(None, graph._prepare_untraced, key, args)
        budget = config.numba_compile_budget
        took = time.perf_counter() - started
        if budget is not None and took > budget:
            _over_budget(graph, took, budget)
    except BaseException:  # noqa: BLE001 - nothing may escape a background thread
        pass


_compiler = _Compiler()


def wait(timeout: Optional[float] = None) -> bool:
    """Wait until the background compiles queued so far have ended (benchmarks and tests:
    a user's calls never need to); False if ``timeout`` seconds passed first."""
    return _compiler.wait(timeout)


def start() -> None:
    """Start the compiler thread now, idle: ``optimize("numba")`` calls it, so that no
    first call pays for starting a thread (0.3-3 ms measured, the new thread and the
    caller taking the GIL in turns)."""
    if config.numba_background:
        _compiler.start()


def release() -> None:
    """Start the compiles queued during the call that has just run eager; the graph calls
    it when its eager run returns or raises."""
    _compiler.release()


def entry(graph: Any, key: Tuple[Any, ...], args: Sequence[Any]) -> Any:
    """The graph's entry point for these argument types, or None (the call runs eager, then
    calls ``release``): compiled now (``config.numba_background`` off), or queued for the
    background compiler; past the budget, the graph falls back."""
    if key not in graph._jobs:
        if not config.numba_background:
            if not graph.lower_now() or _remembered_slow(graph):
                return None
            return graph._ready.get(key) if graph._prepare(key, args) else None
        graph._jobs[key] = None  # queued: the budget starts when the compiler takes it up
        _compiler.hold(graph, key, tuple(args))
        graph._note(NumbaNote(graph.graph.name, "pending", "", graph.lowering_seconds))
        return None
    ready = graph._ready.get(key)
    started = graph._jobs[key]
    budget = config.numba_compile_budget
    if ready is None and started is not None and budget is not None:
        took = time.perf_counter() - started
        if took > budget:
            _over_budget(graph, took, budget)
    return ready
