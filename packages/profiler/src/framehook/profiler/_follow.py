"""Following child processes (``framehook-profile --follow``): every Python process the
profiled script starts records itself and writes its own part, which the command line
merges into its one output.

How children are reached:
- ``os.fork`` (and multiprocessing's fork start method, and a forkserver's workers): a
  fork handler starts a fresh profiler in the child, the parent's being disowned there.
- new interpreters (``subprocess``, multiprocessing's spawn, the forkserver itself): an
  environment variable says where parts go, and a ``sitecustomize`` module put first on
  ``PYTHONPATH`` starts a profiler as the interpreter starts, then imports the
  ``sitecustomize`` it hid, if any.

A child writes its part when it exits: normally (``atexit``), through ``os._exit`` (what
forked multiprocessing workers end with), or by SIGTERM (``Pool.terminate``), after
which the signal still ends it. The SIGTERM handler runs in Python, at the main thread's
next check for signals: a SIGTERM that came just before the thread blocked (a pool
worker waiting for a task), or that reached a fork before ``os.fork()`` returned there
(CPython clears its flag then), would never run it, so the C side re-delivers the signal
to the main thread until it runs (``_tracer.sigterm_guard``, csrc/sigterm.c). Each child
first writes a ``<pid>.started`` file: one that never writes ``<pid>.done`` (killed,
crashed) is named by the merge as missing. Without ``--follow`` nothing of this happens,
and children never write.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import sys
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Set

from . import _tracer
from ._export import replacing
from ._profiler import Profiler

ENV = "FRAMEHOOK_PROFILE_FOLLOW"
BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_follow_boot")
# Formats a part is written in, for the output's format: a flame graph is merged from
# collapsed stacks (its widths are their times), everything else from its own format.
PART_FORMAT = {"svg": "collapsed", "html": "collapsed"}
WAIT_SECONDS = 10.0  # how long the merge waits for children still running
ANNOUNCE_SECONDS = 2.0  # how long it waits for a child process to say whether it records
# multiprocessing's helper processes live as long as their parent: never waited for, and
# not profiled (a forkserver's workers are: its fork handler is installed all the same)
_HELPERS = ("multiprocessing.resource_tracker import main", "multiprocessing.forkserver import main")


class FollowError(ValueError):
    """--follow cannot work here (no directory for the parts)."""


def part_format(fmt: str) -> str:
    return PART_FORMAT.get(fmt, fmt)


def _command() -> List[str]:
    """This process's command line, as started (before sys.argv is set, in sitecustomize)."""
    argv = getattr(sys, "orig_argv", None)
    if argv:
        return list(argv)
    try:
        with open("/proc/self/cmdline", "rb") as fh:
            return [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return list(sys.argv)


def _write_json(path: str, data: Dict[str, Any]) -> None:
    with replacing(path) as fh:  # (a reader never sees half of it)
        fh.write(json.dumps(data).encode())


def _is_helper(command: str) -> bool:
    """Is this command line one of multiprocessing's helper processes?"""
    return any(helper in command for helper in _HELPERS)


def _proc_stat(pid: int) -> List[str]:
    """The fields of /proc/<pid>/stat after the command name: state, parent pid, ...
    (Linux; OSError elsewhere, or when the process is gone)."""
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rpartition(")")[2].split()


# --- the parent -----------------------------------------------------------------------


class Follow:
    """The command line's side: a directory for the parts, the environment that children
    inherit, and the fork handler, while the script runs."""

    def __init__(self, output: str, fmt: str, options: Dict[str, Any]) -> None:
        import tempfile  # (here: children import this module as they start, and need it not)

        where = os.path.dirname(os.path.abspath(output))
        try:
            self.parts = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.parts-", dir=where)
        except OSError as exc:
            raise FollowError(f"--follow: cannot make a directory for the children's parts in {where} ({exc.strerror})")
        self.config = {"parts": self.parts, "format": part_format(fmt), "options": options}
        self._saved_env: Dict[str, Optional[str]] = {}

    def watch(self, prof: Profiler) -> None:
        """From now on, children record: forks through the handler, new interpreters
        through the environment."""
        for name, value in ((ENV, json.dumps(self.config)), ("PYTHONPATH", self._pythonpath())):
            self._saved_env[name] = os.environ.get(name)
            os.environ[name] = value
        _FOLLOWING[0] = self.config
        _WATCHED[0] = weakref.ref(prof)
        _announce_forks()
        prof._launcher_codes = prof._launcher_codes | _own_codes()

    def _pythonpath(self) -> str:
        current = os.environ.get("PYTHONPATH")
        return BOOT_DIR + (os.pathsep + current if current else "")

    def unwatch(self) -> None:
        _FOLLOWING[0] = _WATCHED[0] = None
        if _REAL_FORK is not None and os.__dict__.get("fork") is _announcing_fork:
            os.fork = _REAL_FORK
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def children(self, wait: float = WAIT_SECONDS, say: Callable[[str], None] = lambda text: None) -> "Children":
        """The children's parts, once every child still running has finished (waiting at
        most ``wait`` seconds). A child process not yet heard of (a new interpreter still
        starting when the script ended) is given ANNOUNCE_SECONDS to say it records."""
        start = time.monotonic()
        told = False
        while True:
            found = Children.scan(self.parts)
            running = [pid for pid in [*found.unfinished, *found.forked] if _alive(pid)]
            now = time.monotonic()
            unheard = [] if now - start >= ANNOUNCE_SECONDS else _unheard_children(found)
            if (not running and not unheard) or now - start >= wait:
                return found
            if not told and running and now - start > 1.0:
                say(f"waiting for {len(running)} child process(es) to finish (at most {wait:g} s)")
                told = True
            time.sleep(0.05)

    def cleanup(self) -> None:
        for name in os.listdir(self.parts):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.parts, name))
        with contextlib.suppress(OSError):
            os.rmdir(self.parts)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet waited for) has ended
        return _proc_stat(pid)[0] != "Z"
    except (OSError, IndexError):
        return True


