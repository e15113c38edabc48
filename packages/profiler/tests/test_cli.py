"""framehook-profile / python -m framehook.profiler: outputs, pass-through and bad input."""

from __future__ import annotations

import json
import os
import pstats
import shutil
import subprocess
import sys
import textwrap

import pytest

from framehook.profiler._cli import main

from fhprof_helpers import chrome_spans

SCRIPT = textwrap.dedent("""
    import sys

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def main():
        print("args", sys.argv[1:])
        fib(10)
        mode = sys.argv[1] if len(sys.argv) > 1 else ""
        if mode == "raise":
            raise LookupError("from the script")
        if mode == "exit":
            sys.exit(7)
        if mode == "exit-msg":
            sys.exit("goodbye")
        if mode == "exit-none":
            sys.exit()

    if __name__ == "__main__":
        main()
""")


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    return path


def chrome_names(path):
    doc = json.loads(open(path).read())
    return [e["name"] for e in chrome_spans(doc)]


def test_default_output_is_a_chrome_trace_named_after_the_script(script, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([str(script), "a", "b"]) == 0
    captured = capsys.readouterr()
    assert "args ['a', 'b']" in captured.out
    out = tmp_path / "prog.trace.json"
    assert f"wrote chrome profile to {out}" in captured.err
    names = chrome_names(out)
    assert names.count("fib") == 177 and "main" in names and "<module>" in names


def test_launcher_frames_are_not_in_the_profile(script, tmp_path, capsys):
    # the command line's own frames (its main, this test, pytest) were on the stack when
    # recording started; the trees begin at the script, as python -m cProfile's do
    out = tmp_path / "p.pstats"
    assert main(["-o", str(out), str(script)]) == 0
    stats = pstats.Stats(str(out)).stats
    files = {filename for filename, _, _ in stats}
    assert not [f for f in files if f.endswith(("_cli.py", "python.py", "runner.py"))], files
    assert any(f.endswith("prog.py") and name == "<module>" for f, _, name in stats)
    chrome = tmp_path / "p.json"
    assert main(["-o", str(chrome), str(script)]) == 0
    assert "main" in chrome_names(chrome) and "_run" not in chrome_names(chrome)


@pytest.mark.parametrize(
    "fmt,name,check",
    [
        ("speedscope", "p.speedscope.json", lambda p: json.load(open(p))["profiles"]),
        ("pstats", "p.pstats", lambda p: pstats.Stats(str(p)).total_calls > 177),
        ("text", "p.txt", lambda p: "Top" in open(p).read()),
        ("svg", "p.svg", lambda p: open(p).read().startswith("<svg")),
    ],
)
def test_formats_by_extension_and_flag(script, tmp_path, capsys, fmt, name, check):
    out = tmp_path / name
    assert main(["-o", str(out), str(script)]) == 0
    assert check(out)
    other = tmp_path / ("flagged" + fmt)
    assert main(["-o", str(other), "--format", fmt, str(script)]) == 0
    assert check(other)


def test_script_exception_is_passed_through_and_profile_written(script, tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["-o", str(out), str(script), "raise"]) == 1
    err = capsys.readouterr().err
    assert "LookupError: from the script" in err
    assert "Traceback" in err and "_cli.py" not in err  # only the script's frames
    assert chrome_names(out).count("fib") == 177


@pytest.mark.parametrize(
    "mode,code,message", [("exit", 7, None), ("exit-msg", 1, "goodbye"), ("exit-none", 0, None), ("", 0, None)]
)
def test_exit_codes_are_passed_through(script, tmp_path, capsys, mode, code, message):
    out = tmp_path / "t.json"
    assert main(["-o", str(out), str(script), mode]) == code
    err = capsys.readouterr().err
    if message:
        assert message in err
    assert out.exists()


@pytest.mark.parametrize("where", ["missing-dir", "a-directory", "under-a-file"])
def test_an_output_that_cannot_be_written_is_refused_before_the_script_runs(script, tmp_path, capsys, where):
    out = {
        "missing-dir": tmp_path / "no-such-dir" / "t.json",
        "a-directory": tmp_path,
        "under-a-file": script / "t.json",
    }[where]
    before = sorted(os.listdir(tmp_path))
    assert main(["-o", str(out), "--format", "chrome", str(script), "exit"]) == 2
    captured = capsys.readouterr()
    assert "args" not in captured.out  # the script did not run
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"framehook-profile: error: -o {out}: ")
    assert sorted(os.listdir(tmp_path)) == before  # nothing left behind by the check


