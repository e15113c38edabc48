"""Profiler: starts and stops the C tracer and hands its recording to a Profile."""

from __future__ import annotations

import atexit
import os
import sys
import threading
import types
import warnings
import weakref
from typing import Any, Callable, FrozenSet, List, Optional

from . import _tagging, _tracer
from ._compat import thread_profile_hook
from ._names import PathShortener
from ._profile import Profile
from ._recording import Recording
from ._threadnames import ThreadNames


class ProfilerWarning(RuntimeWarning):
    """Raised as a warning when a profiler cannot record (another one already is)."""


class Profiler:
    """Records every Python and C call of every thread between start() and stop().

    Use as a context manager (``with Profiler() as prof: ...; prof.profile``) or call
    start() and stop(); stop() returns the :class:`Profile`. Only one profiler records at a
    time: starting a second one warns, and it records nothing.

    A profiler still recording when the interpreter exits is stopped by an ``atexit``
    handler (registered by start(), removed by stop()), while the interpreter is still
    whole; nothing else happens at exit. stop() called afterwards (by an exit handler of
    the program's) returns the profile recorded until then.

    In a child forked while it records, the profiler is ``"forked"``: the recording is the
    parent's, so the child's copy is taken off at the fork (os.register_at_fork) and
    records nothing more; stop(), ``profile`` and export() raise RuntimeError there, so
    that the child never writes over what the parent writes.

    c_calls: also record calls of C functions (builtins, methods of C types).
    runtime_events: record framehook-runtime's cache lookups and compiled regions when
        that package is installed.
    backend: how calls are seen. ``"monitoring"``: C callbacks registered with
        sys.monitoring (CPython 3.12+); ``"profile"``: a C profile function on every
        thread (every version); ``"auto"`` (the default): the faster one for this
        interpreter, which is ``"monitoring"`` on 3.12+ (see BENCHMARKS.md). The trees are
        the same either way.
    max_events: keep only the newest ``max_events`` events of each thread (None: all).
        Older events are folded into the aggregates as they are dropped, so pstats, the
        summary and the flame graph stay exact; the trees and the event outputs (Chrome
        trace, speedscope) show the newest events, and every output says how many were
        dropped.
    async_tasks: give each asyncio task a track of its own, as if it were a thread: the
        task's coroutine frames form its own tree, with the time between its steps shown
        as ``await`` frames; on its thread, each step is a frame named after the task.
        A task's name is the one it has when recording stops (or when it was last seen).
    """

    def __init__(
        self,
        *,
        c_calls: bool = True,
        runtime_events: bool = True,
        backend: str = "auto",
        max_events: Optional[int] = None,
        async_tasks: bool = False,
    ) -> None:
        self.max_events = check_max_events(max_events)
        self.async_tasks = _check_flag("async_tasks", async_tasks)
        self.c_calls = _check_flag("c_calls", c_calls)
        self.runtime_events = _check_flag("runtime_events", runtime_events)
        self.backend = resolve_backend(backend)
        self._tracer: Optional[Any] = None
        self._state = "new"
        self._profile: Optional[Profile] = None
        self._thread_names = ThreadNames()
        # code of frames that launched the profiled program (the command line's own), hidden
        # like the profiler's internals
        self._launcher_codes: FrozenSet[types.CodeType] = frozenset()
        # code whose calls are left out with everything they call (the command line's own
        # work after the script's code ended, on the main thread)
        self._muted_codes: FrozenSet[types.CodeType] = frozenset()
        # sys.path as recording stops, by which file names are shortened when the trees
        # are built (later: the program may have changed it by then)
        self._shorten: Optional[PathShortener] = None
        self._prev_thread_hook: Optional[Callable[..., Any]] = None
        self._exit_hook: Optional[_ExitHook] = None
        self._stopped_at_exit = False
        self._pid = 0  # the process that started recording (a forked child is another)

    @property
    def state(self) -> str:
        """new, recording, refused (another profiler was recording), stopped, or forked (in
        a child forked while it recorded: the recording is the parent's)."""
        return self._state

    @property
    def recording(self) -> bool:
        return self._state == "recording"

    def start(self) -> "Profiler":
        if self._state != "new":
            raise RuntimeError(
                f"Profiler.start(): this profiler is {self._state}; a profiler records once (create a new one)"
            )
        self._pid = os.getpid()
        self._tracer = _tracer.Tracer(
            c_calls=self.c_calls,
            tagged=_tagging.tagged_codes(),
            describe=_tagging.describe,
            runtime_events=self.runtime_events,
            monitoring=self.backend == "monitoring",
            hidden=tuple(_internal_codes() | self._launcher_codes),
            muted=tuple(self._muted_codes),
            max_events=self.max_events,
            current_task=_current_task() if self.async_tasks else None,
        )
        self._prev_thread_hook = thread_profile_hook()
        threading.setprofile(self._thread_hook)
        # (after the hook is set: a thread starting meanwhile is named one way or the other)
        self._thread_names.note_start()
        self._exit_hook = _ExitHook(self)
        atexit.register(self._exit_hook)
        this = weakref.ref(self)  # (for the fork handler, once recording)
        try:
            started = self._tracer.start()  # last: nothing after it is recorded here
        except BaseException:
            self._undo_start()
            self._state = "stopped"
            raise
        if not started:
            self._undo_start()
            self._state = "refused"
            warnings.warn(
                "another framehook profiler is already recording; this one will record nothing",
                ProfilerWarning,
                stacklevel=2,
            )
            return self
        self._state = "recording"
        _RECORDING[0] = this  # (a store: no call, nothing recorded)
        return self

    def stop(self) -> Profile:
        if self._state == "forked":
            raise RuntimeError(_forked_message(self._pid, "stop()"))
        if self._state == "new":
            raise RuntimeError("Profiler.stop() called before start()")
        if self._state == "stopped":
            if self._stopped_at_exit:  # by our exit handler, before the program's own ran
                return self.profile
            raise RuntimeError("Profiler.stop(): this profiler is already stopped")
        if self._state == "refused":
            assert self._tracer is not None
            self._tracer.stop()
            self._state = "stopped"
        else:
            self._halt()
            if self._state == "forked":  # (a fork the fork handler did not see)
                raise RuntimeError(_forked_message(self._pid, "stop()"))
        return self.profile

    @property
    def profile(self) -> Profile:
        """The recorded profile (its trees are built on first access). Only after stop()."""
        if self._state == "forked":
            raise RuntimeError(_forked_message(self._pid, "the profile"))
        if self._state != "stopped":
            raise RuntimeError(f"the profile is available after stop(); the profiler is {self._state}")
        if self._profile is None:
            self._profile = self._build()
        return self._profile

    def export(self, path: Any, format: Optional[str] = None) -> str:
        """Shortcut for ``profile.export``: raises RuntimeError before stop()."""
        if self._state == "forked":
            raise RuntimeError(_forked_message(self._pid, "export()"))
        if self._state != "stopped":
            raise RuntimeError(f"export() needs a stopped profiler; this one is {self._state} (call stop() first)")
        return self.profile.export(path, format)

    def __enter__(self) -> "Profiler":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._state == "recording":
            self._halt()  # (the profile is built when asked for; a forked child raises nothing here)
        elif self._state == "refused":
            self.stop()

    # Late in interpreter exit this module's globals, and even the builtins, may be gone:
    # nothing is looked up by name before the interpreter is known not to be finalizing
    # (what is needed then is bound as a default, at definition).
    def __del__(
        self, _is_finalizing: Callable[[], bool] = sys.is_finalizing, _warn: Callable[..., None] = warnings.warn
    ) -> None:
        if self.__dict__.get("_state") != "recording":
            return
        if _is_finalizing():
            # Started after the exit handlers ran: only the C tracer is stopped (off every
            # thread), which runs no code of this package.
            self._state = "stopped"
            tracer = self._tracer
            if tracer is not None and tracer.state == "recording":
                tracer.stop()
            return
        _warn("a Profiler was garbage-collected while recording; stopping it", ProfilerWarning)
        self._halt()

    # internals -----------------------------------------------------------------------
    def _halt(self) -> None:
        """Stops recording (the profile is built later, on demand)."""
        assert self._tracer is not None
        if self._tracer.state == "recording":  # (unless the tracer was stopped directly)
            self._tracer.stop()  # first: the rest is not the program's time
        self._state = "stopped"
        self._undo_start()
        if self._pid != os.getpid():
            # A child forked while recording that the fork handler did not reach (C code
            # calling fork(2) itself): the recording is the parent's. (Asked only now
            # that nothing records: the program's profile does not show the question.)
            self._state = "forked"
            return
        self._thread_names.note_stop()
        self._shorten = PathShortener()

    def _undo_start(self) -> None:
        if _RECORDING[0] is not None and _RECORDING[0]() is self:
            _RECORDING[0] = None
        threading.setprofile(self._prev_thread_hook)
        if self._exit_hook is not None:
            atexit.unregister(self._exit_hook)
            self._exit_hook = None

    def _stop_at_exit(self) -> None:
        if self._state == "recording":
            self._halt()
            self._stopped_at_exit = True

    def _disown(self) -> None:
        """In a child forked while recording: the recording is the parent's. The tracer is
        taken off this process's only thread (and sys.monitoring), restoring what it had
        before, and the slot of the single recorder is freed, so that the child may record
        with a profiler of its own; the exit handler goes. The inherited buffers are left
        as they are: untouched, they stay shared with the parent at no cost (freeing them
        would write to every block, copying it), and go with this object."""
        if self._state != "recording":
            return
        self._state = "forked"
        tracer = self._tracer
        if tracer is not None and tracer.state == "recording":
            tracer.stop()
        self._undo_start()

    def _hide_launcher(self, frame: Optional[types.FrameType]) -> None:
        """Hides ``frame`` and its callers from the trees: the code that launched the
        profiled program rather than the program itself."""
        codes = set()
        while frame is not None:
            codes.add(frame.f_code)
            frame = frame.f_back
        self._launcher_codes = self._launcher_codes | frozenset(codes)

    def _mute(self, *funcs: Callable[..., Any]) -> None:
        """Leaves calls of these functions out of the trees, with everything they call."""
        self._muted_codes = frozenset(f.__code__ for f in funcs)

    def _thread_hook(self, frame: types.FrameType, event: str, arg: Any) -> None:
        # Runs as the Python-level profile function of a thread threading started while
        # recording, once: the tracer replaces it with the C profile function, and says
        # which of its contexts records the thread, which is named after it.
        if self._tracer is not None:
            self._thread_names.note_thread_started(self._tracer.thread_hook(frame, event, arg))

    def _build(self) -> Profile:
        """The profile, its trees not built: as cheap as the number of threads."""
        assert self._tracer is not None
        if self._tracer.state == "new":  # refused before it ever recorded
            return Profile(Recording(None, {}))
        recording = Recording(
            self._tracer,
            self._thread_names.names(self._tracer.threads, self._tracer.tasks),
            _internal_codes() | self._launcher_codes,
            self._muted_codes,
            self._shorten,
        )
        return Profile(recording)