def _unheard_children(found: "Children") -> List[int]:
    """This process's live child processes (Linux: /proc) that have not said whether they
    record: neither a part nor a start file, and not one of multiprocessing's helpers."""
    me, heard = os.getpid(), found.heard
    unheard = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) in heard:
            continue
        try:
            fields = _proc_stat(int(entry))
            if fields[0] == "Z" or int(fields[1]) != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                command = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        if not _is_helper(command):
            unheard.append(int(entry))
    return unheard


class Part:
    """One child's finished part."""

    def __init__(self, path: str, meta: Dict[str, Any]) -> None:
        self.path = path
        self.pid: int = meta["pid"]
        self.how: str = meta["how"]
        self.command: List[str] = meta["command"]
        self.start_ns: int = meta["start_ns"]

    @property
    def label(self) -> str:
        return f"{self.how} child {self.pid}: {describe(self.command)}"


def describe(command: List[str]) -> str:
    words = [os.path.basename(command[0])] + command[1:] if command else ["?"]
    text = " ".join(" ".join(words).split())  # (one line: `python -c` code has newlines)
    return text if len(text) <= 80 else text[:77] + "..."


class Children:
    def __init__(self, parts: List[Part], unfinished: Dict[int, Dict[str, Any]]) -> None:
        self.parts = parts
        self.unfinished = unfinished
        self.heard = {part.pid for part in parts} | set(unfinished)
        self.forked: Set[int] = set()

    @classmethod
    def scan(cls, directory: str) -> "Children":
        parts: List[Part] = []
        unfinished: Dict[int, Dict[str, Any]] = {}
        forked: Set[int] = set()
        for name in sorted(os.listdir(directory)):
            pid_text, _, kind = name.partition(".")
            if kind == "forked" and pid_text.isdigit():
                forked.add(int(pid_text))
            if kind != "started" or not pid_text.isdigit():
                continue
            pid = int(pid_text)
            started = _read_json(os.path.join(directory, name))
            done = _read_json(os.path.join(directory, f"{pid}.done"))
            if done is not None and os.path.exists(os.path.join(directory, f"{pid}.part")):
                parts.append(Part(os.path.join(directory, f"{pid}.part"), done))
            elif started is not None:
                unfinished[pid] = started
        parts.sort(key=lambda p: p.start_ns)
        found = cls(parts, unfinished)
        # forked, not yet recording: waited for while alive; one that ended so (killed
        # before its fork handler ran) ran none of its own code, and is not missing
        found.forked = forked - found.heard
        found.heard |= forked
        return found

    def missing(self) -> List[str]:
        return [
            f"{info.get('how', '?')} child {pid} ({describe(info.get('command', []))}) wrote no profile: "
            "it was killed, crashed or was still running"
            for pid, info in sorted(self.unfinished.items())
        ]


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --- the children ---------------------------------------------------------------------

