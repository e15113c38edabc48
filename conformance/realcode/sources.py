"""The real-code tier's libraries: their pinned source archives, fetched once and verified.

Each library is described by ``libraries/NAME.json`` (name, version, archive file name,
sha256 of the archive, the directory its package imports from, the test paths run while
recording, the pinned packages its tests need and the functions recorded). The archive
is the sdist from the package index, fetched with pip (``pip download --require-hashes``,
so pip checks the sha256 too), checked against the pinned sha256 again here and unpacked
under ``~/.cache/framehook/realcode`` (``$FRAMEHOOK_REALCODE_CACHE``). Standard library
only: this runs on every CPython of the matrix.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

# the PYTHONHASHSEED the tier records and replays under (record.py, replay.py)
HASH_SEED = "0"

HERE = Path(__file__).resolve().parent
LIBRARIES = HERE / "libraries"


class FetchError(Exception):
    """A library's archive could not be downloaded, verified or unpacked."""


@dataclass(frozen=True)
class Library:
    name: str
    version: str
    archive: str
    sha256: str
    import_root: str  # relative to the unpacked tree: where its package imports from
    tests: tuple  # test paths, relative to the unpacked tree
    test_requires: tuple  # pinned requirements of its tests ("pretend==1.0.9")
    targets: tuple  # MODULE:QUALNAME of every function recorded

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


def load_library(path: Path) -> Library:
    data = json.loads(path.read_text())
    return Library(
        name=data["name"],
        version=data["version"],
        archive=data["archive"],
        sha256=data["sha256"],
        import_root=data["import_root"],
        tests=tuple(data["tests"]),
        test_requires=tuple(data["test_requires"]),
        targets=tuple(data["targets"]),
    )


def libraries(names: list | None = None) -> list:
    """Every library of the tier (or those named), in name order."""
    found = [load_library(p) for p in sorted(LIBRARIES.glob("*.json"))]
    if names:
        unknown = sorted(set(names) - {lib.name for lib in found})
        if unknown:
            raise SystemExit(f"realcode: unknown libraries {unknown}; known: {[lib.name for lib in found]}")
        found = [lib for lib in found if lib.name in names]
    return found


def cache_root() -> Path:
    given = os.environ.get("FRAMEHOOK_REALCODE_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "framehook" / "realcode"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(lib: Library, dest: Path) -> None:
    """The sdist into ``dest`` through pip, which checks the pinned hash."""
    with tempfile.TemporaryDirectory(prefix="framehook-realcode-") as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{lib.name}=={lib.version} --hash=sha256:{lib.sha256}\n")
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--require-hashes",
            "-r",
            str(req),
            "-d",
            tmp,
        ]
        run = subprocess.run(cmd, capture_output=True, text=True)
        got = Path(tmp) / lib.archive
        if run.returncode != 0 or not got.exists():
            detail = (run.stdout + run.stderr).strip().splitlines()[-5:]
            raise FetchError(
                f"realcode: downloading {lib.archive} ({lib.name}=={lib.version}) with pip failed"
                f" (exit {run.returncode}): " + " | ".join(detail or ["no output"])
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + f".{os.getpid()}.part")
        shutil.copyfile(got, part)
        os.replace(part, dest)


def archive(lib: Library) -> Path:
    """The verified archive in the cache, downloaded when absent or corrupt."""
    path = cache_root() / "archives" / lib.archive
    if path.exists() and sha256_of(path) == lib.sha256:
        return path
    _download(lib, path)
    got = sha256_of(path)
    if got != lib.sha256:
        path.unlink()
        raise FetchError(f"realcode: {lib.archive}: sha256 {got} is not the pinned {lib.sha256}")
    return path


def source_tree(lib: Library) -> Path:
    """The unpacked source tree of ``lib`` (fetched and unpacked once; safe when several
    processes ask at once: each unpacks into its own directory and renames it)."""
    tree = cache_root() / "src" / lib.key
    marker = tree / ".framehook-sha256"
    if marker.exists() and marker.read_text().strip() == lib.sha256:
        return tree
    path = archive(lib)
    tree.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{lib.key}-", dir=str(tree.parent)))
    try:
        with tarfile.open(path) as tar:
            members = tar.getmembers()
            for member in members:
                name = Path(member.name)
                if name.is_absolute() or ".." in name.parts or not (member.isfile() or member.isdir()):
                    raise FetchError(f"realcode: {lib.archive}: refusing the member {member.name!r}")
            if hasattr(tarfile, "data_filter"):  # 3.12+, and the 3.9-3.11 security releases
                tar.extractall(staging, members=members, filter="data")
            else:
                tar.extractall(staging, members=members)
        inner = staging / lib.key
        if not inner.is_dir():
            raise FetchError(f"realcode: {lib.archive} does not unpack into {lib.key}/")
        (inner / ".framehook-sha256").write_text(lib.sha256 + "\n")
        if tree.exists() and not marker.exists():
            shutil.rmtree(tree, ignore_errors=True)  # a partial tree of an interrupted run
        try:
            os.replace(inner, tree)
        except OSError:
            if not (marker.exists() and marker.read_text().strip() == lib.sha256):
                raise  # not another process's identical tree: a real failure
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return tree


def import_path(lib: Library) -> Path:
    """The directory to put on sys.path to import ``lib``."""
    return source_tree(lib) / lib.import_root