def test_default_output_that_cannot_be_written_names_the_option(script, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir(tmp_path / "prog.trace.json")  # where the default output would go
    assert main([str(script)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "prog.trace.json" in err and "with -o" in err


FALLBACK = "import shutil, sys\nshutil.rmtree(sys.argv[1])\nsys.exit(int(sys.argv[2]))\n"


@pytest.mark.parametrize("code,expected", [(7, 7), (0, 1)])
def test_output_gone_by_the_end_falls_back_to_a_temporary_file(tmp_path, capsys, code, expected):
    # writable when the run starts; the script removes the directory meanwhile
    remover = tmp_path / "remover.py"
    remover.write_text(FALLBACK)
    folder = tmp_path / "gone"
    folder.mkdir()
    out = folder / "t.json"
    # the script's own code wins; else 1: automation sees the requested file is missing
    assert main(["-o", str(out), str(remover), str(folder), str(code)]) == expected
    err = capsys.readouterr().err
    assert "cannot write the profile to" in err
    fallback = err.split("the profile was written to ")[1].split(" instead")[0]
    try:
        doc = json.loads(open(fallback).read())
        assert any(e["name"] == "rmtree" for e in chrome_spans(doc))
    finally:
        os.unlink(fallback)
    assert not out.exists()


def test_bad_input(tmp_path, capsys):
    assert main([]) == 2
    assert "no script given" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.py")]) == 2
    assert "cannot open script" in capsys.readouterr().err
    bad = tmp_path / "bad.py"
    bad.write_text("def (:\n")
    assert main([str(bad)]) == 2
    assert "invalid syntax" in capsys.readouterr().err
    good = tmp_path / "good.py"
    good.write_text("x = 1\n")
    assert main(["-o", str(tmp_path / "x.unknown"), str(good)]) == 2
    assert "pass --format" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--format", "xml", str(good)])
    assert main(["-m", "no_such_module_here_xyz"]) == 2


def test_module_mode_and_summary(tmp_path, capsys, monkeypatch):
    pkg = tmp_path / "demo_cli_mod.py"
    pkg.write_text("import sys\ndef f():\n    return sum(range(10))\nf()\nprint(sys.argv[1:])\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "m.json"
    assert main(["-o", str(out), "--summary", "--no-c-calls", "-m", "demo_cli_mod", "x"]) == 0
    captured = capsys.readouterr()
    assert "['x']" in captured.out and "Top" in captured.err
    doc = json.loads(out.read_text())
    cats = {e["cat"] for e in chrome_spans(doc)}
    assert cats == {"python"}


ECHO = "import sys\nprint(sys.argv[1:])\n"


@pytest.mark.parametrize(
    "argv_after,expected",
    [
        (["--sort-keys", "x.json"], ["--sort-keys", "x.json"]),
        (["--help"], ["--help"]),
        (["-o", "y", "--summary"], ["-o", "y", "--summary"]),
        ([], []),
    ],
)
def test_options_after_the_module_or_script_are_its_own(tmp_path, capsys, monkeypatch, argv_after, expected):
    (tmp_path / "demo_cli_echo.py").write_text(ECHO)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "echo.json"
    for ours in (
        ["-o", str(out), "-m", "demo_cli_echo"],
        ["-o", str(out), "-mdemo_cli_echo"],
        ["--output=" + str(out), str(tmp_path / "demo_cli_echo.py")],
        ["-o", str(out), "--", str(tmp_path / "demo_cli_echo.py")],
    ):
        assert main(ours + argv_after) == 0
        captured = capsys.readouterr()
        assert captured.out == f"{expected}\n", ours
        assert "wrote chrome profile" in captured.err
        out.unlink()


def test_module_options_reach_a_real_module(tmp_path, capsys):
    data = tmp_path / "d.json"
    data.write_text('{"b": 1, "a": 2}')
    out, result = tmp_path / "tool.json", tmp_path / "sorted.json"
    assert main(["-o", str(out), "-m", "json.tool", "--sort-keys", str(data), str(result)]) == 0
    printed = result.read_text()
    assert printed.index('"a"') < printed.index('"b"')  # sorted: the option reached json.tool
    assert "wrote chrome profile" in capsys.readouterr().err
    assert "main" in chrome_names(out)  # json.tool's main() ran under the profiler


def test_a_missing_module_name_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["-o", "x.json", "-m"])
    assert exc.value.code == 2
    assert "-m: expected one argument" in capsys.readouterr().err


def _console_script():
    exe = shutil.which("framehook-profile", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip(
            "framehook-profile is not installed next to this interpreter "
            "(the package is imported from its source tree, not pip-installed)"
        )
    return [exe]


@pytest.mark.parametrize("entry", ["python -m framehook.profiler", "framehook-profile"])
def test_entry_points_in_a_subprocess(script, tmp_path, entry):
    command = [sys.executable, "-m", "framehook.profiler"] if entry.startswith("python") else _console_script()
    out = tmp_path / "sub.json"
    proc = subprocess.run(command + ["-o", str(out), str(script), "exit"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 7, proc.stderr
    assert "wrote chrome profile" in proc.stderr
    assert chrome_names(out).count("fib") == 177
    proc = subprocess.run(
        command + [str(script), "raise"], capture_output=True, text=True, timeout=120, cwd=str(tmp_path)
    )
    assert proc.returncode == 1 and "LookupError: from the script" in proc.stderr