# The config while the command line follows children (in its own process and in each
# child: a child's children are followed too).
_FOLLOWING: List[Optional[Dict[str, Any]]] = [None]
_CHILD: List[Optional["_Child"]] = [None]
# How a fork of this process is named: "forkserver" in multiprocessing's fork server (its
# children are the workers of the forkserver start method), "fork" anywhere else.
_FORK_KIND = ["fork"]
# The command line's profiler while it follows (a weak reference): a forked child hides
# the same launching frames it hides.
_WATCHED: List[Optional["weakref.ReferenceType[Profiler]"]] = [None]


class _Child:
    """This process's own recording, as a followed child."""

    def __init__(self, config: Dict[str, Any], how: str, command: List[str]) -> None:
        self.config = config
        self.how = how
        self.command = command
        self.pid = os.getpid()
        self.prof = Profiler(**config["options"])
        self.written = False
        self._writing = False
        self._killed_by = 0  # a signal that arrived while the part was being written
        self._real_exit: Optional[Callable[[int], Any]] = None

    def start(self, hidden: frozenset = frozenset(), muted: frozenset = frozenset()) -> bool:
        """Starts recording; False (nothing started) when the parts directory is gone: the
        command line has merged and ended, and a process still running forked late."""
        parts = self.config["parts"]
        if not os.path.isdir(parts):
            return False
        # the ways out first: a SIGTERM (Pool.terminate) from here on finds its handler, and
        # one that comes before recording begins withdraws the start file (_write_part)
        atexit.register(self.finish)
        self._real_exit = os.__dict__["_exit"]
        os._exit = self._exit_writing
        handler = signal.getsignal(signal.SIGTERM)
        # (the program's own handler is left alone; a followed parent's, inherited by a
        # fork, is this process's to replace)
        if handler is signal.SIG_DFL or getattr(handler, "__func__", None) is _Child._terminated:
            with contextlib.suppress(ValueError):  # (not the main thread: left as it is)
                signal.signal(signal.SIGTERM, self._terminated)
                # a SIGTERM just before a blocking call (a pool worker's sem_wait or read),
                # or one that came before this fork returned from os.fork(), would never
                # run the handler: re-delivered to this thread until it runs
                with contextlib.suppress(OSError):
                    _tracer.sigterm_guard(True)
        try:
            _write_json(
                os.path.join(parts, f"{self.pid}.started"),
                {"pid": self.pid, "ppid": os.getppid(), "how": self.how, "command": self.command},
            )
        except OSError:  # (removed meanwhile)
            self.written = True  # nothing to write at exit
            return False
        self.prof._launcher_codes = hidden | _own_codes()
        self.prof._muted_codes = muted
        self.prof.start()
        return True

    def _exit_writing(self, status: int) -> Any:
        """os._exit in a followed child: what forked multiprocessing workers end with."""
        self.finish()
        assert self._real_exit is not None
        return self._real_exit(status)

    def _terminated(self, signum: int, frame: Any) -> None:
        try:  # first: the guard re-delivers SIGTERM no more (not contextlib: it'd be recorded)
            _tracer.sigterm_seen()
        except OSError:
            pass
        if self._writing:
            # Pool.terminate() sends SIGTERM to workers that may be exiting on their own,
            # writing their part: it ends the process once the part is written.
            self._killed_by = signum
            return
        self.finish()
        self._end_by(signum)

    def _end_by(self, signum: int) -> None:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # ends the process as the signal would have

    def finish(self) -> None:
        """Writes the part, once (the first of the ways out to be taken)."""
        if self.written or os.getpid() != self.pid:
            return
        self.written = self._writing = True
        try:
            self._write_part()
        finally:
            self._writing = False
        if self._killed_by:
            self._end_by(self._killed_by)

    def _write_part(self) -> None:
        try:  # (stopped already by the Profiler's own exit handler: still its profile)
            profile = self.prof.stop()
        except RuntimeError:
            if self.prof.state == "new":  # ended before recording began: none of its code ran
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.config["parts"], f"{self.pid}.started"))
            return  # (forked away, or refused)
        parts = self.config["parts"]
        try:
            profile.export(os.path.join(parts, f"{self.pid}.part"), self.config["format"])
            _write_json(
                os.path.join(parts, f"{self.pid}.done"),
                {
                    "pid": self.pid,
                    "ppid": os.getppid(),
                    "how": self.how,
                    "command": _command() if self.how == "spawn" else self.command,
                    "start_ns": profile.start_ns,
                },
            )
        except OSError:
            pass  # the parent names this child as missing


