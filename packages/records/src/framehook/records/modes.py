"""The ways a recorded frame is re-executed, registered by the packages that provide them.

A package registers a mode under the entry point group ``framehook.replay_modes``; the
entry point names a function ``mode(fn, run) -> dict`` of that package's public API:

* ``fn`` is the rebuilt function; ``run(callable)`` calls ``callable`` with the recorded
  arguments, drives a generator or coroutine to its end and returns the outcome (opaque to
  the mode).
* The mode returns ``{"outcome": run(...)}``, optionally with ``"intercepted"`` (frames
  seen, an int), ``"problems"`` (a list of strings, each a difference to report) and
  ``"decisions"`` (a JSON-like dict compared with the record's translator section).

``plain`` is this package's own. The standard modes of the other framehook packages are
named here only to say which package to install when one is absent.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping

from . import driver

GROUP = "framehook.replay_modes"
# mode -> the distribution that registers it, in the order modes are replayed
STANDARD = {
    "plain": "framehook-records",
    "shadow": "framehook-runtime",
    "translator": "framehook-translator",
    "profiled": "framehook-profiler",
}
MODES = tuple(STANDARD)


@dataclass
class ModeRun:
    outcome: driver.Outcome | None = None
    skip: str | None = None  # reason the mode could not run
    problems: list = field(default_factory=list)  # mode-specific failures (e.g. frame not intercepted)
    intercepted: int | None = None
    decisions: dict | None = None


def plain(fn: Callable[..., Any], run: Callable[[Callable[..., Any]], Any]) -> Dict[str, Any]:
    """The plain mode: the rebuilt function called as it is."""
    return {"outcome": run(fn)}


def _entry_points() -> List[Any]:
    from importlib import metadata

    found = metadata.entry_points()
    if hasattr(found, "select"):  # the selectable interface of Python 3.10 and later
        return list(found.select(group=GROUP))
    return list(found.get(GROUP, ()))  # pragma: no cover - Python 3.9's dict of groups


def registered() -> Dict[str, Any]:
    """Mode name -> entry point, for every mode an installed package registers."""
    out: Dict[str, Any] = {}
    for ep in _entry_points():
        out.setdefault(ep.name, ep)
    return out


def known(entry_points: Mapping[str, Any] | None = None) -> list[str]:
    """Every mode name replay accepts, in replay order: the standard ones (run or skipped)
    and every other one an installed package registers."""
    found = registered() if entry_points is None else entry_points
    return list(STANDARD) + sorted(m for m in found if m not in STANDARD)


def available() -> tuple[list[str], dict[str, str]]:
    """(modes that can run here, in replay order; {absent standard mode: why it is absent})."""
    found = registered()
    names = [m for m in MODES if m in found or m == "plain"]
    names += sorted(m for m in found if m not in STANDARD)
    absent = {m: f"{dist} is not installed" for m, dist in STANDARD.items() if m not in names}
    return names, absent


def _load(mode: str, entry_points: Mapping[str, Any]) -> tuple[Callable[..., Any] | None, str | None]:
    if mode == "plain":
        return plain, None
    ep = entry_points.get(mode)
    if ep is None:
        dist = STANDARD.get(mode)
        return None, (f"{dist} is not installed" if dist else f"no package registers the mode {mode!r}")
    try:
        func = ep.load()
    except Exception as exc:  # a broken installation skips its mode, naming what failed
        return None, f"the {mode} mode ({ep.value}) cannot be loaded: {type(exc).__name__}: {exc}"
    if not callable(func):
        return None, f"the {mode} mode ({ep.value}) is not a function"
    return func, None


def run_mode(
    mode: str,
    fn: Callable[..., Any],
    args: tuple,
    kwargs: dict,
    kind: str,
    entry_points: Mapping[str, Any] | None = None,
) -> ModeRun:
    func, reason = _load(mode, registered() if entry_points is None else entry_points)
    if func is None:
        return ModeRun(skip=reason)

    def run(target: Callable[..., Any]) -> driver.Outcome:
        return driver.run(target, args, kwargs, kind)

    report = func(fn, run)
    outcome = report.get("outcome") if isinstance(report, Mapping) else None
    if not isinstance(outcome, driver.Outcome):
        raise TypeError(f"the {mode} mode returned {type(report).__name__}, not a dict with the outcome of run()")
    problems = [str(p) for p in report.get("problems", ())]
    decisions = report.get("decisions")
    intercepted = report.get("intercepted")
    return ModeRun(
        outcome=outcome,
        problems=problems,
        intercepted=intercepted if isinstance(intercepted, int) else None,
        decisions=decisions if isinstance(decisions, dict) else None,
    )


def describe_modes(stream: Any = None) -> None:
    """Print the modes available here and those absent (for ``framehook replay --list-modes``)."""
    out = stream or sys.stdout
    names, absent = available()
    found = registered()
    for name in names:
        where = "framehook.records.modes:plain" if name == "plain" else found[name].value
        out.write(f"{name:12} available ({where})\n")
    for name, why in absent.items():
        out.write(f"{name:12} skipped: {why}\n")
