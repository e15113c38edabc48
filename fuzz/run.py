"""Differential fuzzing: random programs run plainly and through each framehook package.

    python fuzz/run.py [--seed S] [--count N] [--modes shadow,profiler,translator]
                       [--only FAMILY] [--save DIR] [--json OUT] [--stats]

Every program (fuzz/programs.py, determined by its seed) runs plainly, then through the
runtime's shadow frames (a pass-through callback, twice: misses then cache hits), under the
profiler, and through the translator (`optimize(backend="eager")`, twice, then with other
argument types to force a recompilation; errstate programs also twice under other numpy
error settings of the caller's, then once more without). Each outcome — return value or exception type and
message, what the program printed, the warnings it issued (category, message, file, line)
and any change to ``np.geterr()`` — must equal the plain one; the plain run is repeated, and
must agree with itself. Functions in the returned
value (closures a program lets escape) are called twice after it returned, in the same mode
(through the translator in translator mode), and compared by qualified name, defaults, both
calls' outcomes and the values left in their cells. A mismatch is printed with its program;
with --save the program is written as a .py file and as an execution record that
`framehook replay` reproduces. Exit status 1 on any mismatch.

Translations that failed internally (the frame ran unmodified, so no outcome differs) are
counted and listed by seed. --stats also runs each program under `explain()` and counts the
programs with closures and the graph breaks in frames with cells or free variables, resumed
or not. Only the packages' public APIs are used.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import logging
import random
import re
import sys
import traceback
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from programs import GENERATORS, family, generate

MODES = ("shadow", "profiler", "translator")
#: modes run only when asked for: "numba" is the translator with its numba backend (numba's
#: compiler makes it slow, and it needs numba installed)
EXTRA_MODES = ("numba",)


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


def inputs(seed: int, variant: int = 0) -> tuple:
    rng = random.Random(seed * 7 + variant)
    a, b = rng.randint(-3, 9), rng.randint(-3, 9)
    n = rng.randint(2, 5)
    arr = np.arange(n, dtype=np.float64 if variant else np.int64) - rng.randint(0, 2)
    return a, b, arr


def build(source: str, name: str) -> Callable[..., Any]:
    namespace: Dict[str, Any] = {"np": np, "__name__": "fuzz_program"}
    exec(compile(source, name, "exec"), namespace)
    return namespace["f"]


def outer_errstate(seed: int) -> Optional[Dict[str, str]]:
    """The numpy error settings the caller of an errstate program has (its blocks set theirs
    on top of them): a translated frame must not reuse a graph made under other settings."""
    if family(seed) != "errstate":
        return None
    rng = random.Random(seed * 11 + 5)
    kinds = rng.sample(["divide", "over", "under", "invalid", "all"], rng.randint(1, 2))
    return {k: rng.choice(["ignore", "warn", "raise"]) for k in kinds}


def run_modes(
    fn: Callable[..., Any], args: tuple, other_args: tuple, modes: List[str], outer: Optional[Dict[str, str]] = None
) -> Dict[str, List[Tuple[str, ...]]]:
    got: Dict[str, List[Tuple[str, ...]]] = {}
    if "shadow" in modes:
        import framehook.runtime as rt
        from framehook.runtime.passthrough import PassThrough

        callback = PassThrough()
        with rt.enable(callback):
            got["shadow"] = [outcome(fn, *args), outcome(fn, *args)]
        callback.reset()
    if "profiler" in modes:
        from framehook.profiler import Profiler

        with Profiler():
            got["profiler"] = [outcome(fn, *args)]
    for mode, backend in (("translator", "eager"), ("numba", "numba")):
        if mode in modes:
            got[mode] = translated_outcomes(fn, args, other_args, backend, outer)
    return got


def translated_outcomes(
    fn: Callable[..., Any], args: tuple, other_args: tuple, backend: str, outer: Optional[Dict[str, str]]
) -> List[Tuple[str, ...]]:
    """The program through ``optimize(backend=...)``: twice, with other arguments, and (errstate
    programs) twice under the caller's error settings, then once more without."""
    import framehook.translator as ft

    def translated_call(g: Callable[..., Any]) -> Any:
        return ft.optimize(backend=backend)(g)()

    optimized = ft.optimize(backend=backend)(fn)
    got = [
        outcome(optimized, *args, call=translated_call),
        outcome(optimized, *args, call=translated_call),
        ("other-args", "") + outcome(optimized, *other_args, call=translated_call),
    ]  # type: ignore[list-item]
    if outer is not None:
        with np.errstate(**outer):  # a first call and a cache hit under the caller's settings
            got += [("outer", "") + outcome(optimized, *args, call=translated_call) for _ in range(2)]
        got.append(outcome(optimized, *args, call=translated_call))
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
        head = re.sub(r"^framehook: translating | \(<fuzz program \d+>:\d+\)|; it runs unmodified\.$", "", lines[0])
        error = next((l for l in lines[1:] if l.strip()), "")
        return f"{head}: {error}"


