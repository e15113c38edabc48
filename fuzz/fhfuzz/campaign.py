"""Hypothesis drives the differential oracle: the property "every mode's outcome equals the
plain one" over ``strategies.programs()``, each failure shrunk to a minimal program, saved,
and put into the example database (shared by every machine that uses the same one).

One kind of failure (``harness.signature``) raises its own exception type, so Hypothesis
shrinks and reports each kind separately; once saved, a kind counts as known and later
programs showing only it pass, so a long campaign goes on looking for other kinds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.database import ExampleDatabase

from . import harness
from .program import Program
from .strategies import programs

#: --target: the modes each runs (profiler mode includes the sys.setprofile call counts)
TARGETS = {
    "runtime": ["shadow"],
    "translator": ["translator"],
    "profiler": ["profiler"],
    "all": list(harness.MODES),
}


class Mismatch(AssertionError):
    """A program whose outcome in some mode differs from the plain one."""

    signature = ""


_KINDS: Dict[str, type] = {}


def mismatch_type(signature: str) -> type:
    """One exception type per kind of failure: Hypothesis tells bugs apart by type."""
    kind = _KINDS.get(signature)
    if kind is None:
        kind = _KINDS[signature] = type("Mismatch", (Mismatch,), {"signature": signature})
    return kind


def database_key(modes: List[str], families: Optional[Iterable[str]]) -> bytes:
    """What the failing examples are stored under: the modes and families only, so that every
    machine and process (and every version of the harness's code) shares them."""
    chosen = ",".join(sorted(families)) if families else "every family"
    return f"framehook-fuzz/{','.join(sorted(modes))}/{chosen}".encode()


class Campaign:
    """Runs the property in rounds, counting programs, CPU time, findings and failed
    translations; prints a progress line every ``progress_every`` seconds if asked."""

    def __init__(
        self,
        modes: List[str],
        families: Optional[Iterable[str]] = None,
        database: Optional[ExampleDatabase] = None,
        save: Optional[Path] = None,
        progress_every: Optional[float] = None,
        out: Callable[[str], None] = print,
    ) -> None:
        self.modes = list(modes)
        self.families = sorted(families) if families else None
        self.database = database
        self.save = save
        self.progress_every = progress_every
        self.out = out
        self.programs = 0
        self.compared = 0
        self.failed: Dict[str, List[str]] = {}
        self.findings: List[Dict[str, Any]] = []  # saved: signature, finding, program, paths
        self._last: Dict[str, Tuple[Program, Dict[str, Any]]] = {}
        self._watcher = harness.FailedTranslations()
        self._started = time.monotonic()
        self._cpu = time.process_time()
        self._next_progress = self._started + (progress_every or 0)

    @property
    def known(self) -> List[str]:
        return [f["signature"] for f in self.findings]

    def check(self, program: Program) -> None:
        self.programs += 1
        result = harness.check_program(program, self.modes, self._watcher)
        self.compared += result.compared
        if result.failed:
            label = f"seed {program.seed}" if program.seed is not None else harness.finding_name(program)
            self.failed[label] = result.failed
        if self.progress_every and time.monotonic() >= self._next_progress:
            self._next_progress = time.monotonic() + self.progress_every
            self.out(self.progress())
        new = [f for f in result.findings if f["signature"] not in self.known]
        if new:
            self._last[new[0]["signature"]] = (program, new[0])
            raise mismatch_type(new[0]["signature"])(describe(new[0]))

    def progress(self) -> str:
        minutes = max(time.monotonic() - self._started, 1e-9) / 60
        return (
            f"fuzz: {self.programs} programs, {self.programs / minutes:.0f}/min, "
            f"{len(self.findings)} findings, {len(self.failed)} failed translations"
        )

    def cpu_seconds(self) -> float:
        return time.process_time() - self._cpu

    def run(self, max_examples: int, phases: Iterable[Phase], derandomize: bool = False) -> List[Dict[str, Any]]:
        """One Hypothesis run of at most ``max_examples`` programs; returns the new findings
        (shrunk, saved if ``save`` is set)."""

        def fuzz_property(program: Program) -> None:
            self.check(program)

        test = given(programs(self.families))(fuzz_property)
        test = settings(
            database=None if derandomize else self.database,
            derandomize=derandomize,
            max_examples=max_examples,
            phases=list(phases),
            deadline=None,
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            report_multiple_bugs=True,
        )(test)
        test._hypothesis_internal_database_key = database_key(self.modes, self.families)  # type: ignore[attr-defined]
        self._last.clear()
        try:
            test()
        except BaseException as exc:  # noqa: BLE001 - sorted below: ours are findings
            kinds = mismatches_in(exc)
            if not kinds or isinstance(exc, KeyboardInterrupt):
                raise
            return [self._keep(kind) for kind in kinds if kind in self._last and kind not in self.known]
        return []

    def _keep(self, kind: str) -> Dict[str, Any]:
        # the last program that failed this way is the shrunk one: Hypothesis runs the
        # minimal example of each bug once more before it reports them
        program, finding = self._last[kind]
        paths = harness.save_finding(self.save, program, f"{finding['mode']} ({kind})") if self.save else []
        kept = {"signature": kind, "finding": finding, "program": program, "paths": paths}
        self.findings.append(kept)
        return kept


def mismatches_in(exc: BaseException) -> List[str]:
    """The kinds of every Mismatch in ``exc`` (an exception group when there are several)."""
    if isinstance(exc, Mismatch):
        return [exc.signature]
    found: List[str] = []
    for inner in getattr(exc, "exceptions", ()) or ():
        found += [k for k in mismatches_in(inner) if k not in found]
    return found


def describe(finding: Dict[str, Any]) -> str:
    return (
        f"mode={finding['mode']} [{finding['signature']}]\n  plain: {finding['expected']}\n"
        f"  {finding['mode']}: {finding['got']}\n  args: {finding['args']}\n"
        + "".join(f"    | {line}\n" for line in finding["source"].splitlines())
    )


def long_run(campaign: Campaign, minutes: float, round_size: int = 50) -> None:
    """Generates programs for ``minutes``: the first round replays the database's findings
    before generating; later rounds only generate and shrink (replaying known findings
    again would only find them again)."""
    deadline = time.monotonic() + minutes * 60
    phases = [Phase.reuse, Phase.generate, Phase.shrink]
    while True:
        for kept in campaign.run(round_size, phases):
            campaign.out(f"FINDING [{kept['signature']}] saved: {', '.join(kept['paths']) or '(no --save)'}")
        phases = [Phase.generate, Phase.shrink]
        if time.monotonic() >= deadline:
            return


def replay_database(campaign: Campaign) -> List[Dict[str, Any]]:
    """Replays the findings in the database only (nothing generated)."""
    return campaign.run(1, [Phase.reuse])


def summary(campaign: Campaign) -> str:
    cpu = max(campaign.cpu_seconds(), 1e-9)
    lines = [
        f"fuzz: {campaign.programs} programs x modes {','.join(campaign.modes)} on CPython {sys.version.split()[0]} "
        f"in {cpu:.1f} CPU s ({campaign.programs / cpu:.1f} programs per CPU second): "
        f"{len(campaign.findings)} findings; {len(campaign.failed)} programs with failed translations"
    ]
    for kept in campaign.findings:
        lines.append(f"  finding [{kept['signature']}]: {', '.join(kept['paths']) or '(not saved: no --save)'}")
    return "\n".join(lines)
