"""Whole commands at scale: framehook-profile against python -m cProfile and viztracer.

    python bench_scale.py [--quick] [--sizes 25,30,36] [--reps N] [--json OUT]

For fib(25), fib(30) and fib(36) (242,785 / 2,692,537 / 48,315,633 calls) each command is
run in a child process and timed from its start to its exit, after the output is written
(the output file is checked), with the child's peak RSS (ru_maxrss from wait4):

- pstats: ``framehook-profile -o out.pstats`` and ``python -m cProfile -o out.prof``;
- Chrome trace: ``framehook-profile -o out.json`` and ``viztracer -o out.json``;
- plain: ``python script.py``, no profiler, the baseline of time and memory.

Medians over the repetitions, which run interleaved (every command once per round).
Post-processing is the time from the end of the script's code (it prints a monotonic
timestamp there) to the command's exit; its throughput is given in events per second,
counting two events per call (its entry and its exit) for every tool and version, so
that figures before and after a change compare; a limited Chrome run counts the events it
keeps (``--max-events``), which is what it writes.

viztracer keeps a ring of its newest ``tracer_entries`` events (default 1,000,000). Up to
``--limit-from`` calls it is given room for every event, so both traces hold everything;
from there (fib(36) by default) both keep at most ``--max-events`` (viztracer's
``--tracer_entries``, framehook-profile's ``--max-events`` where it has the option; a
framehook-profile without it runs unlimited, which the table says).

Each child runs under an address-space limit (``--mem-limit``, GB) and a timeout: a run
that hits either is reported as failed with the reason, and the others go on. Works
against any framehook-profiler that has the command line (``--quick``: fib(25) only).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from typing import Dict, List, Optional

SCRIPT = textwrap.dedent("""
    import sys
    import time

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    fib({n})
    print("BENCH_END", time.monotonic(), flush=True)
