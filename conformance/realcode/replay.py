"""Replay the real-code tier's records on this interpreter, in every mode, and classify them.

    python conformance/realcode/replay.py --records DIR [--json OUT] [--lenient] [--mode M ...]

DIR is what record.py wrote (its manifest.json names the recording CPython and each
library's version). Each library's pinned source is put on sys.path (fetched when it is
not in the cache yet), every record is replayed with ``framehook.records.replay_record``
through every mode available here, and every record that does not MATCH gets a class
(classify.py): not-recordable, cpython-difference (named), library-version or
framehook-defect. Prints matched/total per library and the per-class counts; --json
writes the results for ci/matrix.py. Exit status 1 when any record is a framehook defect
(unless --lenient or FRAMEHOOK_REALCODE_STRICT=0, for investigating one), 2 when the
records or a library cannot be had; 0 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import os
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import classify  # noqa: E402
import sources  # noqa: E402


def _records_api() -> Any:
    try:
        import framehook.records as fr
    except ImportError:  # run from a checkout without the package installed
        sys.path.insert(0, str(HERE.parent.parent / "packages" / "records" / "src"))
        import framehook.records as fr
    return fr


def stem_of(target: str) -> str:
    """The file name stem the records plugin gives a target's records (MODULE.QUALNAME)."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", target.replace(":", "."))


def imported_version(lib: sources.Library, where: Path) -> str:
    """The version of ``lib`` this process imports: the pinned one when its package comes
    from the pinned tree, else the other copy's ``__version__`` (an earlier import of
    another copy wins over sys.path)."""
    top = lib.targets[0].split(":", 1)[0].split(".", 1)[0]
    try:
        module = importlib.import_module(top)
    except Exception as exc:
        return f"none importable ({type(exc).__name__}: {exc})"
    origin = Path(getattr(module, "__file__", None) or "").resolve()
    if where.resolve() in origin.parents:
        return lib.version
    return f"{getattr(module, '__version__', 'unknown')} from {origin}"


def replay_one(fr: Any, path: Path, library: str, manifest: dict, modes: list | None, replayed: str) -> dict:
    here = platform.python_version()
    info = manifest["libraries"][library]
    targets = {stem_of(t): t for t in info["functions"]}
    stem = path.name.rsplit(".", 2)[0]
    item: dict = {"library": library, "file": f"{library}/{path.name}", "case": targets.get(stem, stem)}
    diffs: list = []
    errors: list = []
    missing: list = []
    kinds: list = []
    try:
        rec = fr.load(path)
        missing = list(rec.missing)
        kinds = classify.placeholders(rec.to_document())
        result = fr.replay_record(rec, modes=modes)
        verdict = result.verdict
        item["modes"] = {m.mode: m.status for m in result.modes}
        for m in result.modes:
            if m.status == "error":
                errors.append(f"{m.mode}: {m.reason}")
            for diff in m.diffs if m.status == "mismatch" else ():
                if diff not in diffs:
                    diffs.append(diff)
    except fr.RecordError as exc:
        verdict = "ERROR"
        errors.append(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}")
    except Exception as exc:  # replay itself failed: always a defect to look at
        verdict = "ERROR"
        errors.append(f"replay raised {type(exc).__name__}: {exc}")
    verdict_of = classify.classify(
        item["case"],
        verdict=verdict,
        diffs=diffs,
        errors=errors,
        missing=missing,
        placeholder_kinds=kinds,
        recorded_on=manifest["python"],
        replayed_on=here,
        recorded_library=info["version"],
        replayed_library=replayed,
        modes=item.get("modes"),
    )
    # a placeholder compares equal to one of the same type: a MATCH that holds placeholders
    # checked less than the call's values, and is counted apart
    item.update(verdict=verdict, cls=verdict_of.cls, cause=verdict_of.cause, placeholders=len(missing))
    if errors or diffs:
        item["detail"] = [classify.normalize(t, 300) for t in (errors + diffs)[:4]]
    return item


