"""Runs inside tox's checks env: the repository checks that are not tests.

- the GitHub workflows validate against the published workflow schema (check-jsonschema
  carries a copy, so no network is needed)
- ruff's lint rules (configured in the root pyproject.toml) pass on every Python file, and
  the formatted parts of the tree are as ruff format leaves them
- mypy passes on the packages' public API modules (the list, and what is not yet checked
  and why, are in the root pyproject.toml)
- the CI scripts' own tests pass (ci/tests: provisioning's and the wheel builder's
  decisions, with the commands they run recorded, not run)

Each check prints one line; the exit status is non-zero if any fails.
Usage: python ci/checks.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def workflow_schema() -> tuple[bool, str]:
    files = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.y*ml"))
    if not files:
        return False, "no workflow files under .github/workflows"
    run = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *files],
        capture_output=True,
        text=True,
    )
    detail = f"{len(files)} file(s)" if run.returncode == 0 else (run.stdout + run.stderr).strip()
    return run.returncode == 0, detail


def ruff_lint() -> tuple[bool, str]:
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--output-format", "concise", "."],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
    )
    return run.returncode == 0, (run.stdout + run.stderr).strip().splitlines()[-1] if run.returncode == 0 else (
        run.stdout + run.stderr
    ).strip()


def ruff_format() -> tuple[bool, str]:
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."], cwd=str(ROOT), capture_output=True, text=True
    )
    lines = (run.stdout + run.stderr).strip().splitlines()
    return run.returncode == 0, (lines[-1] if run.returncode == 0 else "\n".join(lines[-20:]))


def mypy_public_api() -> tuple[bool, str]:
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=str(ROOT), capture_output=True, text=True)
    lines = (run.stdout + run.stderr).strip().splitlines()
    return run.returncode == 0, (lines[-1] if run.returncode == 0 else "\n".join(lines))


def ci_script_tests() -> tuple[bool, str]:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "ci" / "tests")],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
    )
    lines = (run.stdout + run.stderr).strip().splitlines()
    return run.returncode == 0, (lines[-1] if run.returncode == 0 else "\n".join(lines[-30:]))


CHECKS = {
    "workflow schema": workflow_schema,
    "ruff lint": ruff_lint,
    "ruff format": ruff_format,
    "mypy (public API)": mypy_public_api,
    "ci scripts' tests": ci_script_tests,
}


def main() -> int:
    ok = True
    for name, check in CHECKS.items():
        passed, detail = check()
        ok &= passed
        print(f"[checks] {name}: {'ok' if passed else 'FAILED'} ({detail})", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