def functions_in(value: Any) -> List[Callable[..., Any]]:
    if isinstance(value, types.FunctionType):
        return [value]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in functions_in(v)]
    return []


def code_tree(code: types.CodeType) -> List[types.CodeType]:
    return [code, *(c for k in code.co_consts if isinstance(k, types.CodeType) for c in code_tree(k))]


def has_closures(code: types.CodeType) -> bool:
    """An inner function or lambda reads a variable of an enclosing function (comprehensions,
    inlined on 3.12+, are left out so that the count means the same on every version)."""
    return any(c.co_freevars for c in code_tree(code) if c.co_name == "<lambda>" or not c.co_name.startswith("<"))


def frame_kind(code: types.CodeType, program: types.CodeType) -> str:
    """f, an inner function of it, or a resume function the translator made (any other code)."""
    cells = " with cells" if code.co_cellvars or code.co_freevars else ""
    if code is program:
        return "f" + cells
    if any(code is c for c in code_tree(program)):
        return "inner functions" + cells
    return "resume functions" + cells


def explain_stats(
    fn: Callable[..., Any],
    args: tuple,
    kind: str,
    stats: "collections.Counter[str]",
    reasons: "collections.Counter[str]",
) -> None:
    """Counts, for --stats, what the translator did with one program's frames (explain() runs
    the call once more, and each closure it returns once)."""
    import framehook.translator as ft

    closures = has_closures(fn.__code__)
    stats[f"{kind} programs"] += 1
    stats[f"{kind} programs with closures"] += closures
    frames: List[Any] = []
    todo: List[Tuple[Callable[..., Any], tuple]] = [(fn, args)]
    # the runs being compared already recorded the warnings; shown here they flood stderr
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        while todo:
            target, target_args = todo.pop()
            try:
                out = ft.explain(target)(*target_args)
                todo += [(g, ()) for g in functions_in(out.result)]
            except Exception as exc:  # noqa: BLE001 - the report is attached to the exception
                out = getattr(exc, "explain_output", None)
            frames += out.frames if out is not None else []
    ft.reset()
    resumed = False
    for report in frames:
        if report.graph_break is None:
            continue
        where = frame_kind(report.code, fn.__code__)
        stats[f"breaks in {where}"] += 1
        if report.resume_failure is None:
            stats[f"breaks in {where}, resumed"] += 1
            resumed |= where.endswith("with cells")
        elif where.endswith("with cells"):
            reasons[re.sub(r" at 0x[0-9a-fA-F]+|\d+", "#", report.resume_failure)[:100]] += 1
    stats[f"{kind} programs with closures and a resumed break in a frame with cells"] += closures and resumed


def save_finding(directory: Path, seed: int, source: str, args: tuple) -> List[str]:
    directory.mkdir(parents=True, exist_ok=True)
    py = directory / f"fuzz_{seed}.py"
    text = f"# framehook fuzz finding, seed {seed}, args {args!r}\nimport numpy as np\n\n{source}"
    py.write_text(text)
    written = [str(py)]
    try:
        from framehook.records import record

        # compiled from the file's own text: the record's source and line numbers must agree,
        # or another CPython, recompiling the source, does not find the function
        fn = build(text, str(py))
        path = directory / f"fuzz_{seed}.fhrec"
        record(fn, *args, path=str(path))
        written.append(str(path))
    except Exception as exc:  # noqa: BLE001 - the .py file is still there
        written.append(f"(no record: {type(exc).__name__}: {exc})")
    return written


def seeds(first: int, count: int, only: Optional[str] = None) -> List[int]:
    """``count`` seeds from ``first`` on (of family ``only`` if given)."""
    found: List[int] = []
    seed = first
    while len(found) < count:
        if only is None or family(seed) == only:
            found.append(seed)
        seed += 1
    return found


