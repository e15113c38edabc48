"""The differential oracle: a program run plainly and through each framehook package.

An outcome is the return value (or exception type and message), what the program printed,
the warnings it issued (category, message, file, line) and any change to ``np.geterr()``;
functions in the returned value are called twice afterwards in the same mode and compared
by name, defaults, both calls' outcomes and their cells. In profiler mode the profiler's
call counts per function of the program must also equal what ``sys.setprofile`` sees in a
plain run. ``check_program`` runs every mode and returns what differs; ``save_finding``
writes a program as a standalone ``.py`` file and an execution record. Only the packages'
public APIs are used.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import dataclasses
import hashlib
import io
import logging
import os
import re
import sys
import traceback
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from .program import Program

MODES = ("shadow", "profiler", "translator")
#: modes run only when asked for: "numba" is the translator with its numba backend (numba's
#: compiler makes it slow, and it needs numba installed)
EXTRA_MODES = ("numba",)
#: test-only: a token whose presence in a program's source is reported as a finding (a
#: deliberately wrong oracle, to test that findings are shrunk, saved and shared)
PLANT_VARIABLE = "FHFUZZ_PLANT"

Call = Callable[[Callable[..., Any]], Any]


def plain_call(fn: Callable[..., Any]) -> Any:
    return fn()


def stable_repr(value: Any) -> str:
    """repr without object addresses (they differ between runs, not between modes' meanings)."""
    if isinstance(value, types.FunctionType):
        return f"<function {value.__qualname__}>"
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def observe(value: Any, call: Call) -> Any:
    """The returned value with each function in it (an escaping closure) replaced by what it
    shows: name, defaults, two calls' outcomes through ``call``, and its cells afterwards."""
    if isinstance(value, types.FunctionType):
        calls = [_outcome(lambda: call(value), call) for _ in range(2)]
        cells = []
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or ()):
            try:
                cells.append((name, stable_repr(cell.cell_contents)))
            except ValueError:
                cells.append((name, "<empty>"))
        return (
            "function",
            value.__qualname__,
            stable_repr(value.__defaults__),
            stable_repr(value.__kwdefaults__),
            calls,
            cells,
        )
    if isinstance(value, (list, tuple)):
        return type(value)(observe(v, call) for v in value)
    return value


def _outcome(thunk: Callable[[], Any], call: Call) -> Tuple[str, str]:
    try:
        return ("ok", stable_repr(observe(thunk(), call)))
    except Exception as exc:  # noqa: BLE001 - the program's own exception is its outcome
        return ("raised", f"{type(exc).__name__}: {exc}")


def outcome(fn: Callable[..., Any], *args: Any, call: Call = plain_call) -> Tuple[str, ...]:
    """(status, value or exception, printed text, warnings, numpy error state change) of
    ``fn(*args)``; ``call`` calls the functions the value holds. Every warning is recorded
    (``always``: none hidden by an earlier one) with its category, message, file and line;
    ``np.geterr()`` must be the same after the call as before it."""
    printed = io.StringIO()
    before = np.geterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(printed):
            status, text = _outcome(lambda: fn(*args), call)
    after = np.geterr()
    if after != before:
        np.seterr(**before)  # the next run starts from the same settings
    shown = tuple(f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught)
    leaked = "" if after == before else f"np.geterr() left changed: {after}"
    return (status, text, printed.getvalue(), shown, leaked)


def build(source: str, name: str) -> Callable[..., Any]:
    namespace: Dict[str, Any] = {"np": np, "__name__": "fuzz_program"}
    # dont_inherit: this module's `from __future__ import annotations` would otherwise set
    # CO_FUTURE_ANNOTATIONS on the program's code, which its source does not have, and a
    # record of it would never be verified against its source
    exec(compile(source, name, "exec", dont_inherit=True), namespace)
    return namespace["f"]


Arguments = Union[tuple, Callable[[], tuple]]


