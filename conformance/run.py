"""Replay every golden conformance record on this interpreter through every mode.

    python conformance/run.py [--json OUT] [--mode MODE ...] [-k SUBSTRING] [-v]

Prints a case x mode table and, with --json, writes the results in the schema that
ci/matrix.py reads. A mode that is not available here is "skip" with its reason.
While it runs, a line per finished case group (the case module: ``basics``, ``loops``...)
goes to stderr, starting with ``[conformance]`` (ci/matrix.py's conformance job shows
them as they come). Exit status 1 when any replay failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import _paths

STATUS = {"match": "pass", "mismatch": "fail", "nondeterministic": "fail", "error": "fail", "skip": "skip"}
# the standard replay modes (framehook.records.modes.STANDARD), one per framehook package
MODES = ("plain", "shadow", "translator", "profiled")


def _min_version(notes: list) -> tuple:
    for note in notes:
        if note.startswith("min_version="):
            return tuple(int(x) for x in note.split("=", 1)[1].split("."))
    return (3, 9)


from decisions import normalize  # noqa: E402


def _decision_diff(name: str, recorded: dict | None, replayed: dict | None) -> str | None:
    if not recorded or replayed is None:
        return None
    before = normalize(recorded.get("decisions", recorded))
    replayed = normalize(replayed)
    if before == replayed:
        return None
    keys = sorted(set(before) | set(replayed)) if isinstance(before, dict) and isinstance(replayed, dict) else []
    changed = [k for k in keys if before.get(k) != replayed.get(k)]
    return f"{name}: {', '.join(changed) or 'decisions'} differ from the golden record"


def _group(case: str) -> str:
    return case.split(".", 1)[0]


class Progress:
    """A line per finished case group: its replays' outcomes, and how far the run is."""

    def __init__(self, names: list[str], stream=None) -> None:
        self.groups = sorted({_group(n) for n in names})
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.done = 0

    def group_done(self, group: str, results: list[dict]) -> None:
        self.done += 1
        mine = [r for r in results if _group(r["case"]) == group]
        counts = {s: sum(r["status"] == s for r in mine) for s in ("pass", "fail", "skip")}
        cases = len({r["case"] for r in mine})
        print(
            f"[conformance] {group}: {cases} cases, {len(mine)} replays: {counts['pass']} passed, "
            f"{counts['fail']} failed, {counts['skip']} skipped ({self.done}/{len(self.groups)} groups, "
            f"{time.monotonic() - self.start:.0f} s)",
            file=self.stream,
            flush=True,
        )