_REAL_FORK: Optional[Callable[[], int]] = getattr(os, "fork", None)


def _announcing_fork() -> int:
    """os.fork while following: the parent announces the child itself (``<pid>.forked``),
    so that a child forked just before the script ends is waited for even if it has not
    yet run (it writes ``<pid>.started`` once it records)."""
    assert _REAL_FORK is not None
    pid = _REAL_FORK()
    config = _FOLLOWING[0]
    if pid > 0 and config is not None:
        with contextlib.suppress(OSError):
            _write_json(
                os.path.join(config["parts"], f"{pid}.forked"),
                {"pid": pid, "ppid": os.getpid(), "how": _FORK_KIND[0], "command": list(sys.argv)},
            )
    return pid


def _announce_forks() -> None:
    if _REAL_FORK is not None:
        os.fork = _announcing_fork  # (multiprocessing's fork start method calls os.fork too)


def _after_fork_in_child() -> None:
    config = _FOLLOWING[0]
    if config is None:
        return
    previous = _CHILD[0]
    if previous is not None and previous._real_exit is not None:
        os._exit = previous._real_exit  # (the parent's wrapper writes the parent's part)
    _CHILD[0] = None
    kind = _FORK_KIND[0]  # (a forkserver's argv is its own `-c` code: its command line says more)
    child = _Child(config, kind, list(sys.argv) if kind == "fork" else _command())
    _CHILD[0] = child
    watched = _WATCHED[0]
    parent = watched() if watched is not None else None
    if parent is not None:  # the command line's own frames, still on the stack here
        child.start(parent._launcher_codes, parent._muted_codes)
    else:
        child.start()


if hasattr(os, "register_at_fork"):  # (after the Profiler's own handler: it disowns first)
    os.register_at_fork(after_in_child=_after_fork_in_child)


def boot_from_environment() -> None:
    """Called by the ``sitecustomize`` of new interpreters that a followed process starts:
    starts recording this one, unless it is a helper of multiprocessing's."""
    text = os.environ.get(ENV)
    if not text:
        return
    try:
        config = json.loads(text)
        os.stat(config["parts"])
    except (ValueError, KeyError, TypeError, OSError):
        return  # (a stale variable: the command line that set it is gone)
    _FOLLOWING[0] = config
    _announce_forks()
    command = _command()
    joined = " ".join(command)
    if _is_helper(joined):
        if "forkserver" in joined:
            _FORK_KIND[0] = "forkserver"
        return
    child = _Child(config, "spawn", command)
    _CHILD[0] = child
    frame, hidden = sys._getframe(), set()
    while frame is not None:  # site's import of sitecustomize: not the program
        hidden.add(frame.f_code)
        frame = frame.f_back
    child.start(frozenset(hidden))


def _own_codes() -> frozenset:
    """This module's code that runs while a child records: hidden from its trees."""
    funcs = (
        _Child.start,
        _Child.finish,
        _Child._write_part,
        _Child._exit_writing,
        _Child._terminated,
        _Child._end_by,
        _after_fork_in_child,
        _announcing_fork,
    )
    return frozenset(f.__code__ for f in funcs) | {boot_from_environment.__code__}
