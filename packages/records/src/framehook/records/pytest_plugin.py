"""pytest plugin (entry point ``framehook``) for running a project's tests under framehook.

    --framehook-shadow              every frame intercepted by a pass-through callback
    --framehook-optimize=BACKEND    every test function run under the translator (a backend name
                                    it does not know, or cannot use here, is a usage error)
    --framehook-record=MOD:QUALNAME record each call of that function (repeatable)
    --framehook-record-dir=DIR      where those records go (default: framehook-records)

At the end it reports how many frames were intercepted and which tests diverged: a test
diverges when it fails under framehook but passes when re-run plainly.
With both --framehook-shadow and --framehook-optimize each test function runs twice with
the same fixture values, first under the pass-through callback, then under the translator:
one callback per thread means the two cannot intercept the same run, and run in turn each
intercepts what it does alone (after each run its cache entries are dropped, so that the
other callback is not bypassed by a cache hit of the first one's code).
Without these options the plugin does nothing.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
from typing import Any

import pytest


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
        metavar="MODULE:QUALNAME",
        action="append",
        default=[],
        help="record every call of this function into --framehook-record-dir",
    )
    group.addoption(
        "--framehook-record-dir",
        metavar="DIR",
        default="framehook-records",
        help="directory for records written by --framehook-record",
    )


class _Session:
    def __init__(self, config: Any) -> None:
        self.shadow = bool(config.getoption("framehook_shadow"))
        self.backend = config.getoption("framehook_optimize")
        self.record_dir = config.getoption("framehook_record_dir")
        self.pass_through: Any = None
        self.tests = 0
        self.diverged: list[str] = []
        self.records: list[str] = []
        self.restore: list[tuple[Any, str, Any]] = []
        self.enable: Any = None
        self.optimize: Any = None
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
        for spec in config.getoption("framehook_record"):
            self._install_recorder(spec)

    # -- recording ---------------------------------------------------------------------
    def _install_recorder(self, spec: str) -> None:
        module_name, _, qualname = spec.partition(":")
        if not qualname:
            raise pytest.UsageError(f"--framehook-record expects MODULE:QUALNAME, got {spec!r}")
        try:
            owner: Any = importlib.import_module(module_name)
            parts = qualname.split(".")
            for part in parts[:-1]:
                owner = getattr(owner, part)
            original = getattr(owner, parts[-1])
        except (ImportError, AttributeError) as exc:
            raise pytest.UsageError(f"--framehook-record {spec}: {exc}") from None
        target = original
        while hasattr(target, "_framehook_orig_callable"):  # optimize(...)(f): f is recorded
            target = target._framehook_orig_callable
        if (
            not inspect.isfunction(target)
            or inspect.isgeneratorfunction(target)
            or inspect.iscoroutinefunction(target)
            or inspect.isasyncgenfunction(target)
        ):
            raise pytest.UsageError(f"--framehook-record {spec}: only plain Python functions can be recorded")
        session = self

        @functools.wraps(original)
        def recording(*args: Any, **kwargs: Any) -> Any:
            from .recorder import record_with_outcome

            index = len(session.records)
            safe = re.sub(r"[^A-Za-z0-9_.]+", "_", f"{module_name}.{qualname}")
            path = os.path.join(session.record_dir, f"{safe}.{index}.fhrec")
            _, outcome = record_with_outcome(original, args, kwargs, path=path, label=f"{spec}#{index}")
            session.records.append(path)
            if outcome.kind == "raise":
                raise outcome.exception
            return outcome.value

        setattr(owner, parts[-1], recording)
        self.restore.append((owner, parts[-1], original))

    def close(self) -> None:
        for owner, name, original in reversed(self.restore):
            setattr(owner, name, original)
        if self.pass_through is not None:
            self.pass_through.reset()


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


_KEY = "framehook_session"


def pytest_configure(config: Any) -> None:
    opts = (
        config.getoption("framehook_shadow", False),
        config.getoption("framehook_optimize", None) is not None,
        config.getoption("framehook_record", []),
    )
    if any(opts):
        setattr(config, _KEY, _Session(config))


def pytest_unconfigure(config: Any) -> None:
    session = getattr(config, _KEY, None)
    if session is not None:
        session.close()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Any:
    session: _Session | None = getattr(pyfuncitem.config, _KEY, None)
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
            session.diverged.append(f"{pyfuncitem.nodeid}: {type(failure).__name__}: {failure}")
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


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    session: _Session | None = getattr(config, _KEY, None)
    if session is None:
        return
    tr = terminalreporter
    tr.section("framehook")
    if session.shadow:
        tr.write_line(
            f"framehook shadow: {session.pass_through.frames_seen()} frames intercepted "
            f"({len(session.pass_through.codes)} code objects) in {session.tests} tests"
        )
    if session.backend:
        tr.write_line(f"framehook optimize[{session.backend}]: {session.tests} tests run under the translator")
    if session.shadow or session.backend:
        tr.write_line(f"framehook: {len(session.diverged)} tests diverged")
        for line in session.diverged:
            tr.write_line(f"  diverged: {line}")
    if session.records:
        tr.write_line(f"framehook: {len(session.records)} records written to {session.record_dir}")