def run(records: Path, modes: list | None, only: list | None) -> dict:
    fr = _records_api()
    manifest = json.loads((records / "manifest.json").read_text())
    results: list = []
    start = time.monotonic()
    for library in sorted(manifest["libraries"]):
        if only and library not in only:
            continue
        lib = sources.libraries([library])[0]
        where = sources.import_path(lib)
        if str(where) not in sys.path:
            sys.path.insert(0, str(where))
        replayed = imported_version(lib, where)
        for rec_path in sorted(
            (records / library).glob("*.fhrec"), key=lambda p: (p.name.rsplit(".", 2)[0], int(p.name.split(".")[-2]))
        ):
            results.append(replay_one(fr, rec_path, library, manifest, modes, replayed))
    return {
        "python": platform.python_version(),
        "recorded_on": manifest["python"],
        "cap": manifest.get("cap"),
        "libraries": {name: info["version"] for name, info in manifest["libraries"].items()},
        "recorded_calls": {
            name: sum(f["recorded"] for f in info["functions"].values()) for name, info in manifest["libraries"].items()
        },
        "seconds": round(time.monotonic() - start, 1),
        "results": results,
    }


def summarize(data: dict) -> list:
    """The lines printed for one interpreter's replays."""
    lines = [
        f"realcode on CPython {data['python']} (recorded on {data['recorded_on']}, at most {data['cap']} "
        f"records per function): {len(data['results'])} records in {data['seconds']}s"
    ]
    by_lib: dict = collections.defaultdict(list)
    for item in data["results"]:
        by_lib[item["library"]].append(item)
    for library, items in sorted(by_lib.items()):
        matched = sum(1 for i in items if i["cls"] == classify.MATCH)
        lines.append(f"  {library} {data['libraries'][library]}: {matched}/{len(items)} MATCH")
    counts = collections.Counter(i["cls"] for i in data["results"])
    total = len(data["results"]) or 1
    weak = sum(1 for i in data["results"] if i["cls"] == classify.MATCH and i.get("placeholders"))
    lines.append(
        f"  MATCH {counts[classify.MATCH]} ({100 * counts[classify.MATCH] / total:.1f}%; {weak} of them hold "
        "placeholders, compared by type only); " + ", ".join(f"{c} {counts[c]}" for c in classify.CLASSES)
    )
    for cls, shown in (
        (classify.DEFECT, 20),
        (classify.CPYTHON_DIFFERENCE, 10),
        (classify.LIBRARY_VERSION, 10),
        (classify.NOT_RECORDABLE, 8),
    ):
        causes = collections.Counter(i["cause"] for i in data["results"] if i["cls"] == cls)
        for cause, n in causes.most_common(shown):
            lines.append(f"    {n:5} {cls}: {cause}")
        if len(causes) > shown:
            lines.append(f"          {cls}: {len(causes) - shown} more causes (see the JSON results)")
    return lines


def strict_from_env() -> bool:
    return os.environ.get("FRAMEHOOK_REALCODE_STRICT", "1") != "0"


def _with_hash_seed() -> None:
    """Run again under the tier's PYTHONHASHSEED when started without it (a seed can only
    be set when the interpreter starts): see record.HASH_SEED."""
    if os.environ.get("PYTHONHASHSEED") != sources.HASH_SEED:
        env = dict(os.environ, PYTHONHASHSEED=sources.HASH_SEED)
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", required=True, help="the directory record.py wrote")
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON (read by ci/matrix.py)")
    parser.add_argument("--mode", action="append", help="only this replay mode (repeatable; default: every one)")
    parser.add_argument("--lib", action="append", help="only this library (repeatable)")
    parser.add_argument("--lenient", action="store_true", help="exit 0 even when a record is a framehook defect")
    args = parser.parse_args(argv)
    records = Path(args.records)
    if not (records / "manifest.json").exists():
        print(f"[realcode] error: {records}/manifest.json is missing: run conformance/realcode/record.py first")
        return 2
    try:
        data = run(records, args.mode, args.lib)
    except sources.FetchError as exc:
        print(f"[realcode] error: {exc}")
        return 2
    strict = not args.lenient and strict_from_env()
    data["strict"] = strict
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1) + "\n")
    print("\n".join(summarize(data)), flush=True)
    defects = sum(1 for i in data["results"] if i["cls"] == classify.DEFECT)
    if defects and strict:
        print(f"[realcode] {defects} framehook defects (strict)")
        return 1
    return 0


if __name__ == "__main__":
    _with_hash_seed()
    sys.exit(main())