def check_seed(
    seed: int,
    modes: List[str],
    watcher: "FailedTranslations",
    stats: "Optional[collections.Counter[str]]" = None,
    reasons: "Optional[collections.Counter[str]]" = None,
) -> Tuple[List[Dict[str, Any]], int, List[str]]:
    """Runs program ``seed`` plainly (twice: the oracle must be deterministic) and in every
    mode; returns the mismatches, the number of outcomes compared and the translator's
    failed translations."""
    source = generate(seed)
    fn = build(source, f"<fuzz program {seed}>")
    call_args, other_args = inputs(seed), inputs(seed, 1)
    expected = outcome(fn, *call_args)
    expected_other = outcome(build(source, f"<fuzz program {seed}>"), *other_args)
    outer = outer_errstate(seed)
    expected_outer: Tuple[str, ...] = ()
    if outer is not None:
        with np.errstate(**outer):
            expected_outer = ("outer", "") + outcome(build(source, f"<fuzz program {seed}>"), *call_args)
    findings: List[Dict[str, Any]] = []
    again = outcome(build(source, f"<fuzz program {seed}>"), *call_args)
    if again != expected:
        findings.append(
            {"seed": seed, "mode": "plain, run again", "expected": expected, "got": again, "source": source}
        )
    watcher.messages.clear()
    try:
        got = run_modes(fn, call_args, other_args, modes, outer)
        if stats is not None and reasons is not None:
            explain_stats(build(source, f"<fuzz program {seed}>"), call_args, family(seed), stats, reasons)
    except Exception:  # noqa: BLE001 - a harness crash is a finding too
        got = {"harness": [("crashed", traceback.format_exc(limit=3))]}
    messages = list(dict.fromkeys(watcher.summary(m) for m in watcher.messages))
    compared = 1
    for mode, results in got.items():
        for result in results:
            compared += 1
            want = {"other-args": ("other-args", "") + expected_other, "outer": expected_outer}.get(result[0], expected)
            if result != want and not (mode == "numba" and floats_close(result, want)):
                findings.append({"seed": seed, "mode": mode, "expected": want, "got": result, "source": source})
    return findings, compared, messages


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="first program seed (default 0)")
    parser.add_argument("--count", type=int, default=200, help="number of programs (default 200)")
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated subset of %s (or numba: the translator's numba backend)" % ",".join(MODES),
    )
    parser.add_argument("--save", type=Path, help="directory for findings (.py and .fhrec)")
    parser.add_argument("--json", type=Path, help="write a summary as JSON")
    parser.add_argument(
        "--only",
        choices=sorted(GENERATORS),
        help="run only programs of this family (the next --count seeds of it from --seed)",
    )
    parser.add_argument(
        "--stats", action="store_true", help="count closures and graph breaks in frames with cells (runs explain() too)"
    )
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES) - set(EXTRA_MODES))
    if unknown:
        parser.error(f"--modes: unknown {unknown}; expected some of {list(MODES + EXTRA_MODES)}")
    if args.count < 1:
        parser.error("--count must be at least 1")

    findings: List[Dict[str, Any]] = []
    failed: Dict[int, List[str]] = {}
    stats: "collections.Counter[str]" = collections.Counter()
    reasons: "collections.Counter[str]" = collections.Counter()
    compared = 0
    watcher = FailedTranslations()
    logging.getLogger("framehook").addHandler(watcher)
    for seed in seeds(args.seed, args.count, args.only):
        found, n, messages = check_seed(seed, modes, watcher, stats if args.stats else None, reasons)
        compared += n
        findings += found
        if messages:
            failed[seed] = messages
    for finding in findings:
        print(
            f"MISMATCH seed={finding['seed']} mode={finding['mode']}\n  plain: {finding['expected']}\n"
            f"  {finding['mode']}: {finding['got']}\n" + "".join(f"    | {l}\n" for l in finding["source"].splitlines())
        )
        if args.save:
            print(
                "  saved: "
                + ", ".join(save_finding(args.save, finding["seed"], finding["source"], inputs(finding["seed"])))
            )
    logging.getLogger("framehook").removeHandler(watcher)
    for seed, messages in failed.items():
        print(f"translation failed (ran unmodified) seed={seed}: " + "; ".join(messages))
    if args.stats:
        for key, value in sorted(stats.items()):
            print(f"stats: {key}: {value}")
        for reason, n in reasons.most_common(8):
            print(f"stats: not resumed in a frame with cells x{n}: {reason}")
    run = seeds(args.seed, args.count, args.only)
    print(
        f"fuzz: {args.count} {args.only + ' ' if args.only else ''}programs (seeds {run[0]}-{run[-1]}) x modes {','.join(modes)} "
        f"on CPython {sys.version.split()[0]}: {compared - len(findings)} outcomes matched, {len(findings)} mismatched; "
        f"{len(failed)} programs with failed translations"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "python": sys.version.split()[0],
                    "programs": args.count,
                    "compared": compared,
                    "mismatches": findings,
                    "failed_translations": failed,
                    "stats": dict(stats),
                },
                indent=1,
            )
        )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
