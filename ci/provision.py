"""Provides a private CPython 3.X built from Debian sid's binary packages.

    python3 ci/provision.py 3.14 [--root DIR] [--refresh]   # prints the interpreter's path
    python3 ci/provision.py 3.14d                            # the debug build (or: 3.14 --debug)

ci/matrix.py calls this for a version of the matrix that is neither on PATH nor under
pyenv. It works on Debian (or a derivative with apt-get, dpkg-deb and Debian's archive
keyring) on amd64 or arm64:

* A private apt configuration (its own sources list naming only sid, its own package
  lists, download cache and an empty dpkg status) downloads the interpreter's packages
  and the runtime libraries they depend on; the system's apt sources, lists and installed
  packages stay as they were. The one exception: patchelf is installed with the system's
  apt-get when it is missing and we are root.
* The packages are unpacked with dpkg-deb into ROOT/3.X (Debian's layout:
  ROOT/3.X/usr/bin/python3.X). sid's C library is newer than the host's, so the
  interpreter is pointed at sid's dynamic loader and, through a DT_RPATH (which, unlike
  DT_RUNPATH, also serves the libraries and extension modules loaded later), at the
  prefix's library directory. Nothing goes into the environment, so the host's own
  programs started from Python (gcc, git) keep the host's C library.
* Paths Debian builds in are fixed: the pyconfig.h wrapper that expects the headers in
  /usr/include, ensurepip's wheel directory, the shebangs of the scripts in usr/bin.

A version written with a "d" (3.14d) is CPython's debug build (Py_DEBUG: assertions on, as
Debian's python3.X-dbg ships it): the release packages plus python3.X-dbg and
libpython3.X-dbg, which add usr/bin/python3.Xd, its extension modules and its headers
(usr/include/python3.Xd). It gets its own prefix, ROOT/3.Xd, beside the release build's
ROOT/3.X, so neither is rebuilt for the other.

The result is kept under ROOT (default: $FRAMEHOOK_INTERPRETERS, else
${XDG_CACHE_HOME:-~/.cache}/framehook/interpreters) and reused as it is until --refresh
asks for sid's current packages. The prefix is not relocatable (the loader's path is
absolute): provision again to move it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
MARKER = ".framehook-provisioned"  # this directory was made here and may be replaced
STAMP = ".framehook-stamp"  # written last: the prefix is complete
# the stamp's first line: a prefix made with another package list is made again
LAYOUT = "layout 2 (interpreter, tests, headers, C library debug symbols)\n"
INDEX_MAX_AGE = 24 * 3600  # a refresh reuses a private index younger than this
# machine -> (Debian architecture, multiarch triplet, dynamic loader)
ARCHES = {
    "x86_64": ("amd64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
    "aarch64": ("arm64", "aarch64-linux-gnu", "ld-linux-aarch64.so.1"),
}


class ProvisionError(RuntimeError):
    """Provisioning cannot go on; the message says what is missing and what to do."""


def default_root() -> Path:
    if os.environ.get("FRAMEHOOK_INTERPRETERS"):
        return Path(os.environ["FRAMEHOOK_INTERPRETERS"]).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache).resolve() / "framehook" / "interpreters"


def _check_version(version: str) -> None:
    if not re.fullmatch(r"3\.\d+d?", version):
        raise ProvisionError(
            f"version {version!r}: expected a CPython minor version like '3.14', or '3.14d' for its debug build"
        )


def split_version(version: str) -> tuple[str, bool]:
    """'3.14d' -> ('3.14', True): the minor version and whether it names the debug build."""
    return (version[:-1], True) if version.endswith("d") else (version, False)


# What an interpreter says it is, in this module's spelling: "3.14", or "3.14d" for a
# debug build (only Py_DEBUG builds have sys.gettotalrefcount)
WHICH_VERSION = "import sys; print('%d.%d' % sys.version_info[:2] + ('d' if hasattr(sys, 'gettotalrefcount') else ''))"


def interpreter_path(version: str, root: Path | None = None) -> Path:
    # the debug build's executable is python3.Xd, in its own prefix ROOT/3.Xd
    return (root or default_root()) / version / "usr" / "bin" / f"python{version}"


def _reports(exe: Path, version: str) -> bool:
    try:
        out = subprocess.run(
            [str(exe), "-c", WHICH_VERSION],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def existing(version: str, root: Path | None = None) -> str | None:
    """The interpreter of a complete earlier provisioning of `version`, if it runs."""
    exe = interpreter_path(version, root)
    stamp = exe.parent.parent.parent / STAMP
    if stamp.exists() and stamp.read_text().startswith(LAYOUT) and _reports(exe, version):
        return str(exe)
    return None


#: seconds the system's apt-get waits for dpkg's lock when another package manager holds
#: it (unattended-upgrades on a machine just booted), as the CI's own apt use does
DPKG_LOCK_WAIT = 300


def _system_apt_get(*args: str) -> list[str]:
    """The system's apt-get, waiting (bounded) for dpkg's lock instead of failing at once."""
    return ["apt-get", "-o", f"DPkg::Lock::Timeout={DPKG_LOCK_WAIT}", *args]


def _log(message: str) -> None:
    print(f"[provision] {message}", file=sys.stderr, flush=True)


def _run(cmd: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    """Run a command; on failure raise ProvisionError with `what` and its output's tail."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    except OSError as exc:
        raise ProvisionError(f"{what}: cannot run {cmd[0]}: {exc}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise ProvisionError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc


def _yourself(version: str) -> str:
    if split_version(version)[1]:
        return f"install CPython {version[:-1]}'s debug build yourself (python{version} on PATH)"
    return f"install CPython {version} yourself (python{version} on PATH or under pyenv)"


def _host_arch(version: str) -> tuple[str, str, str]:
    if sys.platform != "linux" or platform.machine() not in ARCHES:
        raise ProvisionError(
            f"provisioning uses Debian packages for Linux on {', '.join(ARCHES)}; this is "
            f"{sys.platform} on {platform.machine()}: {_yourself(version)}"
        )
    return ARCHES[platform.machine()]


def _require_tools(version: str) -> None:
    missing = [tool for tool in ("apt-get", "apt-cache", "dpkg-deb") if not shutil.which(tool)]
    if missing:
        raise ProvisionError(
            f"provisioning needs Debian's {', '.join(missing)}, not found on PATH: " + _yourself(version)
        )
    if not os.access(KEYRING, os.R_OK):
        raise ProvisionError(
            f"{KEYRING} is missing: install the debian-archive-keyring package, or {_yourself(version)}"
        )
    if shutil.which("patchelf"):
        return
    if os.geteuid() != 0:
        raise ProvisionError("patchelf is missing: install it (apt-get install patchelf) and run again")
    _log(
        "installing patchelf with the system's apt-get (if another package manager holds dpkg's lock, "
        f"waiting up to {DPKG_LOCK_WAIT} s for it)"
    )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = _system_apt_get("install", "-y", "-q", "patchelf")
    try:
        _run(install, "apt-get install patchelf", env=env)
    except ProvisionError:
        # a fresh image may have empty or stale package lists: refresh them once and retry
        _log("apt-get install failed; running apt-get update and trying again")
        _run(_system_apt_get("update", "-q"), "apt-get update", env=env)
        _run(install, "apt-get install patchelf", env=env)
    if not shutil.which("patchelf"):
        raise ProvisionError("apt-get installed patchelf but it is not on PATH")


class PrivateApt:
    """apt-get/apt-cache with their own sources (sid only), lists, caches and dpkg status."""

    def __init__(self, state: Path, arch: str) -> None:
        self.state = state
        for sub in ("sources", "prefs", "lists/partial", "cache/archives/partial"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        status = state / "status"
        if not status.exists():
            status.write_text("")  # nothing is installed as far as this apt knows
        (state / "sources" / "sid.sources").write_text(
            f"Types: deb\nURIs: {MIRROR}\nSuites: sid\nComponents: main\nArchitectures: {arch}\nSigned-By: {KEYRING}\n"
        )
        # Read after the system's apt.conf.d, whose proxy and network settings stay in
        # force; the update hooks are cleared so no system cache gets refreshed.
        (state / "apt.conf").write_text(
            "\n".join(
                [
                    "#clear APT::Update::Post-Invoke-Success;",
                    "#clear APT::Update::Post-Invoke;",
                    'Dir::Etc::sourcelist "/dev/null";',
                    f'Dir::Etc::sourceparts "{state}/sources";',
                    'Dir::Etc::preferences "/dev/null";',
                    f'Dir::Etc::preferencesparts "{state}/prefs";',
                    f'Dir::State::Lists "{state}/lists";',
                    f'Dir::State::status "{status}";',
                    f'Dir::Cache "{state}/cache";',
                    'Dir::Cache::pkgcache "pkgcache.bin";',
                    'Dir::Cache::srcpkgcache "srcpkgcache.bin";',
                    f'APT::Architecture "{arch}";',
                    f'APT::Architectures {{ "{arch}"; }};',
                    "",
                ]
            )
        )
        self.options = ["-c", str(state / "apt.conf")]
        if os.geteuid() == 0:
            # apt's download sandbox user (_apt) cannot write into root's cache directory
            self.options += ["-o", "APT::Sandbox::User=root"]

    def update(self, force: bool) -> None:
        stamp = self.state / "updated"
        fresh = stamp.exists() and time.time() - stamp.stat().st_mtime < INDEX_MAX_AGE
        if fresh and not force:
            return
        _log("updating the private package index of Debian sid")
        try:
            _run(["apt-get", *self.options, "-q", "--error-on=any", "update"], "apt-get update (sid index)")
        except ProvisionError:
            if not stamp.exists():
                raise
            _log(f"warning: the update failed; using the index of {time.ctime(stamp.stat().st_mtime)}")
            return
        stamp.touch()

    def cache(self, *args: str) -> str:
        return _run(["apt-cache", *self.options, *args], f"apt-cache {args[0]}").stdout

    def get(self, *args: str, cwd: Path | None = None) -> str:
        return _run(["apt-get", *self.options, "-q", *args], f"apt-get {args[0]}", cwd=str(cwd) if cwd else None).stdout


def _interpreter_packages(version: str) -> list[str]:
    """The interpreter with its headers, venv, test suite and the wheels ensurepip installs,
    and the C library's debug symbols: valgrind cannot start a program whose dynamic loader
    (sid's, stripped, unpacked with the interpreter) it has no symbols for. The debug build
    (3.Xd) adds python3.X-dbg (usr/bin/python3.Xd) and libpython3.X-dbg (its extension
    modules, sysconfig data, and usr/include/python3.Xd: its pyconfig.h and links to the
    release build's headers, which the release packages bring)."""
    v, debug = split_version(version)
    extra = [f"python{v}-dbg", f"libpython{v}-dbg"] if debug else []
    return extra + [
        f"python{v}",
        f"python{v}-minimal",
        f"python{v}-dev",
        f"python{v}-venv",
        f"libpython{v}-minimal",
        f"libpython{v}-stdlib",
        f"libpython{v}",
        f"libpython{v}-dev",
        f"libpython{v}-testsuite",
        "python3-pip-whl",
        "python3-setuptools-whl",
        "libc6-dbg",
    ]


def _is_runtime_library(name: str) -> bool:
    """Shared-library packages are followed; data packages (tzdata, ca-certificates) come
    from the host, and other libraries' -dev packages are not needed to build extensions."""
    if name.startswith("libpython"):
        return False
    if not (name == "zlib1g" or re.match(r"lib[a-z0-9]", name)):
        return False
    return not re.search(r"-(dev|dbg|doc|bin|testsuite)$", name)


def package_set(apt: PrivateApt, version: str) -> list[str]:
    wanted = _interpreter_packages(version)
    seen = set(wanted)
    frontier = list(wanted)
    while frontier:
        out = apt.cache(
            "depends",
            "--no-recommends",
            "--no-suggests",
            "--no-conflicts",
            "--no-breaks",
            "--no-replaces",
            "--no-enhances",
            *frontier,
        )
        frontier = []
        for line in out.splitlines():
            # "  Depends: libc6", " |Depends: libssl3t64", "  PreDepends: ..."; <virtual> skipped
            match = re.match(r"\s*\|?(?:Pre)?Depends:\s+([^<\s]\S*)", line)
            if match and match.group(1) not in seen and _is_runtime_library(match.group(1)):
                seen.add(match.group(1))
                frontier.append(match.group(1))
    return sorted(seen)


def _deb_files(apt: PrivateApt, packages: list[str]) -> list[str]:
    """The .deb file names of sid's current versions (also the prefix's stamp)."""
    out = apt.get("download", "--print-uris", *packages)
    files = sorted(line.split()[1] for line in out.splitlines() if line.startswith("'"))
    if len(files) != len(packages):
        raise ProvisionError(f"sid did not resolve every package of {packages}: got {files}")
    return files


@contextlib.contextmanager
def _locked(path: Path):
    """One provisioning per version at a time, also across checkouts sharing ROOT."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _patch_interpreter(stage: Path, prefix: Path, version: str, triplet: str, loader: str) -> None:
    libdir = f"usr/lib/{triplet}"
    if not (stage / libdir / loader).exists():
        raise ProvisionError(f"sid's libc6 has no {libdir}/{loader}: the package layout changed")
    minor, debug = split_version(version)
    # a debug prefix holds the release interpreter too (python3.X-dbg depends on it): both
    # are patched, so either runs from the prefix
    for name in [f"python{minor}"] + ([f"python{minor}d"] if debug else []):
        exe = stage / "usr" / "bin" / name
        if not exe.is_file():
            raise ProvisionError(f"the packages have no usr/bin/{name}")
        # the final prefix's paths: the stage is renamed to it before the interpreter first runs
        _run(
            [
                "patchelf",
                "--set-interpreter",
                str(prefix / libdir / loader),
                "--force-rpath",
                "--set-rpath",
                str(prefix / libdir),
                str(exe),
            ],
            "patchelf",
        )


def _fix_debian_paths(stage: Path, prefix: Path, version: str, triplet: str) -> None:
    minor, debug = split_version(version)
    include = stage / "usr" / "include"
    # the debug build's headers (include/python3.Xd) have a pyconfig.h wrapper of their own
    for headers in [f"python{minor}"] + ([f"python{minor}d"] if debug else []):
        real = include / triplet / headers / "pyconfig.h"
        if real.exists():  # Debian's include/python3.X/pyconfig.h only #includes this one by a system path
            shutil.copyfile(real, include / headers / "pyconfig.h")
    # the debug build's sysconfig data (_sysconfigdata_d_*) lives here too
    libpython = stage / "usr" / "lib" / f"python{minor}"
    wheel_dir = re.compile(r"""(['"]WHEEL_PKG_DIR['"]:\s*['"])/usr/share/python-wheels/?""")
    for name in glob.glob(str(libpython / "_sysconfigdata_*.py")) + glob.glob(
        str(libpython / "_sysconfig_vars_*.json")
    ):
        path = Path(name)
        if path.is_symlink():
            continue
        text = path.read_text()
        # ensurepip (hence venv) would take the host's older pip wheel from /usr/share
        fixed = wheel_dir.sub(lambda m: m.group(1) + f"{prefix}/usr/share/python-wheels/", text)
        if fixed != text:
            path.write_text(fixed)
    for script in (stage / "usr" / "bin").iterdir():
        if not script.is_file() or script.is_symlink():
            continue
        with open(script, "rb") as fh:
            head = fh.read(2)
        if head != b"#!":
            continue
        data = script.read_bytes()
        first, _, rest = data.partition(b"\n")
        first = re.sub(rb"^#!\s*/usr/bin/python", b"#!" + str(prefix).encode() + b"/usr/bin/python", first)
        script.write_bytes(first + b"\n" + rest)


SMOKE_TEST = r"""
import sys, site, ssl, sqlite3, ctypes, zlib, lzma, bz2, decimal, ensurepip, venv, sysconfig
prefix, debug = sys.argv[1], sys.argv[2] == "debug"
assert sys.prefix == prefix + "/usr", ("sys.prefix", sys.prefix)
assert hasattr(sys, "gettotalrefcount") == debug, ("a debug build (Py_DEBUG)", debug)
if debug:
    assert sysconfig.get_config_var("Py_DEBUG") == 1, "sysconfig data of the release build"
    assert sysconfig.get_paths()["include"].endswith("d"), sysconfig.get_paths()["include"]
mapped = {line.split()[-1] for line in open("/proc/self/maps") if ".so" in line}
outside = sorted(p for p in mapped if not p.startswith(prefix + "/"))
assert not outside, ("shared libraries loaded from outside the prefix", outside)
stray = [p for p in sys.path[1:] if not p.startswith(prefix) and p != site.getusersitepackages()]
assert not stray, ("sys.path entries outside the prefix", stray)
assert sysconfig.get_paths()["include"].startswith(prefix), sysconfig.get_paths()["include"]
print(sys.version.split()[0], ssl.OPENSSL_VERSION)
"""


def provision(version: str, root: Path | None = None, refresh: bool = False) -> str:
    """Path of a working CPython `version` under ROOT/version, provisioning it when needed.

    Without `refresh` a complete earlier provisioning is reused as it is; with it the
    prefix is rebuilt when sid's package versions changed. `version` "3.Xd" is the debug
    build, in its own prefix. Raises ProvisionError."""
    _check_version(version)
    minor, debug = split_version(version)
    root = (root or default_root()).resolve()
    prefix = root / version
    with _locked(root / f".lock-{version}"):
        found = existing(version, root)
        if found and not refresh:
            return found
        arch, triplet, loader = _host_arch(version)
        _require_tools(version)
        if prefix.exists() and not (prefix / MARKER).exists() and any(prefix.iterdir()):
            raise ProvisionError(f"{prefix} exists and was not made by ci/provision.py; not replacing it")
        start = time.monotonic()
        apt = PrivateApt(root / "apt", arch)
        apt.update(force=refresh)
        for name in [f"python{minor}-minimal"] + ([f"python{minor}-dbg"] if debug else []):
            try:
                apt.cache("show", name)
            except ProvisionError:
                raise ProvisionError(
                    f"Debian sid has no {name}, so it cannot provide CPython {version}"
                    f"{' (its debug build)' if debug else ''}: {_yourself(version)}"
                ) from None
        packages = package_set(apt, version)
        debs = _deb_files(apt, packages)
        stamp = LAYOUT + "\n".join([version, str(prefix), *debs]) + "\n"
        if found and (prefix / STAMP).read_text() == stamp:
            _log(f"{prefix} already has sid's current packages")
            return found

        downloads = root / f"{version}.debs"
        shutil.rmtree(downloads, ignore_errors=True)
        downloads.mkdir(parents=True)
        _log(f"downloading {len(packages)} packages of python{version}{' (debug build)' if debug else ''} from sid")
        apt.get("download", *packages, cwd=downloads)
        stage = root / f"{version}.new"
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir()
        (stage / MARKER).write_text("made by framehook's ci/provision.py; safe to delete\n")
        _log(f"unpacking into {prefix}")
        for deb in sorted(downloads.glob("*.deb")):
            _run(["dpkg-deb", "-x", str(deb), str(stage)], f"unpacking {deb.name}")
        _patch_interpreter(stage, prefix, version, triplet, loader)
        _fix_debian_paths(stage, prefix, version, triplet)

        if prefix.exists():
            old = root / f"{version}.old"
            shutil.rmtree(old, ignore_errors=True)
            prefix.rename(old)
            shutil.rmtree(old)
        stage.rename(prefix)
        shutil.rmtree(downloads, ignore_errors=True)

        exe = interpreter_path(version, root)
        # Debian byte-compiles in its maintainer scripts; without it every start recompiles.
        # The release interpreter does it for a debug prefix too (the same .pyc files, faster).
        subprocess.run(
            [
                str(prefix / "usr" / "bin" / f"python{minor}"),
                "-m",
                "compileall",
                "-q",
                "-j0",
                "-x",
                r"/(test|idle_test)/",
                str(prefix / "usr" / "lib" / f"python{minor}"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        smoke = _run(
            [str(exe), "-c", SMOKE_TEST, str(prefix), "debug" if debug else "release"],
            f"checking the new python{version}",
        )
        (prefix / STAMP).write_text(stamp)
        _log(f"python{version} {smoke.stdout.strip()} ready in {time.monotonic() - start:.0f}s: {exe}")
        return str(exe)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("version", help="CPython minor version, like 3.14; 3.14d for its debug build")
    parser.add_argument(
        "--debug", action="store_true", help="the debug build (Py_DEBUG, python3.Xd) of VERSION: the same as 3.Xd"
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help=f"directory holding the prefixes and the private apt state (default: {default_root()})",
    )
    parser.add_argument(
        "--refresh", action="store_true", help="update sid's index and rebuild the prefix if sid's packages changed"
    )
    args = parser.parse_args(argv)
    version = args.version
    if args.debug and not version.endswith("d"):
        version += "d"
    try:
        print(provision(version, args.root, args.refresh))
    except ProvisionError as exc:
        print(f"provision.py: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