def fresh(args: Arguments) -> tuple:
    """The arguments of one call: made afresh when given as a function (a program that
    mutates its arguments must not change the next call's)."""
    return args() if callable(args) else args


def run_modes(
    fn: Callable[..., Any],
    args: Arguments,
    other_args: Arguments,
    modes: List[str],
    outer: Optional[Dict[str, str]] = None,
) -> Dict[str, List[Tuple[str, ...]]]:
    """Outcomes of ``fn`` in each mode; ``args`` is a tuple or a function making one per call."""
    got: Dict[str, List[Tuple[str, ...]]] = {}
    if "shadow" in modes:
        import framehook.runtime as rt
        from framehook.runtime.passthrough import PassThrough

        callback = PassThrough()
        with rt.enable(callback):
            got["shadow"] = [outcome(fn, *fresh(args)), outcome(fn, *fresh(args))]
        callback.reset()
    if "profiler" in modes:
        from framehook.profiler import Profiler

        with Profiler() as prof:
            got["profiler"] = [outcome(fn, *fresh(args))]
        got["profiler"].append(("calls", profiled_calls(prof.profile, fn.__code__.co_filename)))
    for mode, backend in (("translator", "eager"), ("numba", "numba")):
        if mode in modes:
            got[mode] = translated_outcomes(fn, args, other_args, backend, outer)
    return got


def translated_outcomes(
    fn: Callable[..., Any], args: Arguments, other_args: Arguments, backend: str, outer: Optional[Dict[str, str]]
) -> List[Tuple[str, ...]]:
    """The program through ``optimize(backend=...)``: twice, with other arguments, and (errstate
    programs) twice under the caller's error settings, then once more without."""
    import framehook.translator as ft

    def translated_call(g: Callable[..., Any]) -> Any:
        return ft.optimize(backend=backend)(g)()

    optimized = ft.optimize(backend=backend)(fn)
    # numba compiles in the call (not in the background), so that its kernels are what runs
    with ft.config.patch(numba_background=False):
        got = [
            outcome(optimized, *fresh(args), call=translated_call),
            outcome(optimized, *fresh(args), call=translated_call),
            ("other-args", "") + outcome(optimized, *fresh(other_args), call=translated_call),
        ]  # type: ignore[list-item]
        if outer is not None:
            with np.errstate(**outer):  # a first call and a cache hit under the caller's settings
                got += [("outer", "") + outcome(optimized, *fresh(args), call=translated_call) for _ in range(2)]
            got.append(outcome(optimized, *fresh(args), call=translated_call))
    ft.reset()
    return got


_FLOAT = re.compile(r"(?<![\w.])-?(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+|inf|nan)(?![\w.])")


def floats_close(got: Tuple[str, ...], want: Tuple[str, ...]) -> bool:
    """The numba backend's oracle: outcomes equal but for floating-point numbers, which may
    differ within ``numpy.allclose``'s defaults (numba may sum in another order or call
    other math routines); integers, text, warnings and exceptions stay exact."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g == w:
            continue
        if not isinstance(g, str) or not isinstance(w, str) or _FLOAT.sub("#", g) != _FLOAT.sub("#", w):
            return False
        gs, ws = [float(x) for x in _FLOAT.findall(g)], [float(x) for x in _FLOAT.findall(w)]
        if len(gs) != len(ws) or not np.allclose(gs, ws, equal_nan=True):
            return False
    return True


class FailedTranslations(logging.Handler):
    """Collects the translator's 'translating ... failed; it runs unmodified' warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text.startswith("framehook: translating") and "failed" in text:
            self.messages.append(text)

    @staticmethod
    def summary(text: str) -> str:
        """The failed frame and the error's first line."""
        lines = text.splitlines()
        head = re.sub(r"^framehook: translating | \([^()]*:\d+\)|; it runs unmodified\.$", "", lines[0])
        error = next((l for l in lines[1:] if l.strip()), "")
        return f"{head}: {error}"


