"""pyperformance's pure-Python benchmarks run plain, hooked, shadowed and shimmed, side by side.

    python benchmarks/bench_pyperformance.py [--repeat N] [--only richards,nbody] [--dir DIR]

Each benchmark of pyperformance 1.13.0 that needs nothing but pyperf runs in this process,
four ways interleaved per repetition:

  plain     no callback set;
  hooked    a callback that skips every code (what run-only regions and idle callbacks cost);
  shadowed  every fresh frame of a plain function intercepted and run as its own cache entry
            (a GuardedCode of the frame's own code with an empty GuardChecker);
  shim      a do-nothing eval-frame function built here (tests/shim): the floor of any
            installed PEP 523 hook.

pyperf itself is replaced by a small stand-in that records what each script registers, so the
figures come from one process and one clock. The benchmarks come from the pyperformance wheel
(downloaded once with pip into --dir; never installed). Prints one row per benchmark with
medians of --repeat samples, then the geometric means.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import statistics
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import framehook.runtime as rt  # noqa: E402
from shim.build import build_shim  # noqa: E402

PYPERFORMANCE = "1.13.0"
BENCHMARKS = (
    "richards richards_super nbody chaos deltablue go hexiom raytrace float fannkuch nqueens "
    "spectral_norm unpack_sequence pyflate meteor_contest scimark coroutines generators "
    "comprehensions deepcopy pprint logging typing_runtime_protocols json_dumps bpe_tokeniser async_tree"
).split()
ARGV = {"async_tree": ["none"]}  # scripts that need a positional argument
TARGET_SAMPLE_S = 0.05  # loops are chosen so that one plain sample takes at least this


def fetch(directory: Path) -> Path:
    root = directory / f"pyperformance-{PYPERFORMANCE}"
    benchmarks = root / "pyperformance" / "data-files" / "benchmarks"
    if benchmarks.is_dir():
        return benchmarks
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"pyperformance=={PYPERFORMANCE}",
            "--no-deps",
            "-q",
            "-d",
            str(directory),
        ],
        check=True,
    )
    wheel = next(directory.glob(f"pyperformance-{PYPERFORMANCE}-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        z.extractall(root)
    return benchmarks


class Registered:
    def __init__(self, name, kind, func, args, inner_loops):
        self.name, self.kind, self.func, self.args = name, kind, func, args
        self.inner_loops = inner_loops or 1

    def sample(self, loops: int) -> float:
        """Seconds for `loops` runs."""
        if self.kind == "time":
            return self.func(loops, *self.args)
        if self.kind == "async":
            t0 = time.perf_counter()
            for _ in range(loops):
                asyncio.run(self.func(*self.args))
            return time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(loops):
            self.func(*self.args)
        return time.perf_counter() - t0


def stand_in_pyperf(registered: list) -> types.ModuleType:
    """What the benchmark scripts use of pyperf: a Runner that records, perf_counter."""
    mod = types.ModuleType("pyperf")

    class Runner:
        def __init__(self, *args, **kwargs):
            self.metadata = {}
            self.argparser = argparse.ArgumentParser()

        def parse_args(self, args=None):
            return self.argparser.parse_args(sys.argv[1:] if args is None else args)

        def bench_func(self, name, func, *args, inner_loops=None, **kwargs):
            registered.append(Registered(name, "func", func, args, inner_loops))

        def bench_time_func(self, name, func, *args, inner_loops=None, **kwargs):
            registered.append(Registered(name, "time", func, args, inner_loops))

        def bench_async_func(self, name, func, *args, inner_loops=None, **kwargs):
            registered.append(Registered(name, "async", func, args, inner_loops))

        def bench_command(self, *args, **kwargs):
            raise RuntimeError("runs a command: not measured in-process")

    mod.Runner = Runner
    mod.perf_counter = time.perf_counter
    mod.__version__ = "stand-in"
    return mod


def load(directory: Path, name: str) -> Registered:
    script = directory / f"bm_{name}" / "run_benchmark.py"
    registered: list = []
    sys.modules["pyperf"] = stand_in_pyperf(registered)
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [str(script)] + ARGV.get(name, [])
    sys.path.insert(0, str(script.parent))
    try:
        namespace = {"__name__": "__main__", "__file__": str(script)}
        exec(compile(script.read_text(), str(script), "exec"), namespace)
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
    if not registered:
        raise RuntimeError("registered no benchmark")
    return registered[0]


class Modes:
    """Switches between the four ways; codes decided by one callback are reset before the next."""

    def __init__(self, shim):
        self.shim = shim
        self.touched: set = set()
        self.guard = rt.GuardChecker([])  # no guards: passes without building the locals

    def skip(self, frame, entry, state):
        self.touched.add(frame.f_code)
        return None

    def shadow(self, frame, entry, state):
        self.touched.add(frame.f_code)
        return rt.GuardedCode(frame.f_code, self.guard)

    def forget(self):
        for code in self.touched:
            rt.reset_code(code)
        self.touched.clear()

    def run(self, mode: str, bench: Registered, loops: int) -> float:
        gc.collect()
        if mode == "plain":
            return bench.sample(loops)
        if mode == "shim":
            self.shim.install()
            try:
                return bench.sample(loops)
            finally:
                self.shim.uninstall()
        callback = self.skip if mode == "hooked" else self.shadow
        bench.sample(1)  # warm: codes decided (first calls ask the callback) outside the sample
        rt.set_eval_frame(callback)
        try:
            bench.sample(1)
            return bench.sample(loops)
        finally:
            rt.set_eval_frame(None)

    def hits(self) -> int:
        return sum(e.hits for code in self.touched for e in rt.cache_entries(code))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--dir", default=os.path.expanduser("~/.cache/framehook/pyperformance"))
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or BENCHMARKS
    directory = fetch(Path(args.dir))
    modes = Modes(build_shim())
    stats = rt._C._marks_stats()
    how = "armed per call of marked functions" if stats is not None else "an installed eval function"
    print(
        f"CPython {sys.version.split()[0]}, framehook-runtime {rt.__version__}, the hook is {how}; "
        f"pyperformance {PYPERFORMANCE}; medians of {args.repeat}"
    )
    print(
        f"{'benchmark':28s} {'plain ms':>9s} {'hooked':>7s} {'shadow':>7s} {'shim':>6s} {'hook/shim':>9s} {'ns/frame':>9s}"
    )
    rows = []
    for name in names:
        try:
            bench = load(directory, name)
            bench.sample(1)
            t = bench.sample(1)
            loops = max(1, math.ceil(TARGET_SAMPLE_S / max(t, 1e-6)))
        except (Exception, SystemExit) as exc:  # a benchmark that does not run here is reported
            print(f"{name:28s} did not run: {type(exc).__name__}: {exc}")
            continue
        samples = {m: [] for m in ("plain", "hooked", "shadowed", "shim")}
        frames = 0
        for _ in range(args.repeat):
            for mode in samples:
                samples[mode].append(modes.run(mode, bench, loops))
                if mode == "shadowed":
                    frames += modes.hits()
                modes.forget()
        med = {m: statistics.median(v) for m, v in samples.items()}
        # frames per sample: hits over the repetitions, each of 1 + loops runs after the warm run
        per_run_frames = frames / (args.repeat * (loops + 1))
        # too few frames for a per-frame figure to mean anything: left out
        ns_frame = (
            (med["shadowed"] - med["plain"]) / loops / per_run_frames * 1e9 if per_run_frames >= 1000 else float("nan")
        )
        row = {
            "name": name,
            "plain_ms": med["plain"] / loops * 1e3,
            "hooked": med["hooked"] / med["plain"],
            "shadowed": med["shadowed"] / med["plain"],
            "shim": med["shim"] / med["plain"],
            "hook_shim": med["hooked"] / med["shim"],
            "ns_frame": ns_frame,
        }
        rows.append(row)
        print(
            f"{name:28s} {row['plain_ms']:9.2f} {row['hooked']:7.3f} {row['shadowed']:7.3f} {row['shim']:6.3f} "
            f"{row['hook_shim']:9.3f} {row['ns_frame']:9.0f}",
            flush=True,
        )
    if rows:
        print(
            f"{'geometric mean (' + str(len(rows)) + ')':28s} {'':9s} {geomean([r['hooked'] for r in rows]):7.3f} "
            f"{geomean([r['shadowed'] for r in rows]):7.3f} {geomean([r['shim'] for r in rows]):6.3f} "
            f"{geomean([r['hook_shim'] for r in rows]):9.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
