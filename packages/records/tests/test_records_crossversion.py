"""Records crossing CPython versions for real: made here and replayed by every other
interpreter of the matrix found on this machine, and made there and replayed here.

The other interpreter runs the records package with nothing else imported, so it replays
in plain mode (the other modes need their packages built for it and would only be skipped).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import framehook.records as records_pkg
from framehook.records import load, record_call, replay

DATA = Path(__file__).resolve().parent / "records_data"
SRC = Path(records_pkg.__file__).resolve().parents[2]  # the directory holding framehook/
VERSIONS = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
HERE = "%d.%d" % sys.version_info[:2]
MODES = ("plain",)

# Run by the other interpreter: replay the given records, then record the cases there.
CHILD = """
import json, os, sys
cases_dir, out_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, cases_dir)
import cross_cases
from framehook.records import record_call, replay
done = {"version": "%d.%d" % sys.version_info[:2], "replays": [], "recorded": []}
for path in sys.argv[3:]:
    result = replay(path, modes=("plain",))
    done["replays"].append({"path": path, "ok": result.ok, "code_from": result.code_from,
                            "recorded_on": result.recorded_on, "statuses": [m.status for m in result.modes],
                            "report": result.report()})
for name, fn, args, kwargs in cross_cases.cases():
    path = os.path.join(out_dir, name + ".fhrec")
    record_call(fn, args, kwargs, path=path)
    done["recorded"].append(path)
print(json.dumps(done))
"""


def _candidates(version: str) -> list[str]:
    found = []
    on_path = shutil.which(f"python{version}")
    if on_path and "/shims/" not in on_path:  # a pyenv shim may point at another version
        found.append(on_path)
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found += sorted(glob.glob(os.path.join(pyenv, "versions", f"{version}.*", "bin", f"python{version}")), reverse=True)
    for prefix in (os.path.expanduser(f"~/.cache/framehook/interpreters/{version}"), f"/opt/fhpy/{version}"):
        found.append(os.path.join(prefix, "usr", "bin", f"python{version}"))
    return [exe for exe in found if os.access(exe, os.X_OK)]


def other_interpreters() -> dict[str, str]:
    """Minor version -> interpreter, for every version of the matrix but the running one."""
    return {v: c[0] for v in VERSIONS if v != HERE for c in [_candidates(v)] if c}


OTHERS = other_interpreters()


def _run_other(exe: str, out_dir: Path, to_replay: list[Path]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONHOME", None)
    proc = subprocess.run(
        [exe, "-s", "-c", CHILD, str(DATA), str(out_dir), *map(str, to_replay)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, f"{exe} failed:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def cases(monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))
    import cross_cases

    return cross_cases.cases


@pytest.mark.skipif(
    not OTHERS,
    reason=f"no CPython of {', '.join(VERSIONS)} other than {HERE} was found "
    "(PATH, pyenv, ~/.cache/framehook/interpreters, /opt/fhpy)",
)
def test_records_cross_versions_both_ways(tmp_path, cases):
    mine = []
    for name, fn, args, kwargs in cases():
        path = tmp_path / f"here-{name}.fhrec"
        record_call(fn, args, kwargs, path=path)
        mine.append(path)
    assert len(mine) >= 12
    if sys.version_info >= (3, 10):  # a module only 3.10+ can import, replayed everywhere
        import newer_syntax

        path = tmp_path / "here-newer_syntax.fhrec"
        record_call(newer_syntax.take, (iter(range(10)), 3), path=path)
        assert "match" not in load(path).code["source"]
        mine.append(path)
    problems = []
    for version, exe in sorted(OTHERS.items()):
        out_dir = tmp_path / f"on-{version}"
        out_dir.mkdir()
        done = _run_other(exe, out_dir, mine)
        assert done["version"] == version, f"{exe} reports {done['version']}"
        # Made here, replayed there: recompiled from the recorded source.
        assert len(done["replays"]) == len(mine)
        for rep in done["replays"]:
            assert rep["code_from"] == "source" and rep["recorded_on"].startswith(HERE + "."), rep
            if rep["statuses"] != ["match"]:
                problems.append(f"made on {HERE}, replayed on {version}:\n{rep['report']}")
        # Made there, replayed here.
        assert len(done["recorded"]) == len(cases())
        for path in done["recorded"]:
            rec = load(path)
            assert rec.python["version"].startswith(version + ".")
            result = replay(path, modes=MODES)
            assert result.code_from == "source", result.report()
            if [m.status for m in result.modes] != ["match"]:
                problems.append(f"made on {version}, replayed on {HERE}:\n{result.report()}")
    assert not problems, "\n".join(problems)
