"""Runs bench_overhead.py on every CPython 3.9-3.15 and writes ../BENCHMARKS.md.new.

    python run_matrix.py [--venvs DIR] [--rounds N] [--no-install] [--versions 3.14,3.15]
                         [--python 3.14=/path/to/python3.14 ...]

Each version gets a venv in DIR (created when missing) with framehook-profiler built from
this checkout, yappi and viztracer, and on 3.11 torch==2.13.0 (pinned; any failure to
install is reported and that column is skipped). Interpreters come from --python, else
pyenv, else python3.X on PATH.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
VERSIONS = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
TORCH_PIN = "torch==2.13.0"


def interpreter(version: str, given: dict) -> str:
    if version in given:
        return given[version]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")))
    if found:
        return found[-1]
    on_path = shutil.which(f"python{version}")
    if on_path is None:
        raise SystemExit(
            f"CPython {version} not found under {root}/versions nor on PATH; give it with --python {version}=PATH"
        )
    return on_path


def prepare(version: str, venv: str, install: bool, given: dict) -> tuple:
    py = os.path.join(venv, "bin", "python")
    notes = []
    if not os.path.exists(py):
        subprocess.check_call([interpreter(version, given), "-m", "venv", venv])
        install = True
    if install:
        pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.check_call(pip + ["setuptools>=61", "wheel", "numpy"])
        subprocess.check_call(pip + ["--no-build-isolation", "--no-deps", "--force-reinstall", PACKAGE])
        for extra in ("yappi", "viztracer"):
            if subprocess.call(pip + [extra]) != 0:
                notes.append(f"pip install {extra} failed on {version}")
        if version == "3.11" and subprocess.call(pip + [TORCH_PIN]) != 0:
            notes.append(f"pip install {TORCH_PIN} failed on 3.11")
    return py, notes


FLOOR_PROFILE = "floor: no-op C profile function"
FLOOR_MONITORING = "floor: no-op sys.monitoring C callbacks"
FH_PROFILE = "framehook-profiler (profile)"
FH_MONITORING = "framehook-profiler (monitoring)"
OTHERS = ["cProfile", "yappi", "viztracer", "torch.profiler (with_stack=True)"]


def default_backend(row: dict) -> str:
    """The column of the backend Profiler() uses by default (monitoring where it exists)."""
    return FH_MONITORING if FH_MONITORING in row else FH_PROFILE


def table(results: dict) -> list:
    cols = [FLOOR_PROFILE, FLOOR_MONITORING, FH_PROFILE, FH_MONITORING] + OTHERS
    short = [
        "floor (profile fn)",
        "floor (sys.monitoring)",
        "framehook (profile)",
        "framehook (monitoring)",
        "cProfile",
        "yappi",
        "viztracer",
        "torch (3.11)",
    ]
    lines = [
        "| CPython | workload | plain ms | "
        + " | ".join(short)
        + " | **default / its floor** | default vs best other |",
        "|---" * (len(cols) + 5) + "|",
    ]
    for version, res in results.items():
        for wl, row in res["workloads"].items():
            cells = [f"{row[c]:.2f}x" if c in row else "-" for c in cols]
            fh = default_backend(row)
            floor = FLOOR_MONITORING if fh == FH_MONITORING else FLOOR_PROFILE
            best = min(row[c] for c in OTHERS if c in row)
            lines.append(
                f"| {version} | {wl} | {row['plain_ms']:.1f} | "
                + " | ".join(cells)
                + f" | **{row[fh] / row[floor]:.2f}** | {row[fh] / best:.2f} |"
            )
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venvs", default=os.path.join(os.path.expanduser("~"), ".cache", "fh-bench-venvs"))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--no-install", action="store_true", help="reuse the venvs as they are")
    parser.add_argument("--versions", default=",".join(VERSIONS))
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="VERSION=PATH",
        help="the interpreter to use for VERSION (repeatable)",
    )
    args = parser.parse_args(argv)
    given = {}
    for item in args.python:
        version, sep, path = item.partition("=")
        if not sep or not path:
            parser.error(f"--python expects VERSION=PATH, e.g. 3.14=/usr/bin/python3.14; got {item!r}")
        given[version] = path
    results, notes = {}, []
    for version in args.versions.split(","):
        py, extra = prepare(version, os.path.join(args.venvs, version), not args.no_install, given)
        notes += extra
        out = os.path.join(args.venvs, f"bench-{version}.json")
        print(f"[bench] CPython {version}", flush=True)
        subprocess.check_call(
            [py, os.path.join(HERE, "bench_overhead.py"), "--rounds", str(args.rounds), "--json", out],
            stdout=subprocess.DEVNULL,
        )
        with open(out) as fh:
            results[version] = json.load(fh)
    write_markdown(results, notes, args.rounds)
    return 0


def write_markdown(results: dict, notes: list, rounds: int) -> None:
    lines = [
        "# framehook-profiler benchmarks",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, "
        f"{os.cpu_count()} cores (a shared, noisy VM), by `benchmarks/run_matrix.py` "
        f"({rounds} interleaved rounds, medians). Each cell is profiled time / plain time for the "
        "same workload in the same process; lower is better. The floor is a C profile "
        "function that does nothing (and on 3.12+ no-op C callbacks on sys.monitoring), built "
        "by the benchmark; `framehook / floor` is the figure the target (<= 1.15) is about.",
        "",
        "Workloads: `fib` = recursive fib(25); `builtins` = a loop of C calls (append, abs, "
        "len, min, max, isinstance, hash); `methods` = small objects calling methods.",
        "",
    ]
    lines += table(results)
    lines += [
        "",
        "## Recording cost",
        "",
        "| CPython | backend | bytes per event | events/s while recording | events/s building trees |",
        "|---|---|---|---|---|",
    ]
    for version, res in results.items():
        for backend, fh in res["framehook"].items():
            lines.append(
                f"| {version} | {backend} | {fh['bytes_per_event']:.1f} | "
                f"{fh['events_per_second_recording'] / 1e6:.1f} M | "
                f"{res['framehook_postprocessing'] / 1e6:.2f} M |"
            )
    skipped = sorted({f"{name}: {why}" for res in results.values() for name, why in res["skipped"].items()})
    if skipped or notes:
        lines += ["", "## Skipped", ""] + [f"- {s}" for s in skipped + notes]
    with open(os.path.join(PACKAGE, "BENCHMARKS.md.new"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"[bench] wrote {os.path.join(PACKAGE, 'BENCHMARKS.md.new')}; review, then rename to BENCHMARKS.md")


if __name__ == "__main__":
    sys.exit(main())
