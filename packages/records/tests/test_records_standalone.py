"""framehook-records on its own: with no other framehook package (and no numpy) importable,
it records and replays plain records and says which modes it skipped and why.

The child interpreter runs without site-packages (-S: no other distribution, so no entry
point of theirs either) and with a meta path finder refusing the other packages, so an
import of any of them fails loudly instead of finding a copy elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

CHILD = r"""
import io, json, sys
from contextlib import redirect_stdout

BLOCKED = ("framehook.runtime", "framehook.translator", "framehook.profiler", "numpy")

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"{name} is hidden from this test")
        return None

sys.meta_path.insert(0, Blocker())
sys.path.insert(0, sys.argv[1])
from framehook.records import record_call, replay
from framehook.records.cli import main

path = sys.argv[2]
# A module with a source file, as records of real code have (a function typed at -c has none).
module_dir = path + ".d"
import os
os.mkdir(module_dir)
with open(os.path.join(module_dir, "scaled_mod.py"), "w") as fh:
    fh.write("def scaled(values, k=2):\n    return [v * k for v in values], {'n': len(values)}\n")
sys.path.insert(0, module_dir)
from scaled_mod import scaled
record_call(scaled, ([1, 2.5, "a"],), {"k": 3}, path=path)
result = replay(path)
out = io.StringIO()
with redirect_stdout(out):
    rc = main(["replay", "-v", path])
    listed = main(["replay", "--list-modes"])
print(json.dumps({
    "statuses": {m.mode: [m.status, m.reason] for m in result.modes},
    "cli": [rc, listed, out.getvalue()],
    "loaded": sorted(n for n in sys.modules if n.startswith("framehook") or n == "numpy"),
}))
"""


def test_records_replay_plain_records_with_nothing_else_installed(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-S", "-s", "-c", CHILD, str(SRC), str(tmp_path / "s.fhrec")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["statuses"] == {
        "plain": ["match", ""],
        "shadow": ["skip", "framehook-runtime is not installed"],
        "translator": ["skip", "framehook-translator is not installed"],
        "profiled": ["skip", "framehook-profiler is not installed"],
    }
    rc, listed, text = got["cli"]
    assert rc == 0 and listed == 0
    lines = text.splitlines()
    assert lines[0].startswith("PLAN") and lines[1] == "  imports: nothing"  # -v shows the plan first
    assert lines[2].startswith("MATCH") and "plain match, shadow skip" in lines[2]
    assert "  shadow: skipped: framehook-runtime is not installed" in lines
    assert lines[-4:] == [
        "plain        available (framehook.records.modes:plain)",
        "shadow       skipped: framehook-runtime is not installed",
        "translator   skipped: framehook-translator is not installed",
        "profiled     skipped: framehook-profiler is not installed",
    ]
    assert [n for n in got["loaded"] if not n.startswith("framehook.records")] in ([], ["framehook"])