# The profiler recording in this process (a weak reference), for the fork handler.
_RECORDING: List[Optional["weakref.ReferenceType[Profiler]"]] = [None]


def _after_fork_in_child() -> None:
    """Runs in the child of every fork (os.fork, multiprocessing's fork start method,
    subprocess with preexec_fn...), before the child's code goes on: a profiler recording
    in the parent is disowned (Profiler._disown)."""
    ref = _RECORDING[0]
    prof = ref() if ref is not None else None
    if prof is not None:
        prof._disown()
    tracer = _tracer.active()
    if tracer is not None:  # one started without a Profiler (the internal API)
        tracer.stop()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _forked_message(pid: int, what: str) -> str:
    return (
        f"{what}: this profiler recorded in process {pid}, and this process ({os.getpid()}) is a fork of it: "
        "the recording is the parent's (a forked child is not recorded, and never writes the parent's profile)"
    )


class _ExitHook:
    """The atexit handler of one recording profiler: stops it while the interpreter is
    whole. Holds it weakly, so that a profiler dropped while recording is still
    garbage-collected (and stopped by __del__)."""

    __slots__ = ("_ref",)

    def __init__(self, prof: Profiler) -> None:
        self._ref = weakref.ref(prof)

    def __call__(self) -> None:
        prof = self._ref()
        if prof is not None:
            prof._stop_at_exit()