def setprofile_calls(fn: Callable[..., Any], args: tuple) -> str:
    """Calls per function of the program (its own file only) that ``sys.setprofile`` sees
    while ``outcome(fn, *args)`` runs plainly: the oracle of the profiler's counts."""
    filename = fn.__code__.co_filename
    counts: "collections.Counter[Tuple[int, str]]" = collections.Counter()

    def hook(frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == filename:
            counts[(frame.f_code.co_firstlineno, frame.f_code.co_name)] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        outcome(fn, *args)
    finally:
        sys.setprofile(previous)
    return _counts_text(counts)


def profiled_calls(profile: Any, filename: str) -> str:
    """Calls per function of the program's file in a profile, from its public aggregates."""
    counts: "collections.Counter[Tuple[int, str]]" = collections.Counter()
    for function, stat in profile.aggregates().functions.items():
        if function.kind == "python" and function.path == filename:
            counts[(function.lineno, function.pstats_key[2])] += stat[0]
    return _counts_text(counts)


def _counts_text(counts: "collections.Counter[Tuple[int, str]]") -> str:
    return ", ".join(f"{name}@{line} x{n}" for (line, name), n in sorted(counts.items()))


@dataclasses.dataclass
class Check:
    """What ``check_program`` found: mismatches (dicts: mode, expected, got, source, args,
    seed, signature), outcomes compared, and the translator's failed translations."""

    findings: List[Dict[str, Any]]
    compared: int
    failed: List[str]


def program_filename(program: Program) -> str:
    return f"<fuzz program {program.seed}>" if program.seed is not None else "<fuzz program>"


def check_program(
    program: Program, modes: List[str], watcher: Optional[FailedTranslations] = None, filename: Optional[str] = None
) -> Check:
    """Runs ``program`` plainly (twice: the oracle must be deterministic) and in every mode."""
    name = filename or program_filename(program)
    source = program.source
    watcher = watcher or FailedTranslations()
    fn = build(source, name)
    expected = outcome(fn, *program.args())
    want = {"other-args": ("other-args", "") + outcome(build(source, name), *program.other_args())}
    outer = program.outer_errstate
    if outer is not None:
        with np.errstate(**outer):
            want["outer"] = ("outer", "") + outcome(build(source, name), *program.args())
    findings: List[Dict[str, Any]] = []

    def found(mode: str, expected: Tuple[str, ...], got: Tuple[str, ...]) -> None:
        finding = {"seed": program.seed, "mode": mode, "expected": expected, "got": got, "source": source}
        finding["args"] = program.args_source
        finding["signature"] = signature(finding)
        findings.append(finding)

    again = outcome(build(source, name), *program.args())
    if again != expected:
        found("plain, run again", expected, again)
    if "profiler" in modes:
        want["calls"] = ("calls", setprofile_calls(build(source, name), program.args()))
    attached = watcher not in logging.getLogger("framehook").handlers
    if attached:
        logging.getLogger("framehook").addHandler(watcher)
    watcher.messages.clear()
    try:
        got = run_modes(fn, program.args, program.other_args, modes, outer)
    except Exception:  # noqa: BLE001 - a harness crash is a finding too
        got = {"harness": [("crashed", traceback.format_exc(limit=3))]}
    finally:
        if attached:
            logging.getLogger("framehook").removeHandler(watcher)
    compared = 1
    for mode, results in got.items():
        for result in results:
            compared += 1
            expect = want.get(result[0], expected)
            if result != expect and not (mode == "numba" and floats_close(result, expect)):
                found(mode, expect, result)
    token = os.environ.get(PLANT_VARIABLE)
    if token and token in source:
        found("planted", ("without " + token,), ("with " + token,))
    return Check(findings, compared, list(dict.fromkeys(watcher.summary(m) for m in watcher.messages)))


def signature(finding: Dict[str, Any]) -> str:
    """A finding's kind: its mode and what differs (the status and exception type of the
    outcome, or which other part), so that one bug found by many programs is one kind."""
    mode, want, got = finding["mode"], finding["expected"], finding["got"]
    if mode in ("planted", "harness") or not got or got[0] == "calls":
        return f"{mode}: {'call counts' if got and got[0] == 'calls' else 'differs'}"
    tag = got[0] if got[0] in ("other-args", "outer") else ""
    w, g = (want[2:], got[2:]) if tag else (want, got)
    if len(w) < 5 or len(g) < 5:
        return f"{mode}: differs"
    if w[:2] != g[:2]:
        what = f"{_status(w)} -> {_status(g)}"
    else:
        what = ", ".join(n for n, a, b in zip(("printed", "warnings", "errstate"), w[2:], g[2:]) if a != b)
    return f"{mode}{' ' + tag if tag else ''}: {what}"


def _status(result: Tuple[str, ...]) -> str:
    if result[0] == "raised":
        return "raised " + result[1].split(":", 1)[0]
    return "returned" if result[0] == "ok" else result[0]


def finding_name(program: Program) -> str:
    if program.seed is not None:
        return f"fuzz_{program.seed}"
    digest = hashlib.sha1(f"{program.source}\0{program.args_source}".encode()).hexdigest()
    return f"fuzz_{digest[:12]}"


def finding_text(program: Program, note: str = "") -> str:
    """A standalone module: the program, its arguments, and a main that calls it."""
    head = f"# framehook fuzz finding{': ' + note if note else ''}".replace("\n", " ")
    return (
        f"{head}\n# runs standalone; fuzz/tests/test_regressions.py replays it plainly and in every mode\n"
        f"import numpy as np\n\n{program.source.rstrip()}\n\n\n"
        f"ARGS = {program.args_source}\nOTHER_ARGS = {program.other_args_source}\n"
        f"OUTER_ERRSTATE = {program.outer_errstate!r}\nFAMILY = {program.family!r}\n\n"
        'if __name__ == "__main__":\n    print(f(*ARGS))\n'
    )


def save_finding(directory: Path, program: Program, note: str = "", name: Optional[str] = None) -> List[str]:
    """Writes ``program`` as ``<name>.py`` and, with framehook-records, as an execution record
    of its first call compiled from that file's own text (its source and line numbers agree,
    so another CPython, recompiling the source, finds the function)."""
    directory.mkdir(parents=True, exist_ok=True)
    py = directory / f"{name or finding_name(program)}.py"
    text = finding_text(program, note)
    py.write_text(text)
    written = [str(py)]
    try:
        from framehook.records import record

        path = py.with_suffix(".fhrec")
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            record(build(text, str(py)), *program.args(), path=str(path))
        written.append(str(path))
    except Exception as exc:  # noqa: BLE001 - the .py file is still there
        written.append(f"(no record: {type(exc).__name__}: {exc})")
    return written


def load_program(path: Path) -> Program:
    """The program of a file ``save_finding`` wrote (or one written by hand like it)."""
    text = Path(path).read_text()
    values: Dict[str, ast.expr] = {}
    for node in ast.parse(text, str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = node.value
    missing = [n for n in ("ARGS", "OTHER_ARGS") if n not in values]
    if missing:
        raise ValueError(f"{path}: expected module-level {' and '.join(missing)} (tuple expressions over np)")

    def segment(name: str) -> str:
        return ast.get_source_segment(text, values[name]) or ""

    outer = ast.literal_eval(values["OUTER_ERRSTATE"]) if "OUTER_ERRSTATE" in values else None
    family = ast.literal_eval(values["FAMILY"]) if "FAMILY" in values else "python"
    return Program(
        text, args_source=segment("ARGS"), other_args_source=segment("OTHER_ARGS"), family=family, outer_errstate=outer
    )
