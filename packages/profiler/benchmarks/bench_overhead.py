"""Overhead of framehook-profiler against the hook floor and other profilers, side by side.

    python bench_overhead.py [--rounds N] [--json OUT]

For each workload (recursive fib, a builtin-heavy loop, a method-heavy object workload)
every variant is timed in interleaved rounds in this one process, and the median time is
divided by the median of the plain (unprofiled) run. The floor is a C profile function
that does nothing (and on 3.12+ no-op C callbacks registered with sys.monitoring), built
here at run time. Profilers that are not installed are reported as skipped.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# --- workloads -------------------------------------------------------------------------
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def wl_fib():
    fib(25)


def wl_builtins():
    data = []
    total = 0
    for i in range(60000):
        data.append(abs(i - 30000))
        total += len(data) + min(i, 5) + max(i, 3)
        if isinstance(i, int):
            total += hash(i) & 1
    return total


class Vector:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def add(self, other):
        return Vector(self.x + other.x, self.y + other.y)

    def scale(self, k):
        return Vector(self.x * k, self.y * k)

    def norm2(self):
        return self.x * self.x + self.y * self.y


class Body:
    def __init__(self, i):
        self.pos = Vector(i, -i)
        self.vel = Vector(1, 2)

    def step(self, dt):
        self.pos = self.pos.add(self.vel.scale(dt))
        return self.energy()

    def energy(self):
        return self.vel.norm2() * 0.5


def wl_methods():
    bodies = [Body(i) for i in range(50)]
    total = 0.0
    for _ in range(300):
        for body in bodies:
            total += body.step(0.01)
    return total


WORKLOADS = {"fib": wl_fib, "builtins": wl_builtins, "methods": wl_methods}


# --- the floor extension ---------------------------------------------------------------
def build_floor():
    """Compiles floor.c for this interpreter into a temporary directory and imports it."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    out = tempfile.mkdtemp(prefix="fh-floor-")
    dist = Distribution(
        {"name": "fh_bench_floor", "ext_modules": [Extension("fh_bench_floor", [os.path.join(HERE, "floor.c")])]}
    )
    cmd = build_ext(dist)
    cmd.build_lib = out
    cmd.build_temp = os.path.join(out, "tmp")
    cmd.ensure_finalized()
    cmd.run()
    sys.path.insert(0, out)
    try:
        return importlib.import_module("fh_bench_floor")
    finally:
        sys.path.remove(out)
        shutil.rmtree(out, ignore_errors=True)  # the loaded module stays mapped


# --- variants: (setup, teardown) pairs around a timed call ------------------------------
class Variant:
    def __init__(self, name):
        self.name = name
        self.skip = None

    def start(self):
        pass

    def stop(self):
        pass


class Plain(Variant):
    pass


class FloorProfile(Variant):
    def __init__(self, floor):
        super().__init__("floor: no-op C profile function")
        self.floor = floor

    def start(self):
        self.floor.set_profile(True)

    def stop(self):
        self.floor.set_profile(False)


class FloorMonitoring(Variant):
    """No-op C callbacks on the events a profiler needs (3.12+)."""

    def __init__(self, floor):
        super().__init__("floor: no-op sys.monitoring C callbacks")
        self.floor = floor
        mon = getattr(sys, "monitoring", None)
        if mon is None:
            self.skip = "sys.monitoring is 3.12+"
            return
        self.mon = mon
        ev = mon.events
        self.events = (
            ev.PY_START | ev.PY_RETURN | ev.PY_UNWIND | ev.PY_RESUME | ev.PY_YIELD | ev.CALL | ev.C_RETURN | ev.C_RAISE
        )
        self.tool = 5

    def start(self):
        mon = self.mon
        mon.use_tool_id(self.tool, "fh-floor")
        for event in (1 << i for i in range(20)):
            if event & self.events:
                mon.register_callback(self.tool, event, self.floor.noop)
        mon.set_events(self.tool, self.events)

    def stop(self):
        mon = self.mon
        mon.set_events(self.tool, 0)
        for event in (1 << i for i in range(20)):
            if event & self.events:
                mon.register_callback(self.tool, event, None)
        mon.free_tool_id(self.tool)


class Framehook(Variant):
    """framehook-profiler with one backend: "profile" (a C profile function, every version)
    or "monitoring" (sys.monitoring C callbacks, 3.12+)."""

    def __init__(self, backend):
        super().__init__(f"framehook-profiler ({backend})")
        from framehook.profiler import _tracer

        self._tracer = _tracer
        self.backend = backend
        self.events = []  # (events, memory bytes, seconds)
        if backend == "monitoring" and not _tracer.HAVE_MONITORING:
            self.skip = "sys.monitoring is 3.12+"

    def start(self):
        self.tracer = self._tracer.Tracer(monitoring=self.backend == "monitoring")
        self.t0 = time.perf_counter()
        self.tracer.start()

    def stop(self):
        self.tracer.stop()
        elapsed = time.perf_counter() - self.t0
        self.events.append((self.tracer.event_count, self.tracer.memory, elapsed))
        self.tracer = None


