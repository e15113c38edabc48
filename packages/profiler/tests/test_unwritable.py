"""Output paths whose directory takes no new file: every write makes its temporary file
there (renamed into place once complete), so a writable file in a read-only directory is
refused too, and the error names the directory as the problem.

Two kinds of test. The real one makes a directory read-only (mode 0555) and runs the
command line in a child process that the permission bits bind: as an ordinary user that
is the mode alone; as root (CI) the child is started without CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH (dropped from its capability bounding set before exec, Linux), so
that root, who owns the directory, is held to its mode as anyone else. The child first
proves the premise: it can write the existing file but cannot create one beside it. The
others inject the operating system's error in-process, into os.open (the lowest layer
Python code reaches), to cover each path that reports it: the check before the script
runs, Profile.export, the fallback when the directory stops taking files during the run,
and the fallback failing too.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

from framehook.profiler import ExportError, Profiler
from framehook.profiler._cli import main

SCRIPT = 'print("ran")\nsum(range(100))\n'


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    return path


def recorded():
    with Profiler() as prof:
        sum(range(100))
    return prof.profile


def refuse_new_files(monkeypatch, directory, code=errno.EACCES, allow=0):
    """os.open refuses to create files in ``directory`` (after ``allow`` creations), as a
    directory without write permission, or on a read-only file system, does."""
    real_open = os.open
    directory = os.path.abspath(str(directory))
    allowed = [allow]

    def fake_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and os.path.dirname(os.path.abspath(os.fsdecode(path))) == directory:
            if allowed[0] <= 0:
                raise OSError(code, os.strerror(code), os.fsdecode(path))
            allowed[0] -= 1
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


# ---- the real thing: a read-only directory, in a child process --------------------------------

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def _drop_file_capabilities():  # (in the child, before exec: root keeps no way around modes)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_bound_by_modes(args, cwd):
    kwargs = {}
    if os.geteuid() == 0:
        if not sys.platform.startswith("linux"):
            pytest.skip("as root, a directory's mode binds a process only without its capabilities (Linux)")
        kwargs["preexec_fn"] = _drop_file_capabilities
    try:
        return subprocess.run(
            [sys.executable] + args, capture_output=True, text=True, timeout=120, cwd=str(cwd), **kwargs
        )
    except subprocess.SubprocessError as exc:  # (the preexec_fn failed)
        pytest.skip(f"cannot start a process bound by file modes here: {exc}")


PREMISE = textwrap.dedent("""
    import errno, os, sys
    with open(sys.argv[1], "a") as fh:  # the file itself is writable
        fh.write("")
    try:
        os.close(os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except PermissionError:
        print("refused")
    else:
        os.unlink(sys.argv[2])
        print("created")
""")

EXPORT = textwrap.dedent("""
    import sys
    from framehook.profiler import ExportError, Profiler
    with Profiler() as prof:
        sum(range(10))
    try:
        prof.profile.export(sys.argv[1])
    except ExportError as exc:
        print(exc)
""")


@pytest.fixture
def read_only_dir(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    out = folder / "out.json"
    out.write_text("the previous profile")
    os.chmod(out, 0o666)
    os.chmod(folder, 0o555)
    premise = run_bound_by_modes(["-c", PREMISE, str(out), str(folder / "new")], tmp_path)
    if premise.returncode != 0 or premise.stdout.strip() != "refused":
        os.chmod(folder, 0o755)
        pytest.skip(f"cannot make a read-only directory bind a process here: {premise.stdout}{premise.stderr}")
    yield folder, out
    os.chmod(folder, 0o755)


def test_cli_refuses_a_writable_file_in_a_read_only_directory(read_only_dir, script, tmp_path):
    folder, out = read_only_dir
    proc = run_bound_by_modes(["-m", "framehook.profiler", "-o", str(out), str(script)], tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""  # refused before the script runs
    assert proc.stderr == (
        f"framehook-profile: error: -o {out}: cannot write the profile: "
        f"directory {folder} is not writable (Permission denied)\n"
    )
    assert out.read_text() == "the previous profile"
    assert os.listdir(folder) == ["out.json"]


def test_export_to_a_read_only_directory_names_it(read_only_dir, tmp_path):
    folder, out = read_only_dir
    proc = run_bound_by_modes(["-c", EXPORT, str(out)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"cannot write the profile to {str(out)!r}: directory {folder} is not writable (Permission denied)\n"
    )
    assert out.read_text() == "the previous profile"


# ---- each path that reports it, the error injected -------------------------------------------


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM, errno.EROFS], ids=["EACCES", "EPERM", "EROFS"])
def test_cli_check_names_the_directory(tmp_path, script, capsys, monkeypatch, code):
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "t.json"
    out.write_text("the previous profile")
    refuse_new_files(monkeypatch, folder, code)
    assert main(["-o", str(out), str(script)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"framehook-profile: error: -o {out}: cannot write the profile: "
        f"directory {folder} is not writable ({os.strerror(code)})\n"
    )
    assert out.read_text() == "the previous profile"


def test_cli_check_of_the_default_output_names_the_directory(tmp_path, script, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    refuse_new_files(monkeypatch, tmp_path)
    assert main([str(script)]) == 2
    assert capsys.readouterr().err == (
        f"framehook-profile: error: prog.trace.json: cannot write the profile: "
        f"directory {tmp_path} is not writable (Permission denied); choose where with -o\n"
    )


def test_cli_other_errors_keep_their_message(tmp_path, script, capsys):
    out = tmp_path / "missing" / "t.json"
    assert main(["-o", str(out), str(script)]) == 2
    assert capsys.readouterr().err == (
        f"framehook-profile: error: -o {out}: cannot write the profile there (No such file or directory)\n"
    )


def test_export_names_the_directory(tmp_path, monkeypatch):
    profile = recorded()
    out = tmp_path / "t.json"
    out.write_text("the previous profile")
    refuse_new_files(monkeypatch, tmp_path)
    with pytest.raises(ExportError) as info:
        profile.export(out)
    assert info.value.errno == errno.EACCES
    assert str(info.value) == (
        f"cannot write the profile to {str(out)!r}: directory {tmp_path} is not writable (Permission denied)"
    )
    assert out.read_text() == "the previous profile"


def test_cli_directory_read_only_by_the_end_falls_back_naming_it(tmp_path, script, capsys, monkeypatch):
    # writable when checked before the run (one creation allowed), read-only at the end
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "t.json"
    refuse_new_files(monkeypatch, folder, allow=1)
    assert main(["-o", str(out), str(script)]) == 1
    err = capsys.readouterr().err
    assert (
        f"framehook-profile: error: cannot write the profile to {str(out)!r}: "
        f"directory {folder} is not writable (Permission denied)\n"
    ) in err
    fallback = err.split("the profile was written to ")[1].split(" instead")[0]
    try:
        assert os.path.getsize(fallback) > 0
    finally:
        os.unlink(fallback)
    assert os.listdir(folder) == []


def test_cli_no_temporary_file_either_is_a_clear_error(tmp_path, script, capsys, monkeypatch):
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "t.json"
    refuse_new_files(monkeypatch, folder, allow=1)

    def no_temporary_directory(*args, **kwargs):
        raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found")

    monkeypatch.setattr(tempfile, "mkstemp", no_temporary_directory)
    assert main(["-o", str(out), str(script)]) == 1  # no traceback: a line saying so
    err = capsys.readouterr().err
    assert err.endswith(
        "framehook-profile: error: nor could a temporary file be made for it "
        "(No usable temporary directory found); the profile is lost\n"
    )
    assert "wrote" not in err and os.listdir(folder) == []


def test_cli_temporary_file_not_writable_either_is_a_clear_error(tmp_path, script, capsys, monkeypatch):
    folder = tmp_path / "out"
    folder.mkdir()
    spare = tmp_path / "spare"
    spare.mkdir()
    out = folder / "t.json"
    real_open = os.open

    def refuse_both(path, flags, *args, **kwargs):  # the fallback's directory too, after mkstemp
        if flags & os.O_CREAT and os.path.basename(os.fsdecode(path)).startswith(".prog-"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_both)
    refuse_new_files(monkeypatch, folder, allow=1)  # (in front of refuse_both)
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    assert main(["-o", str(out), str(script)]) == 1
    err = capsys.readouterr().err
    assert err.endswith(f"directory {spare} is not writable (Read-only file system); the profile is lost\n"), err
    assert os.listdir(spare) == []  # the empty temporary file is not left behind


def test_a_name_as_long_as_the_system_allows_is_written(tmp_path, script, capsys):
    # the temporary file's name adds to the file's: it must not make a valid name too long
    limit = os.pathconf(str(tmp_path), "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    out = tmp_path / ("p" * (limit - len(".json")) + ".json")
    assert main(["-o", str(out), str(script)]) == 0
    assert "wrote chrome profile" in capsys.readouterr().err
    assert json.loads(out.read_text())["traceEvents"]
    profile = recorded()
    assert profile.export(out) == str(out)
    assert sorted(os.listdir(tmp_path)) == sorted(["prog.py", out.name])
