"""What record_calls() costs per call: median wall time of one call of a small function,
plain, recorded (each call written to a file), and past its cap (looked at, not recorded),
through the runtime's hook and by patching.

    python packages/records/benchmarks/bench_record_calls.py [--calls 300]

Figures go in the README's "Recording calls"; tests never assert on them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import types

from framehook.records.calls import observer_factory, record_calls

SOURCE = '''
def kernel(values, k=2):
    return [v * k for v in values]
'''


def make_module() -> types.ModuleType:
    module = types.ModuleType("bench_calls_mod")
    module.__file__ = "<bench_calls_mod>"
    exec(compile(SOURCE, module.__file__, "exec"), vars(module))
    sys.modules[module.__name__] = module
    return module


def timings(fn, calls: int, distinct: bool) -> list[float]:
    out = []
    for i in range(calls):
        args = ([i, i + 1, i + 2],) if distinct else ([1, 2, 3],)
        start = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    opts = parser.parse_args()
    mod = make_module()
    plain = statistics.median(timings(mod.kernel, opts.calls, True))
    print(f"python {sys.version.split()[0]}; median of {opts.calls} calls each")
    print(f"plain call:                      {plain * 1e6:9.1f} us")
    ways = ["patch"] + (["hook"] if observer_factory() is not None else [])
    for through in ways:
        with tempfile.TemporaryDirectory() as folder:
            with record_calls(mod.kernel, folder, through=through):
                recorded = statistics.median(timings(mod.kernel, opts.calls, True))
            with record_calls(mod.kernel, folder, through=through, cap=1):
                mod.kernel([0])
                capped = statistics.median(timings(mod.kernel, opts.calls, False))
        print(f"{through}: recorded and written:     {recorded * 1e6:9.1f} us")
        print(f"{through}: past the cap (not recorded): {capped * 1e6:9.1f} us")


if __name__ == "__main__":
    main()
