"""CPython's own regression tests, run plain, under a do-nothing eval-frame shim, and
with framehook's pass-through callback intercepting every frame: each test must end as
it does plain, or as under the shim (which alone changes a few outcomes on 3.12+)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from framehook.runtime import _C

pytestmark = pytest.mark.regrtest

HERE = Path(__file__).resolve().parent

MODULES = [
    "test_generators",
    "test_scopes",
    "test_exceptions",
    "test_with",
    "test_contextlib",
    "test_contextlib_async",
    "test_coroutines",
    "test_asyncgen",
    "test_yield_from",
    "test_listcomps",
    "test_setcomps",
    "test_dictcomps",
    "test_genexps",
    "test_grammar",
    "test_patma",
    "test_class",
    "test_descr",
    "test_super",
    "test_funcattrs",
    "test_frame",
    "test_raise",
    "test_keywordonlyarg",
    "test_positional_only_arg",
    "test_unpack_ex",
    "test_decorators",
    "test_dataclasses",
    "test_exception_group",
    "test_except_star",
    "test_traceback",
    "test_sys_settrace",
    "test_sys_setprofile",
    "test_bdb",
    "test_pdb",
    "test_profile",
    "test_cprofile",
]

# Outcomes that differ for a reason of the test's own making, not the hook's.
KNOWN = {
    "test.test_descr.ClassPropertiesAndMethods.test_slots": (
        "counts gc-tracked objects around the first call of a method; the pass-through "
        "callback's code.replace() copy holds a new co_varnames tuple, tracked until the next collection"
    ),
}


# Where the hook is armed per call (3.15) nothing stays installed, so the bare shim's own
# changes are no excuse: the hook must end every test as plain CPython does.
ARMED_PER_CALL = _C._marks_stats() is not None


def accepted(plain, shim):
    """The outcomes the hook may end a test with, given the plain and shim ones."""
    return (plain,) if ARMED_PER_CALL else (plain, shim)


def available(name):
    return importlib.util.find_spec("test." + name) is not None


def run(mode, modules, shim_path, cwd):
    env = dict(os.environ)
    for var in ("COVERAGE_PROCESS_START", "PYTHONTRACEMALLOC"):
        env.pop(var, None)
    # like regrtest, each run works in a scratch directory (some tests write files there)
    out = subprocess.run(
        [sys.executable, str(HERE / "regrtest_runner.py"), mode, "--shim", shim_path, *modules],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=str(cwd),
    )
    assert out.returncode == 0, f"{mode} run crashed:\n{out.stderr[-3000:]}"
    return json.loads(out.stdout)


MODES = ("plain", "shim", "hook")


@pytest.fixture(scope="module")
def outcomes(shim, tmp_path_factory):
    modules = [m for m in MODULES if available(m)]
    return {mode: run(mode, modules, shim.__file__, tmp_path_factory.mktemp(mode)) for mode in MODES}


def confirm(test_id, shim_path, tmp_path_factory):
    """Re-runs one diverging test alone in each mode: outcome per mode, or None if flaky."""
    name = test_id[len("test.") :]
    again = {mode: run(mode, [name], shim_path, tmp_path_factory.mktemp("again-" + mode)) for mode in MODES}
    got = {mode: again[mode][name].get(test_id) for mode in MODES}
    return got if got["hook"] not in accepted(got["plain"], got["shim"]) else None


def test_regression_modules_present():
    missing = [m for m in ("test_grammar", "test_generators", "test_descr") if not available(m)]
    if missing:
        pytest.skip(f"this interpreter was installed without CPython's test package ({missing})")
    assert len([m for m in MODULES if available(m)]) >= 30


def test_hook_matches_plain_or_shim(outcomes, shim, tmp_path_factory):
    plain, shim_out, hook = outcomes["plain"], outcomes["shim"], outcomes["hook"]
    diverged = []
    total = 0
    for module, tests in plain.items():
        ids = set(tests) | set(shim_out.get(module, {})) | set(hook.get(module, {}))
        total += len(ids)
        for test_id in sorted(ids):
            got = hook.get(module, {}).get(test_id)
            if got in accepted(tests.get(test_id), shim_out.get(module, {}).get(test_id)) or test_id in KNOWN:
                continue
            confirmed = confirm(test_id, shim.__file__, tmp_path_factory)
            if confirmed is not None:
                diverged.append(f"{test_id}: " + " ".join(f"{m}={o}" for m, o in confirmed.items()))
    assert total > 1000  # the three runs really executed the suites
    what = "plain CPython's" if ARMED_PER_CALL else "plain CPython's or the shim's"
    assert not diverged, f"outcomes changed by the hook (expected {what}):\n" + "\n".join(diverged)


def test_shim_differences_are_reported(outcomes):
    # Not an assertion on CPython: a record of what the bare shim changes on this version,
    # printed for the BENCHMARKS/README notes, and a check that the three runs covered the
    # same modules.
    plain, shim = outcomes["plain"], outcomes["shim"]
    assert set(plain) == set(shim) == set(outcomes["hook"])
    changed = [t for m in plain for t in plain[m] if plain[m][t] != shim[m].get(t)]
    print(f"\n{sys.version.split()[0]}: the do-nothing shim alone changes {len(changed)} outcomes: {changed}")
