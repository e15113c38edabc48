"""Differential fuzzing: random programs run plainly and through each framehook package.

    python fuzz/run.py [--seed S] [--count N] [--modes shadow,profiler,translator]
                       [--save DIR] [--json OUT]

Every program (fuzz/programs.py, determined by its seed) runs plainly, then through the
runtime's shadow frames (a pass-through callback, twice: misses then cache hits), under the
profiler, and through the translator (`optimize(backend="eager")`, twice, then with other
argument types to force a recompilation). Each outcome — return value or exception type and
message — must equal the plain one. A mismatch is printed with its program; with --save the
program is written as a .py file and as an execution record that `framehook replay`
reproduces. Exit status 1 on any mismatch. Only the packages' public APIs are used.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from programs import generate

MODES = ("shadow", "profiler", "translator")


def outcome(fn: Callable[..., Any], *args: Any) -> Tuple[str, str]:
    try:
        return ("ok", repr(fn(*args)))
    except Exception as exc:  # noqa: BLE001 - the program's own exception is its outcome
        return ("raised", f"{type(exc).__name__}: {exc}")


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


class PassThrough:
    """Intercepts every frame and runs a distinct copy of its code behind a true guard."""

    def __init__(self, runtime: Any) -> None:
        self.rt = runtime

    def __call__(self, frame: Any, cache_entry: Any, frame_state: Any) -> Any:
        return self.rt.GuardedCode(frame.f_code.replace(), lambda f_locals: True)


def run_modes(fn: Callable[..., Any], args: tuple, other_args: tuple, modes: List[str]) -> Dict[str, List[Tuple[str, str]]]:
    got: Dict[str, List[Tuple[str, str]]] = {}
    if "shadow" in modes:
        import framehook.runtime as rt

        with rt.enable(PassThrough(rt)):
            got["shadow"] = [outcome(fn, *args), outcome(fn, *args)]
        rt.reset_code(fn.__code__)
    if "profiler" in modes:
        from framehook.profiler import Profiler

        with Profiler():
            got["profiler"] = [outcome(fn, *args)]
    if "translator" in modes:
        import framehook.translator as ft

        optimized = ft.optimize(backend="eager")(fn)
        got["translator"] = [outcome(optimized, *args), outcome(optimized, *args),
                             ("other-args", "") + outcome(optimized, *other_args)]  # type: ignore[list-item]
        ft.reset()
    return got


def save_finding(directory: Path, seed: int, source: str, args: tuple) -> List[str]:
    directory.mkdir(parents=True, exist_ok=True)
    py = directory / f"fuzz_{seed}.py"
    py.write_text(f"# framehook fuzz finding, seed {seed}, args {args!r}\nimport numpy as np\n\n{source}")
    written = [str(py)]
    try:
        import framehook.translator as ft

        fn = build(source, str(py))
        path = directory / f"fuzz_{seed}.fhrec"
        ft.record(fn, *args, path=str(path))
        written.append(str(path))
    except Exception as exc:  # noqa: BLE001 - the .py file is still there
        written.append(f"(no record: {type(exc).__name__}: {exc})")
    return written


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="first program seed (default 0)")
    parser.add_argument("--count", type=int, default=200, help="number of programs (default 200)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of %s" % ",".join(MODES))
    parser.add_argument("--save", type=Path, help="directory for findings (.py and .fhrec)")
    parser.add_argument("--json", type=Path, help="write a summary as JSON")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"--modes: unknown {unknown}; expected some of {list(MODES)}")
    if args.count < 1:
        parser.error("--count must be at least 1")

    findings: List[Dict[str, Any]] = []
    compared = 0
    for seed in range(args.seed, args.seed + args.count):
        source = generate(seed)
        fn = build(source, f"<fuzz program {seed}>")
        call_args, other_args = inputs(seed), inputs(seed, 1)
        expected = outcome(fn, *call_args)
        expected_other = outcome(build(source, f"<fuzz program {seed}>"), *other_args)
        try:
            got = run_modes(fn, call_args, other_args, modes)
        except Exception:  # noqa: BLE001 - a harness crash is a finding too
            got = {"harness": [("crashed", traceback.format_exc(limit=3))]}
        for mode, results in got.items():
            for result in results:
                compared += 1
                want = ("other-args", "") + expected_other if result[0] == "other-args" else expected
                if result != want:
                    findings.append({"seed": seed, "mode": mode, "expected": want, "got": result, "source": source})
    for finding in findings:
        print(f"MISMATCH seed={finding['seed']} mode={finding['mode']}\n  plain: {finding['expected']}\n"
              f"  {finding['mode']}: {finding['got']}\n" + "".join(f"    | {l}\n" for l in finding["source"].splitlines()))
        if args.save:
            print("  saved: " + ", ".join(save_finding(args.save, finding["seed"], finding["source"],
                                                        inputs(finding["seed"]))))
    print(f"fuzz: {args.count} programs (seeds {args.seed}-{args.seed + args.count - 1}) x modes {','.join(modes)} "
          f"on CPython {sys.version.split()[0]}: {compared - len(findings)} outcomes matched, {len(findings)} mismatched")
    if args.json:
        args.json.write_text(json.dumps({"python": sys.version.split()[0], "programs": args.count,
                                         "compared": compared, "mismatches": findings}, indent=1))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
