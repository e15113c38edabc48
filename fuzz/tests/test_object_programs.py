"""The fuzzer's objects programs (programs.ObjectGenerator): user classes with methods,
properties, static and class methods, dataclasses, and classes the translator does not
model, whose objects ``f`` creates, mutates and returns around graph breaks; the harness
compares their state (every attribute, through ``__repr__``), and a translator that loses
the attributes of the objects it makes after the graph is reported."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import programs  # noqa: E402
import run  # noqa: E402

SEEDS = run.seeds(0, 60, "objects")


def test_one_program_in_32_is_an_objects_program():
    assert [s for s in range(640) if programs.family(s) == "objects"] == list(range(16, 640, 32))
    assert all(programs.family(s) == "kernel" for s in range(3, 640, 4))
    assert all(programs.family(s) == "errstate" for s in range(4, 640, 8))
    assert all(programs.family(s) == "closure" for s in range(640) if s % 8 in (1, 6))


def test_generator_emits_every_form():
    sources = [programs.generate(s) for s in SEEDS]
    assert sources == [programs.generate(s) for s in SEEDS]  # determined by the seed
    text = "\n".join(s.split("def f(a, b, arr):", 1)[1] for s in sources)
    for form in (
        "= Acc(",
        "= Leaky(",
        ".make(arr)",
        "= Cfg(",
        "Frozen(",
        "Slot(",
        ".step(",
        ".scaled(",
        ".total",
        ".act(",
        ".extra = ",
        ".other = ",
        " is ",
        "print('tick'",
        "float(",
        "for i",
        "if o",
    ):
        assert form in text, form


def test_programs_run_plainly():
    for seed in SEEDS[:20]:
        fn = run.build(programs.generate(seed), f"<fuzz program {seed}>")
        status, value, _, _, _ = run.outcome(fn, *run.inputs(seed))
        assert status in ("ok", "raised") and value


def test_translator_agrees_on_a_batch():
    watcher = run.FailedTranslations()
    for seed in SEEDS[:12]:
        findings, compared, messages = run.check_seed(seed, ["translator"], watcher)
        assert not findings and not messages and compared > 1, (seed, findings, messages)


def test_a_translator_losing_attributes_is_reported(monkeypatch):
    from framehook.translator.symbolic import rebuild

    original = rebuild.Rebuilder._emit_object

    def forgetful(self, cg, v):  # makes the object, without the attributes it was given
        saved = dict(v.attrs)
        v.attrs.clear()
        try:
            original(self, cg, v)
        finally:
            v.attrs.update(saved)

    monkeypatch.setattr(rebuild.Rebuilder, "_emit_object", forgetful)
    watcher = run.FailedTranslations()
    found = sum(len(run.check_seed(seed, ["translator"], watcher)[0]) for seed in SEEDS[:12])
    assert found > 0
