"""What the CLI and the reports print of a record: control characters escaped, large ints
described without decimal conversion."""

from __future__ import annotations

import pytest

from framehook.records import dumps, loads, record_call, replay_record, save
from framehook.records.cli import main as cli_main
from framehook.records.text import printable

FORGED = "\r\x1b[2KMATCH    forged.fhrec [all good]\nMATCH\u2028\u202eevil\x7f\x85"


def double(x):
    return x * 2


def big():
    return 3**20000  # about 9,500 decimal digits, above the default conversion limit


@pytest.mark.parametrize(
    "text,expected",
    [
        ("plain text, ünïcödé ✓", "plain text, ünïcödé ✓"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x1b[31mred\x07\x00", "\\x1b[31mred\\x07\\x00"),
        ("\x7f\x85\xa0", "\\x7f\\x85\\xa0"),
        ("\u2028\u2029\u202e\u200b\ufeff", "\\u2028\\u2029\\u202e\\u200b\\ufeff"),
        ("\U000e0001 tag", "\\U000e0001 tag"),
    ],
)
def test_printable_escapes_every_non_printable_character(text, expected):
    assert printable(text) == expected
    assert printable(text).isprintable()


def test_a_label_cannot_forge_a_line_of_cli_output(tmp_path, capsys):
    rec = record_call(double, (2,), label=FORGED)
    rec.outcome["value"] = {"t": "int", "v": "5"}  # a mismatch, labelled to look like a match
    rec.notes.append("note with \x1b]0;title\x07 escape")
    path = tmp_path / "forged\n.fhrec"
    save(rec, path)
    for argv in (["replay", "--mode", "plain", str(path)], ["replay", "-v", "--mode", "plain", str(path)]):
        assert cli_main(argv) == 1
        out = capsys.readouterr().out
        lines = out.splitlines()
        if "-v" in argv:  # the plan comes first: a header and "imports: nothing"
            assert lines[0].startswith("PLAN     ") and "forged\\n.fhrec" in lines[0]
            assert lines[1] == "  imports: nothing"
            lines = lines[2:]
        assert lines[0].startswith("MISMATCH ") and not any(line.startswith("MATCH") for line in lines)
        assert all(line.isprintable() for line in lines), lines
        assert "\\r\\x1b[2KMATCH" in lines[0] and "forged\\n.fhrec" in lines[0]
    assert len(lines) == 3  # -v: the summary, the mode's reason, its one difference


def test_refusals_print_one_escaped_line(tmp_path, capsys):
    bad = tmp_path / "no\x1b[2Jsuch\nfile.fhrec"
    assert cli_main(["replay", str(bad)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("ERROR    ") and out[:-1].isprintable()
    assert "no\\x1b[2Jsuch\\nfile.fhrec: no such file" in out


def test_large_int_mismatch_is_described_not_raised():
    # 3**20000 has about 9,500 decimal digits: str() of it raises under CPython's default
    # limit on int-to-decimal conversion (4300 digits), where that limit exists
    rec = record_call(big, ())
    value = 3**20000 + 1
    rec.outcome["value"] = {"t": "int", "v": format(value, "x")}
    result = replay_record(loads(dumps(rec)), modes=("plain",))
    plain = result.mode("plain")
    assert plain.status == "mismatch"
    hex_value = format(value, "x")
    assert plain.diffs == [
        f"return value: recorded int of {value.bit_length()} bits 0x{hex_value[:12]}..."
        f"{hex_value[-12:]}, replayed int of {(value - 1).bit_length()} bits "
        f"0x{format(value - 1, 'x')[:12]}...{format(value - 1, 'x')[-12:]}"
    ]
    assert "MISMATCH" in result.report()


def test_small_ints_are_still_shown_in_decimal():
    rec = record_call(double, (2,))
    rec.outcome["value"] = {"t": "int", "v": format(-(10**40), "x")}
    diffs = replay_record(loads(dumps(rec)), modes=("plain",)).mode("plain").diffs
    assert diffs == [f"return value: recorded int {-(10**40)}, replayed int 4"]


def test_an_unexpected_failure_is_one_escaped_line(tmp_path, capsys, monkeypatch):
    import sys

    replay_module = sys.modules["framehook.records.replay"]  # the attribute is the function

    def broken(name, **options):
        raise OSError("disk\x1b[2J gone\n")

    monkeypatch.setattr(replay_module, "replay", broken)
    assert cli_main(["replay", str(tmp_path / "a.fhrec")]) == 2
    out = capsys.readouterr().out
    assert out == f"ERROR    {tmp_path / 'a.fhrec'}: replay failed: OSError: disk\\x1b[2J gone\\n\n"