class CProfile(Variant):
    def __init__(self):
        super().__init__("cProfile")
        import cProfile

        self.cls = cProfile.Profile

    def start(self):
        self.prof = self.cls()
        self.prof.enable()

    def stop(self):
        self.prof.disable()
        self.prof = None


class Yappi(Variant):
    def __init__(self):
        super().__init__("yappi")
        try:
            import yappi
        except ImportError as exc:
            self.skip = f"yappi not installed ({exc})"
            return
        self.yappi = yappi

    def start(self):
        self.yappi.clear_stats()
        self.yappi.start(builtins=True)

    def stop(self):
        self.yappi.stop()
        self.yappi.clear_stats()


class VizTracer(Variant):
    def __init__(self):
        super().__init__("viztracer")
        try:
            from viztracer import VizTracer as cls
        except ImportError as exc:
            self.skip = f"viztracer not installed ({exc})"
            return
        self.tracer = cls(verbose=0, tracer_entries=2_000_000)

    def start(self):
        self.tracer.start()

    def stop(self):
        self.tracer.stop()
        self.tracer.clear()


class TorchTracer(Variant):
    def __init__(self):
        super().__init__("torch.profiler (with_stack=True)")
        try:
            import torch  # noqa: F401
            import torch.profiler as tp
        except ImportError as exc:
            self.skip = f"torch not installed ({exc.__class__.__name__}: {exc})"
            return
        self.tp = tp

    def start(self):
        self.prof = self.tp.profile(activities=[self.tp.ProfilerActivity.CPU], with_stack=True)
        self.prof.__enter__()

    def stop(self):
        self.prof.__exit__(None, None, None)
        self.prof = None


def time_once(variant, fn):
    gc.collect()
    gc.disable()
    try:
        variant.start()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        variant.stop()
    finally:
        gc.enable()
    return t1 - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", help="write the results here as JSON")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--only", help="comma-separated variant names to run (plain always runs)")
    args = parser.parse_args(argv)

    floor = build_floor()
    variants = [
        Plain("plain"),
        FloorProfile(floor),
        FloorMonitoring(floor),
        Framehook("profile"),
        Framehook("monitoring"),
        CProfile(),
        Yappi(),
        VizTracer(),
        TorchTracer(),
    ]
    if args.only:
        keep = set(args.only.split(","))
        variants = [
            v for v in variants if v.name == "plain" or v.name in keep or v.name.startswith("floor") and "floor" in keep
        ]
    active = [v for v in variants if v.skip is None]
    results = {"python": sys.version.split()[0], "workloads": {}, "skipped": {}, "machine": f"{os.cpu_count()} cores"}
    for v in variants:
        if v.skip:
            results["skipped"][v.name] = v.skip
            print(f"skipped {v.name}: {v.skip}", file=sys.stderr)
    for wl_name in args.workloads.split(","):
        fn = WORKLOADS[wl_name]
        for v in active:  # warm up every variant once
            time_once(v, fn)
        times = {v.name: [] for v in active}
        for _ in range(args.rounds):
            for v in active:
                times[v.name].append(time_once(v, fn))
        plain = statistics.median(times["plain"])
        row = {name: statistics.median(ts) / plain for name, ts in times.items()}
        row["plain_ms"] = plain * 1e3
        results["workloads"][wl_name] = row
        print(f"{wl_name}: " + ", ".join(f"{k}={v:.2f}" for k, v in row.items()), file=sys.stderr)
    results["framehook"] = {}
    for fh in (v for v in active if isinstance(v, Framehook)):
        events = sum(e for e, _, _ in fh.events)
        memory = sum(m for _, m, _ in fh.events)
        seconds = sum(s for _, _, s in fh.events)
        results["framehook"][fh.backend] = {
            "bytes_per_event": memory / events,
            "events_per_second_recording": events / seconds,
            "events": events,
        }
    results["framehook_postprocessing"] = postprocess_rate()
    print(json.dumps(results, indent=1))
    if args.json:
        with open(args.json, "w") as fh_out:
            json.dump(results, fh_out, indent=1)
    return 0


def postprocess_rate():
    """Events turned into call trees per second (the Python half)."""
    from framehook.profiler import Profiler

    with Profiler() as prof:
        wl_methods()
    tracer = prof._tracer
    t0 = time.perf_counter()
    profile = prof._build()  # stop() already built one: time a fresh build
    elapsed = time.perf_counter() - t0
    return tracer.event_count / elapsed if profile.events else 0.0


if __name__ == "__main__":
    sys.exit(main())