def run(modes: tuple, select: str | None, verbose: bool, progress_stream=None) -> dict:
    _paths.setup()
    from framehook.records import load, replay_record
    from framehook.records.errors import RecordError, SourceUnavailableError

    results: list[dict] = []
    decision_diffs: list[str] = []
    here = sys.version_info[:2]
    files = sorted(_paths.GOLDEN.glob("*.fhrec"))
    golden_names = {p.stem for p in files}
    try:
        import fhcases

        defined = {c.name for c in fhcases.load_all()}
    except Exception as exc:  # a broken case module must show up, not hide cases
        defined = set()
        results.append(
            {
                "case": "<case modules>",
                "mode": "plain",
                "status": "fail",
                "reason": f"importing the cases failed: {type(exc).__name__}: {exc}",
            }
        )
    for name in sorted(defined - golden_names):
        if select and select not in name:
            continue
        for mode in modes:
            results.append(
                {
                    "case": name,
                    "mode": mode,
                    "status": "fail",
                    "reason": "no golden record; run conformance/record_golden.py on CPython 3.11",
                }
            )
    chosen = [p for p in files if not select or select in p.stem]
    progress = Progress([p.stem for p in chosen], progress_stream)
    for i, path in enumerate(chosen):
        if i and _group(path.stem) != _group(chosen[i - 1].stem):
            progress.group_done(_group(chosen[i - 1].stem), results)
        name = path.stem
        try:
            rec = load(path)
        except RecordError as exc:
            results += [{"case": name, "mode": m, "status": "fail", "reason": str(exc)} for m in modes]
            continue
        need = _min_version(rec.notes)
        try:
            res = replay_record(rec, modes=modes)
        except SourceUnavailableError as exc:
            if here < need:
                reason = (
                    f"case needs CPython >= {need[0]}.{need[1]} (its syntax does not compile on {here[0]}.{here[1]})"
                )
                results += [{"case": name, "mode": m, "status": "skip", "reason": reason} for m in modes]
            else:
                results += [{"case": name, "mode": m, "status": "fail", "reason": exc.reason} for m in modes]
            continue
        for m in res.modes:
            status = STATUS[m.status]
            reason = m.reason
            if m.diffs:
                reason += ": " + "; ".join(m.diffs[:3])
            if status == "fail" and here < need:
                # records carry only the function's own source, so a case of a 3.11 module
                # may compile here; what it does may still need the newer CPython
                status = "skip"
                reason = f"case needs CPython >= {need[0]}.{need[1]}: {reason}"
            if status == "pass" and res.code_from == "source" and verbose:
                reason = "recompiled from the recorded source"
            results.append({"case": name, "mode": m.mode, "status": status, "reason": reason})
            if m.mode == "translator" and m.status == "match":
                diff = _decision_diff(name, rec.translator, m.decisions)
                if diff:
                    decision_diffs.append(diff)
    if chosen:
        progress.group_done(_group(chosen[-1].stem), results)
    return {"python": platform.python_version(), "results": results, "decision_diffs": decision_diffs}


def print_table(data: dict, modes: tuple, verbose: bool) -> None:
    by_case: dict[str, dict[str, dict]] = {}
    for item in data["results"]:
        by_case.setdefault(item["case"], {})[item["mode"]] = item
    width = max([len(c) for c in by_case] + [10]) + 2
    print(f"framehook conformance on CPython {data['python']}: {len(by_case)} cases x {len(modes)} modes")
    print("case".ljust(width) + "".join(m.ljust(12) for m in modes))
    for name in sorted(by_case):
        row = by_case[name]
        cells = [row.get(m, {}).get("status", "-") for m in modes]
        if verbose or any(c == "fail" for c in cells):
            print(name.ljust(width) + "".join(c.ljust(12) for c in cells))
    counts = {s: sum(1 for i in data["results"] if i["status"] == s) for s in ("pass", "fail", "skip")}
    skips: dict[str, int] = {}
    for item in data["results"]:
        if item["status"] == "skip":
            key = f"{item['mode']}: {item['reason']}"
            skips[key] = skips.get(key, 0) + 1
    for item in data["results"]:
        if item["status"] == "fail":
            print(f"  FAIL {item['case']} [{item['mode']}]: {item['reason']}")
    for key, n in sorted(skips.items()):
        print(f"  skip x{n} {key}")
    for diff in data["decision_diffs"]:
        print(f"  translator decisions differ: {diff}")
    if not verbose:
        print(f"(rows shown only for failing cases; -v shows all {len(by_case)})")
    print(
        f"conformance: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped "
        f"(of {len(data['results'])} replays: {len(by_case)} cases x {len(modes)} modes)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", metavar="OUT", help="write results as JSON (the schema ci/matrix.py reads)")
    parser.add_argument("--mode", action="append", choices=MODES)
    parser.add_argument("-k", dest="select", help="only cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="a row for every case")
    parser.add_argument("--no-progress", action="store_true", help="no line per finished case group on stderr")
    args = parser.parse_args(argv)
    modes = tuple(args.mode or MODES)
    start = time.monotonic()
    with open(os.devnull, "w") if args.no_progress else contextlib.nullcontext() as sink:
        data = run(modes, args.select, args.verbose, sink)
    print_table(data, modes, args.verbose)
    print(f"({time.monotonic() - start:.1f}s)")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1) + "\n")
    return 1 if any(i["status"] == "fail" for i in data["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())
