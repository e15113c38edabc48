"""pytest plugin (entry point ``framehook``) for running a project's tests under framehook.

    --framehook-shadow              every frame intercepted by a pass-through callback
    --framehook-optimize=BACKEND    every test function run under the translator (a backend name
                                    it does not know, or cannot use here, is a usage error)
    --framehook-record=MOD:QUALNAME record each call of that function (repeatable; a target
                                    named twice is recorded once)
    --framehook-record=PACKAGE      record the calls of every function and method defined in
                                    a module or package, at most --framehook-record-cap
                                    distinct records each
    --framehook-record-through=HOW  hook, patch or auto (the default: the hook when the runtime
                                    is installed)
    --framehook-record-cap=N        at most N distinct records per function (default: 20
                                    for a PACKAGE's functions, every call for MOD:QUALNAME)
    --framehook-record-dir=DIR      where those records go (default: framehook-records)

Calls are caught through framehook-runtime's eval-frame hook when it is installed
(by code object: however the function is reached, its identity untouched), else by
replacing every module and class attribute bound to the function; see calls.py.

At the end it reports how many frames were intercepted and which tests diverged: a test
diverges when it fails under framehook but passes when re-run plainly.
With both --framehook-shadow and --framehook-optimize each test function runs twice with
the same fixture values, first under the pass-through callback, then under the translator:
one callback per thread means the two cannot intercept the same run, and run in turn each
intercepts what it does alone (after each run its cache entries are dropped, so that the
other callback is not bypassed by a cache hit of the first one's code).
Without these options the plugin does nothing.

Bad values are usage errors (exit status 4) raised while pytest configures, before any
test runs: the record targets are parsed, imported and resolved, and the record directory
is created and a file written in it, first.

Under pytest-xdist each worker sends its counts, divergences and record paths to the
controller in ``workeroutput`` (at ``pytest_sessionfinish``), which adds them up in
``pytest_testnodedown`` and names the workers that sent nothing; the xdist hooks are
optional, so the plugin works without xdist. Each worker's record files carry its id
(``mod.fn.gw0.3.fhrec``), and no record file ever replaces an existing one: a file name is
taken by creating the file exclusively, moving on to the next index when it exists.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import tempfile
import threading
from typing import Any

import pytest

SESSION_KEY = "framehook_session"  # the _Session on pytest's config
WORKER_OUTPUT = "framehook"  # the key of a worker's counts in xdist's workeroutput
RECORD_DIR_INPUT = "framehook_record_dir"  # the controller's absolute record dir, in workerinput


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("framehook", "framehook frame interception")
    group.addoption(
        "--framehook-shadow",
        action="store_true",
        default=False,
        help="intercept every frame with a pass-through callback (framehook.runtime)",
    )
    group.addoption(
        "--framehook-optimize",
        metavar="BACKEND",
        default=None,
        help="run every test function under framehook.translator.optimize(backend=BACKEND)",
    )
    group.addoption(
        "--framehook-record",
        metavar="MODULE:QUALNAME|PACKAGE",
        action="append",
        default=[],
        help="record every call of this function, or of every function of this module or package, "
        "into --framehook-record-dir",
    )
    group.addoption(
        "--framehook-record-through",
        choices=("auto", "hook", "patch"),
        default="auto",
        help="how calls are caught: the runtime's hook (by code object), patched attributes, "
        "or auto (the hook when framehook-runtime is installed)",
    )
    group.addoption(
        "--framehook-record-cap",
        metavar="N",
        default=None,
        help="at most N distinct records per function (default: 20 for a package's functions; "
        "every call of a MODULE:QUALNAME target)",
    )
    group.addoption(
        "--framehook-record-dir",
        metavar="DIR",
        default="framehook-records",
        help="directory for records written by --framehook-record",
    )


class _Target:
    """A resolved MODULE:QUALNAME target: the function recorded (a staticmethod's function)."""

    def __init__(self, spec: str, module: str, qualname: str, function: Any) -> None:
        self.spec = spec
        self.function = function
        self.stem = re.sub(r"[^A-Za-z0-9_.]+", "_", f"{module}.{qualname}")


class _Session:
    def __init__(self, config: Any) -> None:
        self.shadow = bool(config.getoption("framehook_shadow"))
        self.backend = config.getoption("framehook_optimize")
        self.record_dir_given = config.getoption("framehook_record_dir")
        self.record_dir: str | None = None  # absolute, once checked
        workerinput = getattr(config, "workerinput", None)  # set on an xdist worker only
        self.worker_id: str | None = workerinput.get("workerid") if workerinput else None
        self.pass_through: Any = None
        self.tests = 0
        self.diverged: list[str] = []
        self.records: list[str] = []
        self.recording: Any = None  # the CallRecording, while it records
        self.enable: Any = None
        self.optimize: Any = None
        self._lock = threading.RLock()
        self._next_index: dict[str, int] = {}
        # what xdist workers sent (on the controller)
        self.nodes: list[Any] = []
        self.reporting: list[str] = []
        self.silent: list[str] = []
        self.worker_frames = 0
        self.worker_codes: set[tuple] = set()
        # cheap checks of the values first, then imports, then what touches the disk
        specs = list(dict.fromkeys(config.getoption("framehook_record")))
        parsed = [(spec, *_parse_target(spec)) for spec in specs]
        cap = _parse_cap(config.getoption("framehook_record_cap"))
        self.through = config.getoption("framehook_record_through")
        if self.shadow:
            try:
                from framehook.runtime import enable
                from framehook.runtime.passthrough import PassThrough
            except ImportError as exc:
                raise pytest.UsageError(f"--framehook-shadow needs framehook-runtime: {exc}") from None
            self.enable = enable
            self.pass_through = PassThrough()
        if self.backend is not None:
            try:
                from framehook.translator import optimize, reset
            except ImportError as exc:
                raise pytest.UsageError(f"--framehook-optimize needs framehook-translator: {exc}") from None
            _check_backend(self.backend)
            self.optimize = optimize
            self.reset_translator = reset
        targets: dict[int, _Target] = {}
        packages: dict[str, Any] = {}
        for spec, module, qualname in parsed:
            if qualname is None:
                packages.setdefault(module, _import_package(spec, module))
                continue
            target = _resolve_target(spec, module, qualname)
            # the same function named twice (or by two spellings) is recorded once
            targets.setdefault(id(target.function), target)
        if targets or packages:
            given = (workerinput or {}).get(RECORD_DIR_INPUT, self.record_dir_given)
            self.record_dir = _prepare_record_dir(given)
            self._start_recording(list(targets.values()), list(packages.values()), cap)

    # -- recording ---------------------------------------------------------------------
    def _start_recording(self, targets: list[_Target], packages: list[Any], cap: int | None) -> None:
        from .calls import DEFAULT_CAP, CallRecording

        # one callback per thread: under --framehook-shadow or --framehook-optimize the
        # tests run under theirs, so calls are recorded by patching attributes instead
        through = self.through
        if through == "auto" and (self.shadow or self.backend is not None):
            through = "patch"
        try:
            recording = CallRecording(self.record_dir or ".", through=through, worker=self.worker_id)
        except ValueError as exc:  # through="hook" without the runtime
            raise pytest.UsageError(f"--framehook-record-through=hook: {exc}") from None
        for target in targets:
            recording.add_function(target.function, stem=target.stem, label=target.spec, cap=cap)
        for package in packages:
            recording.add_package(package, cap=DEFAULT_CAP if cap is None else cap)
        try:
            recording.__enter__()
        except Exception as exc:
            raise pytest.UsageError(f"--framehook-record: cannot start recording: {_one_line(exc)}") from None
        self.recording = recording

    def local_records(self) -> list[str]:
        return list(self.recording.records) if self.recording is not None else []

    def close(self) -> None:
        if self.recording is not None:
            self.records.extend(self.recording.records)
            self.recording.__exit__(None, None, None)
            self.recording = None
        if self.pass_through is not None:
            self.pass_through.reset()

    # -- counts, and xdist -----------------------------------------------------------------
    def code_keys(self) -> set[tuple]:
        """The intercepted code objects, by a key that means the same in every process."""
        if self.pass_through is None:
            return set()
        return {
            (code.co_filename, code.co_firstlineno, getattr(code, "co_qualname", code.co_name))
            for code in self.pass_through.codes.values()
        }

    def frames(self) -> int:
        return self.pass_through.frames_seen() if self.pass_through is not None else 0

    def worker_counts(self) -> dict:
        """What a worker sends the controller (plain data, for execnet)."""
        return {
            "tests": self.tests,
            "frames": self.frames(),
            "codes": sorted([list(key) for key in self.code_keys()]),
            "diverged": list(self.diverged),
            "records": self.all_records(),
        }

    def all_records(self) -> list[str]:
        """Paths of the records written here (while recording, and before) and sent by workers."""
        return list(self.records) + self.local_records()

    def add_worker(self, node: Any, error: Any) -> None:
        if any(seen is node for seen in self.nodes):
            return  # xdist may report a node down twice (keyboard interrupt)
        self.nodes.append(node)
        name = str(getattr(getattr(node, "gateway", None), "id", "?"))
        output = getattr(node, "workeroutput", None)
        counts = output.get(WORKER_OUTPUT) if isinstance(output, dict) else None
        if not isinstance(counts, dict):
            self.silent.append(f"{name} (down: {error})" if error else f"{name} (sent none)")
            return
        self.reporting.append(name)
        self.tests += int(counts.get("tests", 0))
        self.worker_frames += int(counts.get("frames", 0))
        self.worker_codes.update(tuple(key) for key in counts.get("codes", ()))
        self.diverged.extend(counts.get("diverged", ()))
        self.records.extend(counts.get("records", ()))


def _parse_target(spec: str) -> tuple[str, str | None]:
    """``MODULE:QUALNAME`` split in two (``PACKAGE``: the name and None), or a usage error
    saying what is wrong with it."""

    def bad(why: str) -> pytest.UsageError:
        return pytest.UsageError(
            f"--framehook-record: {spec!r} is not MODULE:QUALNAME (a dotted module name, then a qualified name)"
            f" or PACKAGE (a dotted module name): {why}"
        )

    if not spec:
        raise bad("the value is empty")
    module, colon, qualname = spec.partition(":")
    if not module:
        raise bad("the module name is empty")
    if colon and not qualname:
        raise bad("the qualified name is empty")
    for text in (module, qualname):
        if "/" in text or "\\" in text:
            raise bad(f"{text!r} is a file path; give the import name, e.g. pkg.mod:func")
    if module.startswith("."):
        raise bad(f"{module!r} is a relative module name; give the absolute one")
    for part in module.split(".") + (qualname.split(".") if colon else []):
        if not part.isidentifier():
            raise bad(f"{part!r} is not a Python identifier")
    return module, (qualname if colon else None)


def _parse_cap(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        cap = int(value)
    except ValueError:
        cap = 0
    if cap < 1:
        raise pytest.UsageError(f"--framehook-record-cap: expected a whole number of at least 1, got {value!r}")
    return cap


def _import_package(spec: str, module: str) -> Any:
    try:
        return importlib.import_module(module)
    except Exception as exc:  # a missing module, or one that fails while importing
        raise pytest.UsageError(f"--framehook-record: {spec!r}: cannot import {module!r}: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    """``Type: message`` on one line: the message's first line, "..." when it has more."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return f"{type(exc).__name__}: {lines[0]}{' ...' if len(lines) > 1 else ''}"


def _kind(obj: Any) -> str:
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    return type(obj).__name__


def _describe(obj: Any, raw: Any) -> str:
    """What a target that cannot be recorded is, with its article."""
    if isinstance(raw, classmethod):
        return "a classmethod"
    for test, text in (
        (inspect.ismodule, "a module"),
        (inspect.isclass, "a class"),
        (inspect.isbuiltin, "a builtin function"),
        (inspect.ismethod, "a bound method"),
    ):
        if test(obj):
            return text
    name = type(obj).__name__
    return f"{'an' if name[:1] in 'aeiouAEIOU' else 'a'} {name}"


def _resolve_target(spec: str, module: str, qualname: str) -> _Target:
    """Import the module and walk the qualified name; a usage error unless it ends at a
    Python function (a staticmethod's, a generator or coroutine function included)."""
    try:
        owner: Any = importlib.import_module(module)
    except Exception as exc:  # a missing module, or one that fails while importing
        raise pytest.UsageError(f"--framehook-record: {spec!r}: cannot import {module!r}: {_one_line(exc)}") from None
    path = module
    parts = qualname.split(".")
    value: Any = owner
    for part in parts:
        owner = value
        try:
            value = getattr(owner, part)
        except AttributeError:
            raise pytest.UsageError(
                f"--framehook-record: {spec!r}: {_kind(owner)} {path!r} has no attribute {part!r}"
            ) from None
        except Exception as exc:
            raise pytest.UsageError(f"--framehook-record: {spec!r}: reading {path}.{part}: {_one_line(exc)}") from None
        path = f"{path}.{part}"
    # a staticmethod or classmethod object rather than what getattr gives, inherited or not
    raw = inspect.getattr_static(owner, parts[-1], None)
    inner = value
    while hasattr(inner, "_framehook_orig_callable"):  # optimize(...)(f): f is recorded
        inner = inner._framehook_orig_callable
    if isinstance(raw, classmethod) or not inspect.isfunction(inner):
        raise pytest.UsageError(f"--framehook-record: {spec!r} is {_describe(inner, raw)}, not a Python function")
    return _Target(spec, module, qualname, inner)


def _prepare_record_dir(given: str) -> str:
    """The absolute record directory (tests that change directory do not move it), created
    now and proven writable by writing a file in it: asking os.access would not do, since
    root passes it for places no one can write (procfs, read-only mounts)."""
    if not given:
        raise pytest.UsageError("--framehook-record-dir: expected a directory, got an empty value")
    path = os.path.abspath(given)
    if os.path.lexists(path) and not os.path.isdir(path):
        raise pytest.UsageError(f"--framehook-record-dir: {given!r} exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise pytest.UsageError(f"--framehook-record-dir: cannot create {given!r}: {exc.strerror or exc}") from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".framehook-probe-", dir=path)
    except OSError as exc:
        raise pytest.UsageError(
            f"--framehook-record-dir: cannot write files in {given!r}: {exc.strerror or exc}"
        ) from None
    os.close(fd)
    os.remove(probe)
    return path


def _mechanism(recording: Any) -> str:
    if recording.mechanism == "patch":
        return "patched attributes (framehook-runtime is not installed, or a framehook callback runs the tests)"
    if recording.patched:
        return f"the runtime's hook; patched attributes for {len(recording.patched)} generator or coroutine functions"
    return "the runtime's hook"


def _check_backend(name: str) -> None:
    """A usage error now, rather than a failure of every test: the name must be one the
    translator's public registry knows (``list_backends``) and can use (``lookup_backend``
    runs the backend's availability check, e.g. a missing optional dependency)."""
    from framehook.translator import list_backends, lookup_backend

    known = list_backends()
    if name not in known:
        raise pytest.UsageError(
            f"--framehook-optimize={name!r}: unknown backend; available: {', '.join(known) or 'none'}"
        )
    try:
        lookup_backend(name)
    except Exception as exc:  # registered but unusable here: say why
        raise pytest.UsageError(f"--framehook-optimize={name!r}: {exc}") from None


def pytest_configure(config: Any) -> None:
    opts = (
        config.getoption("framehook_shadow", False),
        config.getoption("framehook_optimize", None) is not None,
        config.getoption("framehook_record", []),
    )
    if any(opts):
        setattr(config, SESSION_KEY, _Session(config))


def pytest_unconfigure(config: Any) -> None:
    session = getattr(config, SESSION_KEY, None)
    if session is not None:
        session.close()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Any:
    session: _Session | None = getattr(pyfuncitem.config, SESSION_KEY, None)
    if session is None or not (session.shadow or session.backend is not None):
        return None
    fn = pyfuncitem.obj
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return None  # leave async tests to their own plugin
    argnames = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in argnames}
    session.tests += 1
    try:
        _run_under(session, fn, kwargs)
    except pytest.skip.Exception:
        raise
    except BaseException as failure:
        # Diverged = fails under framehook but passes plainly; re-run once to tell.
        try:
            fn(**kwargs)
        except BaseException:
            pass
        else:
            session.diverged.append(f"{pyfuncitem.nodeid}: {_one_line(failure)}")
        raise
    return True


def _run_under(session: _Session, fn: Any, kwargs: dict) -> None:
    both = session.shadow and session.backend
    if session.shadow:
        try:
            with session.enable(session.pass_through):
                fn(**kwargs)
        finally:
            if both:
                session.pass_through.reset()
    if session.backend:
        try:
            session.optimize(backend=session.backend)(fn)(**kwargs)
        finally:
            if both:
                session.reset_translator()


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """On an xdist worker: hand the counts to the controller (xdist sends ``workeroutput``
    after this hook)."""
    fh: _Session | None = getattr(session.config, SESSION_KEY, None)
    output = getattr(session.config, "workeroutput", None)
    if fh is not None and isinstance(output, dict):
        output[WORKER_OUTPUT] = fh.worker_counts()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller, for each worker before it starts: the record directory the
    controller checked, absolute (a worker need not share its working directory)."""
    fh: _Session | None = getattr(node.config, SESSION_KEY, None)
    if fh is not None and fh.record_dir is not None:
        node.workerinput[RECORD_DIR_INPUT] = fh.record_dir


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist, on the controller, when a worker is done: add up what it sent."""
    fh: _Session | None = getattr(node.config, SESSION_KEY, None)
    if fh is not None:
        fh.add_worker(node, error)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    session: _Session | None = getattr(config, SESSION_KEY, None)
    if session is None:
        return
    tr = terminalreporter
    tr.section("framehook")
    both = session.shadow and session.backend
    if both:  # one pytest result per test: say that each ran twice within it
        tr.write_line(
            f"framehook: each of {session.tests} tests ran twice within its one result, under the "
            "pass-through callback, then under the translator"
        )
    if session.shadow:
        frames = session.frames() + session.worker_frames
        codes = len(session.code_keys() | session.worker_codes)
        tr.write_line(f"framehook shadow: {frames} frames intercepted ({codes} code objects) in {session.tests} tests")
    if session.backend:
        tr.write_line(f"framehook optimize[{session.backend}]: {session.tests} tests run under the translator")
    if session.shadow or session.backend:
        tr.write_line(f"framehook: {len(session.diverged)} tests diverged")
        for line in session.diverged:
            tr.write_line(f"  diverged: {line}")
    records = session.all_records()
    if records:
        tr.write_line(f"framehook: {len(records)} records written to {session.record_dir_given}")
    recording = session.recording
    if recording is not None and (recording.records or recording.errors):
        tr.write_line(f"framehook record: calls caught through {_mechanism(recording)}")
        for line in recording.errors[:20]:
            tr.write_line(f"  not recorded: {line}")
    if session.nodes:
        tr.write_line(f"framehook: counts from {len(session.reporting)} xdist workers")
    if session.silent:
        tr.write_line(f"framehook: no counts from worker {', '.join(session.silent)}: the totals leave them out")