BACKENDS = ("auto", "monitoring", "profile")


def _current_task() -> Callable[[], Any]:
    import asyncio  # (only for async_tasks: a program without asyncio never loads it)

    return asyncio.current_task


def _check_flag(name: str, value: bool) -> bool:
    # a string such as "no" is true: taken as given, it would do the opposite of what was meant
    if not isinstance(value, bool):
        raise TypeError(f"Profiler({name}=...) must be True or False; got {value!r}")
    return value


def check_max_events(max_events: Optional[int]) -> Optional[int]:
    if max_events is None:
        return None
    if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
        raise ValueError(f"max_events must be an int >= 1 or None; got {max_events!r}")
    return max_events


def default_backend() -> str:
    """The backend "auto" stands for on this interpreter (the faster one, as measured)."""
    return "monitoring" if _tracer.HAVE_MONITORING else "profile"


def resolve_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}; got {backend!r}")
    if backend == "auto":
        return default_backend()
    if backend == "monitoring" and not _tracer.HAVE_MONITORING:
        raise ValueError(
            "backend='monitoring' needs CPython 3.12+ (sys.monitoring); this is %d.%d" % sys.version_info[:2]
        )
    return backend


def _internal_codes() -> FrozenSet[types.CodeType]:
    """Code of the profiler's own start/stop path, hidden from the trees."""
    funcs = (
        Profiler.start,
        Profiler.stop,
        Profiler.__enter__,
        Profiler.__exit__,
        Profiler.__del__,
        Profiler._halt,
        Profiler._stop_at_exit,
        _ExitHook.__call__,
        Profiler._thread_hook,
        ThreadNames.note_thread_started,
    )
    return frozenset(f.__code__ for f in funcs)