""")


def fib_calls(n: int) -> int:
    a, b = 0, 1  # calls(n) = 2 * F(n + 1) - 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1


class Run:
    """One command, run once: its times, memory and what became of it."""

    def __init__(self, wall: float, post: Optional[float], rss_mb: float, events: int, error: str = "") -> None:
        self.wall = wall
        self.post = post
        self.rss_mb = rss_mb
        self.events = events
        self.error = error


def run_child(
    command: List[str], cwd: str, output: Optional[str], timeout: float, mem_limit_gb: float, default_events: int
) -> Run:
    if output is not None and os.path.exists(output):
        os.unlink(output)
    limit = int(mem_limit_gb * (1 << 30))

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    out_path = os.path.join(cwd, "child.out")
    err_path = os.path.join(cwd, "child.err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=limits)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        end = time.monotonic()
        proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    wall = end - start
    rss_mb = usage.ru_maxrss / 1024.0  # KB on Linux
    stdout = open(out_path, errors="replace").read()
    stderr = open(err_path, errors="replace").read()
    found = re.search(r"BENCH_END ([\d.]+)", stdout)
    post = end - float(found.group(1)) if found else None
    events = default_events
    error = ""
    if timed_out.is_set():
        error = f"timeout after {timeout:.0f} s"
    elif proc.returncode != 0:
        tail = stderr.strip().splitlines()[-1:] or [""]
        memory = "MemoryError" in stderr or "memory" in tail[0].lower()
        error = f"memory limit ({mem_limit_gb:g} GB)" if memory else f"exit {proc.returncode}: {tail[0][:120]}"
    elif output is not None and not (os.path.exists(output) and os.path.getsize(output) > 0):
        error = "no output written"
    return Run(wall, post, rss_mb, events, error)


def framehook_has_max_events(python: str, workdir: str) -> bool:
    script = os.path.join(workdir, "probe.py")
    with open(script, "w") as fh:
        fh.write("pass\n")
    proc = subprocess.run(
        [python, "-m", "framehook.profiler", "--max-events", "1000", "-o", os.path.join(workdir, "probe.json"), script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode == 0


def commands(
    python: str,
    viztracer: Optional[str],
    n: int,
    fmt: str,
    workdir: str,
    limited: bool,
    max_events: int,
    fh_limit: bool,
) -> Dict[str, tuple]:
    """tool -> (command, output path, note) for one workload and format."""
    script = os.path.join(workdir, f"fib{n}.py")
    out: Dict[str, tuple] = {"plain": ([python, script], None, "")}
    if fmt == "pstats":
        target = os.path.join(workdir, "out.pstats")
        out["framehook"] = ([python, "-m", "framehook.profiler", "-o", target, script], target, "")
        prof = os.path.join(workdir, "out.prof")
        out["cProfile"] = ([python, "-m", "cProfile", "-o", prof, script], prof, "")
        return out
    target = os.path.join(workdir, "out.json")
    fh_cmd = [python, "-m", "framehook.profiler", "-o", target]
    note = ""
    if limited:
        if fh_limit:
            fh_cmd += ["--max-events", str(max_events)]
            note = f"max_events={max_events:,}"
        else:
            note = "unlimited (no --max-events)"
    out["framehook"] = (fh_cmd + [script], target, note)
    if viztracer is not None:
        viz = os.path.join(workdir, "viz.json")
        entries = max_events if limited else 2 * fib_calls(n) + 100_000
        out["viztracer"] = (
            [viztracer, "--quiet", "--tracer_entries", str(entries), "-o", viz, script],
            viz,
            f"tracer_entries={entries:,}",
        )
    return out


def median(values: List[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fib(25) only")
    parser.add_argument("--sizes", default="25,30,36", help="fib sizes (default 25,30,36)")
    parser.add_argument("--formats", default="pstats,chrome", help="pstats,chrome")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument(
        "--max-events",
        type=int,
        default=1_000_000,
        help="event limit of the limited Chrome runs (default 1,000,000, viztracer's default tracer_entries)",
    )
    parser.add_argument(
        "--limit-from", type=int, default=36, help="fib size from which Chrome runs are limited (default 36)"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--mem-limit", type=float, default=8.0, help="GB of address space per run")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter with framehook-profiler installed (default: this one)"
    )
    parser.add_argument(
        "--viztracer", help="the viztracer command (default: next to --python's interpreter, else on PATH)"
    )
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.max_events < 1:
        parser.error("--reps and --max-events must be positive")
    sizes = [25] if args.quick else [int(s) for s in args.sizes.split(",")]
    formats = args.formats.split(",")
    viztracer = (
        args.viztracer or shutil.which("viztracer", path=os.path.dirname(args.python)) or shutil.which("viztracer")
    )
    workdir = tempfile.mkdtemp(prefix="fh-bench-scale-")
    version = subprocess.run(
        [args.python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
    ).stdout.strip()
    fh_limit = framehook_has_max_events(args.python, workdir)
    print(
        f"CPython {version}; viztracer: {viztracer or 'not installed'}; framehook-profile "
        f"--max-events: {'yes' if fh_limit else 'no'}; {args.reps} rounds; "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    results = []
    try:
        for n in sizes:
            with open(os.path.join(workdir, f"fib{n}.py"), "w") as fh:
                fh.write(SCRIPT.format(n=n))
            calls = fib_calls(n)
            for fmt in formats:
                cmds = commands(
                    args.python, viztracer, n, fmt, workdir, n >= args.limit_from, args.max_events, fh_limit
                )
                runs: Dict[str, List[Run]] = {tool: [] for tool in cmds}
                limited = fmt == "chrome" and n >= args.limit_from
                events = min(2 * calls, args.max_events) if limited else 2 * calls
                for _ in range(args.reps):
                    for tool, (command, output, _) in cmds.items():
                        run = run_child(command, workdir, output, args.timeout, args.mem_limit, events)
                        runs[tool].append(run)
                        if run.error:
                            print(f"  fib({n}) {fmt} {tool}: {run.error}", flush=True)
                rows = summarize(n, calls, fmt, cmds, runs)
                results.extend(rows)
                print_rows(rows)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"python": version, "reps": args.reps, "rows": results}, fh, indent=1)
    return 0


def summarize(n: int, calls: int, fmt: str, cmds: Dict[str, tuple], runs: Dict[str, List[Run]]) -> List[dict]:
    rows = []
    peer = "cProfile" if fmt == "pstats" else "viztracer"
    ok = {tool: [r for r in rs if not r.error] for tool, rs in runs.items()}
    peer_wall = median([r.wall for r in ok.get(peer, [])])
    for tool, rs in runs.items():
        good = ok[tool]
        row = {
            "workload": f"fib({n})",
            "calls": calls,
            "format": fmt if tool != "plain" else "-",
            "tool": tool,
            "note": cmds[tool][2],
            "runs": len(rs),
            "failed": len(rs) - len(good),
            "errors": sorted({r.error for r in rs if r.error}),
        }
        if good:
            wall = median([r.wall for r in good])
            posts = [r.post for r in good if r.post is not None]
            post = median(posts) if posts else None
            events = int(median([r.events for r in good]))
            row.update(
                wall_s=wall,
                wall_min_s=min(r.wall for r in good),
                wall_max_s=max(r.wall for r in good),
                peak_rss_mb=median([r.rss_mb for r in good]),
                post_s=post,
                events=events,
                events_per_s=(events / post) if post and tool != "plain" else None,
                vs_peer=(wall / peer_wall) if tool == "framehook" and peer_wall == peer_wall else None,
            )
        rows.append(row)
    return rows


def print_rows(rows: List[dict]) -> None:
    for row in rows:
        name = f"{row['workload']:<9} {row['format']:<7} {row['tool']:<10}"
        if "wall_s" not in row:
            print(f"{name} failed: {'; '.join(row['errors'])}", flush=True)
            continue
        post = f"{row['post_s']:8.2f}" if row["post_s"] is not None else "       -"
        rate = f"{row['events_per_s'] / 1e6:8.2f} M/s" if row["events_per_s"] else "           -"
        ratio = (
            f"  x{row['vs_peer']:.2f} of {'cProfile' if row['format'] == 'pstats' else 'viztracer'}"
            if row["vs_peer"]
            else ""
        )
        note = f"  [{row['note']}]" if row["note"] else ""
        failed = f"  ({row['failed']} of {row['runs']} failed)" if row["failed"] else ""
        print(
            f"{name} total {row['wall_s']:8.2f} s (min {row['wall_min_s']:.2f})  "
            f"RSS {row['peak_rss_mb']:8.1f} MB  post {post} s {rate}{ratio}{note}{failed}",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
