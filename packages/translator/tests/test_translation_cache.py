"""The translation cache (config.translation_cache_dir): translations kept on disk and
found again by a later process, only when every guard holds on the new frame, with the
same results; and what it refuses (objects with no import name, edited functions, untrusted
or corrupt files)."""

import functools
import os
import pickle
import subprocess
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.conversion import convert_frame
from framehook.translator.conversion import translation_cache as tc
from framehook.translator.guards import portable

pytestmark = pytest.mark.usefixtures("fresh_translator")

SCALE = 2.0


def helper(a):
    return a * SCALE


def kernel(a, b, n):
    return np.sum(helper(a) + b) * n


def breaking(a):
    s = np.sum(a)
    print("side effect", end="")  # a graph break
    return s * 2


def appends(a, log):
    s = np.sum(a) * 2
    log.append(s)  # a side effect, replayed after the graph
    return s


add_one = lambda x: x + 1  # noqa: E731 - a function with no import name


def uses_lambda(a):
    return add_one(a) * 2


@pytest.fixture
def cache(tmp_path):
    path = tmp_path / "translations"
    tc._checked.clear()
    tc._warned.clear()
    before = dict(tc.counts)
    with ft.config.patch(translation_cache_dir=str(path)):
        yield path
    tc._checked.clear()
    tc._warned.clear()
    tc.counts.update(before)


def _delta(before):
    return {k: tc.counts[k] - before[k] for k in before}


def _fresh_process_call(fn, *args):
    """The call a new process makes: nothing translated in memory (reset), the disk kept."""
    ft.reset()
    before = dict(tc.counts)
    result = ft.optimize("eager")(fn)(*args)
    return result, _delta(before), ft.last_decisions(fn)


# ------------------------------------------------------------------ portable expectations


def test_references_resolve_to_the_same_objects():
    for obj in (np, np.add, np.sum, np.ndarray, int, functools.reduce, kernel):
        r = portable.ref(obj)
        assert portable.resolve(r) is obj
    assert portable.ref(np)[0] == "module"
    assert portable.ref(np.sum)[0] == "object"  # numpy's version is in the key
    assert portable.ref(kernel)[0] == "function"  # a user's function carries its code's digest


def test_a_function_with_other_code_or_defaults_is_another_function():
    r = portable.ref(kernel)
    edited = types.FunctionType(breaking.__code__, kernel.__globals__, "kernel")
    mod = sys.modules[__name__]
    saved = mod.kernel
    try:
        mod.kernel = edited
        edited.__qualname__ = "kernel"
        with pytest.raises(portable.NotPortable, match="changed since it was recorded"):
            portable.resolve(r)
    finally:
        mod.kernel = saved

    def with_default(x, k=3):
        return x * k

    a = portable._function_digest(with_default)
    with_default.__defaults__ = (4,)
    assert portable._function_digest(with_default) != a


def test_objects_with_no_import_name_are_not_portable():
    with pytest.raises(portable.NotPortable, match="import name"):
        portable.ref(add_one)
    with pytest.raises(portable.NotPortable):
        portable.ref(object())

    class Local:
        pass

    with pytest.raises(portable.NotPortable):
        portable.ref(Local)
    with pytest.raises(portable.NotPortable, match="cannot resolve"):
        portable.resolve(("object", "numpy", "no_such_function_here"))


def test_values_keep_their_exact_type():
    assert portable.value(1) != portable.value(1.0) != portable.value(True)
    assert portable.value(float("nan")) == portable.value(float("nan"))
    assert portable.value(np.dtype("float32")) == ("dtype", "<f4")
    assert portable.value(np.float32(2)) != portable.value(np.float64(2))
    assert portable.value({"a": [1, (2, slice(None, 3))]}) == portable.value({"a": [1, (2, slice(None, 3))]})
    with pytest.raises(portable.NotPortable, match="structured dtype"):
        portable.value(np.dtype([("x", "f8")]))
    with pytest.raises(portable.NotPortable, match="a object value"):
        portable.value(object())


def test_expectations_differ_exactly_when_a_guard_would_fail():
    a, b = np.arange(4.0), np.ones(4)
    frame = {"a": a, "b": b, "n": 3}
    g = {"np": np, "helper": helper, "SCALE": SCALE}
    from framehook.translator.guards import GuardKind
    from framehook.translator.guards.sources import GlobalSource, LocalSource

    made = [
        LocalSource("a").make_guard(GuardKind.NDARRAY_MATCH),
        LocalSource("n").make_guard(GuardKind.EQUALS_MATCH),
        GlobalSource("helper").make_guard(GuardKind.ID_MATCH),
        GlobalSource("np").make_guard(GuardKind.ID_MATCH),
    ]
    same = portable.expectations(made, frame, g)
    assert portable.expectations(made, {"a": a.copy(), "b": b, "n": 3}, g) == same
    assert portable.expectations(made, {"a": a.astype(np.float32), "b": b, "n": 3}, g) != same
    assert portable.expectations(made, {"a": a, "b": b, "n": 3.0}, g) != same
    assert portable.expectations(made, {"a": a[::2], "b": b, "n": 3}, g) != same
    with pytest.raises(portable.NotPortable):
        portable.expectations(made, frame, dict(g, helper=add_one))


def test_the_key_follows_the_code_backend_and_every_setting_but_the_directory(cache):
    from framehook.translator.backends import lookup_backend

    eager, translator = lookup_backend("eager"), convert_frame._default_translator()

    def key(code=kernel.__code__, backend=eager, strict=False):
        return tc.cache_key(code, backend, translator, strict, None)

    first = key()
    assert key() == first and len({first, key(breaking.__code__), key(strict=True)}) == 3
    with ft.config.patch(cache_size_limit=ft.config.cache_size_limit + 1):
        assert key() != first  # the settings' text is written again when a value changed
    assert key() == first
    with ft.config.patch(translation_cache_dir=str(cache / "elsewhere")):
        assert key() == first
    assert key(backend=lambda graph, inputs: graph.forward) is None  # not a registered backend


# ------------------------------------------------------------------ in one process, after reset()


def test_a_kept_translation_is_found_after_reset_and_gives_the_same_result(cache):
    a, b = np.arange(6.0), np.ones(6)
    first, counts, decisions = _fresh_process_call(kernel, a, b, 3)
    assert counts["saved"] == 1 and counts["hits"] == 0
    assert decisions["origin"] == "translated"
    assert len(os.listdir(cache)) == 1
    again, counts, decisions = _fresh_process_call(kernel, a, b, 3)
    assert counts["hits"] == 1 and counts["saved"] == 0
    assert decisions["origin"] == "loaded"
    assert decisions["guards"]  # the loaded entry is guarded as a translated one
    assert again == first == kernel(a, b, 3)
    # the loaded entry's guards: another dtype misses it and translates, correctly
    opt = ft.optimize("eager")(kernel)
    f32 = a.astype(np.float32)
    assert opt(f32, b, 3) == kernel(f32, b, 3)
    assert ft.last_decisions(kernel)["origin"] == "translated"


def _entries(path):
    (name,) = os.listdir(path)
    with open(path / name, "rb") as f:
        return name, pickle.loads(f.read()[len(tc.MAGIC) :])


def test_kept_guard_parts_decide_a_hit_in_c_and_give_the_translated_check(cache, monkeypatch):
    a, b = np.arange(6.0), np.ones(6)
    _, _, translated = _fresh_process_call(kernel, a, b, 3)
    _, entries = _entries(cache)
    assert all(parts is not None and kept is not None for _, _, _, parts, kept in entries)  # all have a C form

    def not_built(*args):
        raise AssertionError("the guards were built again on the loading frame")

    # the kept parts alone decide, asked of the C checker: the guards are not built again
    monkeypatch.setattr(tc, "expectations_built", not_built)
    again, counts, loaded = _fresh_process_call(kernel, a, b, 3)
    assert counts["hits"] == 1 and loaded["origin"] == "loaded"
    assert again == kernel(a, b, 3)
    assert loaded["guards"] == translated["guards"]  # the same conditions, worded alike
    from framehook.translator._runtime import runtime

    (entry,) = runtime.cache_entries(kernel.__code__)
    assert type(entry.check_fn) is runtime.GuardChecker
    assert entry.check_fn.fail_reason({"a": a, "b": b, "n": 3}) is None
    reason = entry.check_fn.fail_reason({"a": a.astype(np.float32), "b": b, "n": 3})
    assert reason.startswith("NDARRAY_MATCH: L['a']") and "float32" in reason
    assert "def ___make_check_fn" in entry.check_fn.source


def _loaded_entry(fn, *args):
    """A new process's first call of ``fn`` (without reading its decisions, which would
    restore the guards), and its one cache entry."""
    from framehook.translator._runtime import runtime

    ft.reset()
    before = dict(tc.counts)
    result = ft.optimize("eager")(fn)(*args)
    (entry,) = runtime.cache_entries(fn.__code__)
    return result, _delta(before), entry


def test_a_loaded_entry_restores_its_guards_and_their_parts_only_when_asked(cache, monkeypatch):
    a, b = np.arange(6.0), np.ones(6)
    _, _, translated = _fresh_process_call(kernel, a, b, 3)
    restored = []
    rebuild, builder = tc.rebuild_guards, tc.restored_builder
    monkeypatch.setattr(tc, "rebuild_guards", lambda rows: restored.append("guards") or rebuild(rows))
    monkeypatch.setattr(tc, "restored_builder", lambda *a, **k: restored.append("parts") or builder(*a, **k))
    result, counts, entry = _loaded_entry(kernel, a, b, 3)
    assert counts["hits"] == 1 and result == kernel(a, b, 3)
    assert restored == []  # the kept C checker alone decided the hit
    assert entry.check_fn({"a": a, "b": b, "n": 3}) and not entry.check_fn({"a": a[::2], "b": b, "n": 3})
    assert restored == []
    reason = entry.check_fn.fail_reason({"a": a[::2], "b": b, "n": 3})
    assert reason.startswith("NDARRAY_MATCH: L['a']"), reason
    assert restored == ["guards", "parts"]  # once, on first use
    assert entry.check_fn.code_parts == translated["guards"] and repr(entry.check_fn.guards).startswith("[")
    assert [g.kind.name for g in entry.check_fn.guards].count("GLOBAL_STATE") == 1
    assert len(entry.check_fn.code_part_guards) == len(entry.check_fn.code_parts)
    assert entry.check_fn.fail_reasons({"a": a, "b": b, "n": 3}) == []
    assert restored == ["guards", "parts"]


def test_a_loaded_entry_whose_parts_cannot_be_restored_still_guards_its_code(cache):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    name, entries = _entries(cache)
    with open(cache / name, "wb") as f:  # the readable parts damaged, the kept checker intact
        f.write(tc.MAGIC + pickle.dumps([e[:3] + (b"not a pickle", e[4]) for e in entries]))
    result, counts, entry = _loaded_entry(kernel, a, b, 3)
    assert counts["hits"] == 1 and result == kernel(a, b, 3)
    f32 = a.astype(np.float32)
    assert entry.check_fn.fail_reason({"a": a, "b": b, "n": 3}) is None
    reason = entry.check_fn.fail_reason({"a": f32, "b": b, "n": 3})
    assert "loaded from the cache failed" in reason and "could not be restored" in reason
    assert list(entry.check_fn.code_parts) == []
    opt = ft.optimize("eager")(kernel)  # the failing guard recompiles, correctly
    assert opt(f32, b, 3) == kernel(f32, b, 3)
    assert ft.last_decisions(kernel)["origin"] == "translated"


def test_optimize_reads_the_kept_translations_before_the_first_call(cache, monkeypatch):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    name, _ = _entries(cache)
    reads = []
    read = tc._read
    monkeypatch.setattr(tc, "_read", lambda path: reads.append(path) or read(path))
    ft.reset()
    opt = ft.optimize("eager")(kernel)
    assert len(reads) == 1  # when wrapped
    before = dict(tc.counts)
    assert opt(a, b, 3) == kernel(a, b, 3)
    assert len(reads) == 1 and _delta(before)["hits"] == 1  # the call read nothing
    # a file that changed after it was read ahead is read again
    ft.reset()
    opt = ft.optimize("eager")(kernel)
    st = os.stat(cache / name)
    os.utime(cache / name, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    before = dict(tc.counts)
    assert opt(a, b, 3) == kernel(a, b, 3)
    assert len(reads) == 3 and _delta(before)["hits"] == 1
    # wrapped again once it has run (a wrapper made in a loop): nothing to read ahead
    ft.optimize("eager")(kernel)
    ft.optimize("eager")(kernel)
    assert len(reads) == 3
    ft.reset()  # wrapped twice before its first call: read once
    ft.optimize("eager")(kernel)
    ft.optimize("eager")(kernel)
    assert len(reads) == 4


def test_a_failure_while_reading_ahead_is_no_error_of_optimize(cache, monkeypatch):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)

    def broken(*args):
        raise OSError("the disk went away")

    monkeypatch.setattr(tc, "read_ahead", broken)
    result, counts, decisions = _fresh_process_call(kernel, a, b, 3)  # the call reads the file itself
    assert counts["hits"] == 1 and decisions["origin"] == "loaded" and result == kernel(a, b, 3)


def test_reading_ahead_imports_no_module(monkeypatch):
    import colorsys

    kept = {
        "module": tc._dumps(colorsys),
        "object": tc._dumps(colorsys.rgb_to_hsv),
        "function": tc._dumps(helper),
    }
    assert tc._loads(kept["module"], imports=False) is colorsys
    monkeypatch.delitem(sys.modules, "colorsys")
    for what in ("module", "object"):
        with pytest.raises(portable.NotPortable, match="colorsys is not imported yet"):
            tc._loads(kept[what], imports=False)
        assert "colorsys" not in sys.modules, what
    assert tc._loads(kept["object"]) is sys.modules["colorsys"].rgb_to_hsv  # in the call: imported
    assert tc._loads(kept["function"], imports=False) is helper  # its module is imported
    monkeypatch.delitem(sys.modules, __name__)
    with pytest.raises(portable.NotPortable, match="is not imported yet"):
        tc._loads(kept["function"], imports=False)


def test_kept_guard_parts_miss_on_a_failing_guard_or_another_global_state(cache):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    for args in ((a.astype(np.float32), b, 3), (a, b, 3.0), (a[::2], b[::2], 3)):
        result, counts, _ = _fresh_process_call(kernel, *args)
        assert counts["hits"] == 0 and counts["misses"] == 1, args
        assert result == kernel(*args)
    with np.errstate(over="raise"):  # numpy's error state is guarded
        result, counts, decisions = _fresh_process_call(kernel, a, b, 3)
    assert counts["hits"] == 0 and decisions["origin"] == "translated"


def test_an_entry_without_kept_parts_is_matched_by_its_expectations(cache):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    name, entries = _entries(cache)
    with open(cache / name, "wb") as f:  # as kept for guards with no C form
        f.write(tc.MAGIC + pickle.dumps([e[:3] + (None, None) for e in entries]))
    result, counts, decisions = _fresh_process_call(kernel, a, b, 3)
    assert counts["hits"] == 1 and decisions["origin"] == "loaded" and result == kernel(a, b, 3)
    _, counts, _ = _fresh_process_call(kernel, a.astype(np.int32), b, 3)
    assert counts["hits"] == 0


def test_kept_parts_naming_an_edited_function_miss(cache):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    mod = sys.modules[__name__]
    saved = mod.helper

    def helper(a):  # same name, other code
        return a * SCALE + 1

    try:
        mod.helper = helper
        result, counts, decisions = _fresh_process_call(kernel, a, b, 3)
    finally:
        mod.helper = saved
    assert counts["hits"] == 0 and decisions["origin"] == "translated"
    assert result == np.sum(a * SCALE + 1 + b) * 3


def test_a_frame_unlike_every_kept_one_is_translated_and_kept_too(cache):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    result, counts, decisions = _fresh_process_call(kernel, a.astype(np.int64), b, 3)
    assert counts == {"hits": 0, "misses": 1, "saved": 1, "not_portable": 0}
    assert result == kernel(a.astype(np.int64), b, 3)
    (name,) = os.listdir(cache)
    with open(cache / name, "rb") as f:
        entries = pickle.loads(f.read()[len(tc.MAGIC) :])
    assert len(entries) == 2
    for args in ((a, b, 3), (a.astype(np.int64), b, 3)):
        result, counts, _ = _fresh_process_call(kernel, *args)
        assert counts["hits"] == 1 and result == kernel(*args)


def test_a_frame_with_a_break_is_kept_with_its_resume_function(cache, capsys):
    a = np.arange(5.0)
    first, counts, decisions = _fresh_process_call(breaking, a)
    # the frame (its graph, the print, the call of the resume function) and the resume function
    assert decisions["origin"] == "translated" and counts["saved"] == 2, counts
    for _ in range(2):
        again, counts, decisions = _fresh_process_call(breaking, a)
        assert decisions["origin"] == "loaded" and counts["hits"] == 2 and counts["saved"] == 0, counts
        assert again == first == breaking(a)
    assert capsys.readouterr().out == "side effect" * 5  # once per call, plain ones included
    # the kept frame takes another frame's values: the graph and the resume function see them
    b = np.arange(5.0) * 3
    result, counts, decisions = _fresh_process_call(breaking, b)
    assert decisions["origin"] == "loaded" and result == breaking(b)


def test_a_kept_output_code_is_cleaned_once_when_translated_not_when_loaded(cache, monkeypatch, capsys):
    # every output code taken as needing it (which ones do differs across versions)
    cleaned = []
    clean = convert_frame.transform_code_object
    monkeypatch.setattr(convert_frame, "needs_cleaning", lambda code: True)
    monkeypatch.setattr(convert_frame, "transform_code_object", lambda *a, **k: cleaned.append(a[0]) or clean(*a, **k))
    a = np.arange(5.0)
    first, counts, decisions = _fresh_process_call(breaking, a)
    assert decisions["origin"] == "translated" and breaking.__code__.co_name in [c.co_name for c in cleaned]
    del cleaned[:]
    again, counts, decisions = _fresh_process_call(breaking, a)
    assert decisions["origin"] == "loaded" and counts["hits"] == 2, counts
    assert cleaned == [] and again == first == breaking(a)


def test_side_effects_are_kept_and_replayed_on_the_new_frame(cache):
    a = np.arange(4.0)
    logs = [[], []]
    first, counts, decisions = _fresh_process_call(appends, a, logs[0])
    assert decisions["origin"] == "translated" and counts["saved"] == 1, counts
    again, counts, decisions = _fresh_process_call(appends, a, logs[1])
    assert decisions["origin"] == "loaded" and counts["hits"] == 1, counts
    assert first == again == appends(a, [])
    assert logs == [[first], [first]]  # each call appended to its own list


def test_objects_without_import_name_are_not_kept(cache):
    a = np.arange(5.0)
    result, counts, _ = _fresh_process_call(uses_lambda, a)
    np.testing.assert_array_equal(result, uses_lambda(a))
    assert counts["saved"] == 0 and counts["not_portable"] == 1


def test_not_used_under_explain_a_custom_backend_or_guard_hooks(cache):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    ft.reset()
    before = dict(tc.counts)
    text = str(ft.explain(kernel)(a, b, 3))
    assert "Graph Count: 1" in text or "graph" in text.lower()
    assert _delta(before)["hits"] == 0
    ft.reset()

    def my_backend(graph, example_inputs):
        return graph.forward

    assert ft.optimize(my_backend)(kernel)(a, b, 3) == kernel(a, b, 3)
    ft.reset()
    assert ft.optimize("eager", guard_filter_fn=lambda gs: [True] * len(gs))(kernel)(a, b, 3) == kernel(a, b, 3)
    assert _delta(before) == {"hits": 0, "misses": 0, "saved": 0, "not_portable": 0}


def test_a_corrupt_file_is_ignored_with_one_warning(cache):
    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    (name,) = os.listdir(cache)
    (cache / name).write_bytes(tc.MAGIC + b"not a pickle")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, counts, _ = _fresh_process_call(kernel, a, b, 3)
        _fresh_process_call(kernel, a, b, 3)
    assert result == kernel(a, b, 3)
    messages = [str(w.message) for w in caught if w.category is tc.TranslationCacheWarning]
    assert len(messages) == 1 and "is corrupt" in messages[0], messages
    # the translation rewrote the file: the next process finds it again
    _, counts, _ = _fresh_process_call(kernel, a, b, 3)
    assert counts["hits"] == 1


def test_a_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    tc._checked.clear()
    tc._warned.clear()
    a, b = np.arange(6.0), np.ones(6)
    with ft.config.patch(translation_cache_dir=str(shared)), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, counts, _ = _fresh_process_call(kernel, a, b, 3)
    tc._checked.clear()
    tc._warned.clear()
    assert result == kernel(a, b, 3) and counts["saved"] == 0
    assert os.listdir(shared) == []
    (w,) = [w for w in caught if w.category is tc.TranslationCacheWarning]
    assert "writable by others" in str(w.message) and str(shared) in str(w.message)


def test_an_unusable_directory_is_refused(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    tc._checked.clear()
    tc._warned.clear()
    with ft.config.patch(translation_cache_dir=str(blocker / "sub")), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a, b = np.arange(6.0), np.ones(6)
        assert _fresh_process_call(kernel, a, b, 3)[0] == kernel(a, b, 3)
    tc._checked.clear()
    tc._warned.clear()
    assert any("cannot be created" in str(w.message) for w in caught if w.category is tc.TranslationCacheWarning)


def test_the_setting_names_what_it_expects():
    from framehook.translator.config import ConfigError

    with pytest.raises(ConfigError, match=r"config.translation_cache_dir: expected str or None"):
        ft.config.translation_cache_dir = 3


# ------------------------------------------------------------------ across processes

_MODULE = """
import numpy as np
OFFSET = {offset}
def helper(x):
    return x {op} OFFSET
def kernel(x, y):
    return np.sum(helper(x) * y)
def breaks(x, y):
    s = np.sum(helper(x))
    print("between", end=" ")  # a graph break: the rest runs in a resume function
    return s * np.sum(y)
"""

_SCRIPT = """
import sys, json
import numpy as np
import framehook.translator as ft
from framehook.translator.conversion import translation_cache as tc
import userkernel
x, y = np.arange(8.0), np.linspace(0, 1, 8)
fn = getattr(userkernel, sys.argv[2])
out = ft.optimize(sys.argv[1])(fn)(x, y)
print(json.dumps({{"out": float(out), "plain": float(fn(x, y)), "counts": tc.counts,
                  "origin": ft.last_decisions(fn)["origin"]}}))
"""


def _run(tmp_path, backend="eager", fn="kernel"):
    env = dict(
        os.environ,
        FRAMEHOOK_TRANSLATION_CACHE_DIR=str(tmp_path / "cache"),
        FRAMEHOOK_NUMBA_CACHE_DIR=str(tmp_path / "numba"),
        PYTHONPATH=os.pathsep.join([str(tmp_path)] + [p for p in sys.path if p]),
        PYTHONDONTWRITEBYTECODE="1",
    )
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(), backend, fn], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return _last_json(done.stdout)


def _last_json(stdout):
    import json

    line = stdout.strip().splitlines()[-1]
    start = line.index("{")
    return dict(json.loads(line[start:]), printed=line[:start])


def test_a_new_process_finds_the_translation_and_an_edited_helper_misses(tmp_path):
    module = tmp_path / "userkernel.py"
    module.write_text(textwrap.dedent(_MODULE.format(offset=1.5, op="+")))
    first = _run(tmp_path)
    assert first["origin"] == "translated" and first["counts"]["saved"] == 1
    second = _run(tmp_path)
    assert second["origin"] == "loaded" and second["counts"]["hits"] == 1, (first, second)
    assert first["out"] == second["out"] == second["plain"]
    # the helper's body changes (same name, same module): its digest no longer matches
    module.write_text(textwrap.dedent(_MODULE.format(offset=1.5, op="-")))
    third = _run(tmp_path)
    assert third["origin"] == "translated" and third["out"] == third["plain"] != first["out"]
    # a global float is an input of the graph, guarded on its type: another value reuses
    # the kept translation, and the result follows the new value
    module.write_text(textwrap.dedent(_MODULE.format(offset=2.5, op="-")))
    fourth = _run(tmp_path)
    assert fourth["origin"] == "loaded" and fourth["out"] == fourth["plain"] != third["out"]


_DECORATED = """
import numpy as np
import framehook.translator as ft
@ft.optimize("eager")
def kernel(x, y):
    return np.sum(later(x) * y)
def later(x):  # defined after the function is wrapped, when its translations are read
    return x + 1.5
"""

_DECORATED_SCRIPT = """
import json
import numpy as np
import framehook.translator as ft
from framehook.translator.conversion import translation_cache as tc
import decorated
x, y = np.arange(8.0), np.linspace(0, 1, 8)
out = decorated.kernel(x, y)
print(json.dumps({"out": float(out), "plain": float(np.sum((x + 1.5) * y)), "counts": tc.counts,
                  "origin": ft.last_decisions(decorated.kernel)["origin"]}))
"""


def test_a_function_wrapped_before_its_helper_is_defined_loads_in_a_new_process(tmp_path):
    (tmp_path / "decorated.py").write_text(_DECORATED)
    env = dict(
        os.environ,
        FRAMEHOOK_TRANSLATION_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONPATH=os.pathsep.join([str(tmp_path)] + [p for p in sys.path if p]),
        PYTHONDONTWRITEBYTECODE="1",
    )
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", _DECORATED_SCRIPT], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        runs.append(_last_json(done.stdout))
    assert [r["origin"] for r in runs] == ["translated", "loaded"], runs
    assert runs[1]["counts"]["hits"] == 1 and runs[1]["out"] == runs[1]["plain"] == runs[0]["out"]


def test_a_new_process_loads_a_frame_with_a_break_and_its_resume_function(tmp_path):
    (tmp_path / "userkernel.py").write_text(textwrap.dedent(_MODULE.format(offset=1.5, op="+")))
    first = _run(tmp_path, fn="breaks")
    second = _run(tmp_path, fn="breaks")
    assert (first["origin"], first["counts"]["saved"]) == ("translated", 2), first
    # the resume function, rebuilt from the kept code, is known as one and finds its own entry
    assert (second["origin"], second["counts"]["hits"], second["counts"]["misses"]) == ("loaded", 2, 0), second
    assert first["printed"] == second["printed"] == "between between "  # the optimized call, then plain
    assert first["out"] == second["out"] == second["plain"]


def test_a_new_process_under_numba_finds_the_translation(tmp_path):
    pytest.importorskip("numba", reason="numba is not installed for this interpreter")
    (tmp_path / "userkernel.py").write_text(textwrap.dedent(_MODULE.format(offset=1.5, op="+")))
    first = _run(tmp_path, "numba")
    second = _run(tmp_path, "numba")
    assert (first["origin"], second["origin"]) == ("translated", "loaded")
    assert second["out"] == pytest.approx(second["plain"])


# ------------------------------------------------------------------ what a kept graph holds


def test_a_kept_graph_brings_its_compiled_function_and_takes_the_new_frames_globals(cache):
    from framehook.translator._runtime import runtime

    a, b = np.arange(6.0), np.ones(6)
    _fresh_process_call(kernel, a, b, 3)
    ft.reset()
    opt = ft.optimize("eager")(kernel)
    assert opt(a, b, 3) == kernel(a, b, 3)
    (entry,) = runtime.cache_entries(kernel.__code__)
    (graph,) = entry.check_fn.framehook_graphs
    assert ft.last_decisions(kernel)["origin"] == "loaded"
    # rebuilt from the kept code (no source written again): the same source, this module's globals
    assert graph.meta["globals"] is globals()
    assert graph.forward.graph_source.startswith("def forward(")
    assert graph.forward.__globals__["__name__"] == __name__


def test_a_graph_pickles_without_its_compiled_function_when_that_is_not_portable(cache):
    import io

    from framehook.translator.graph import Graph

    g = Graph("g")
    x = g.placeholder("x")
    g.output(g.call(add_one, (x,)))  # a target no import name leads to
    assert g.forward(2) == 3
    with pytest.raises(portable.NotPortable):
        tc._Pickler(io.BytesIO()).dump(g)
    h = Graph("h")
    y = h.placeholder("y")
    h.output(h.call(np.negative, (y,)))
    assert h.forward(2) == -2
    copy = pickle.loads(tc._dumps(h))
    assert copy._forward is None and copy.forward(5) == -5
    assert copy.forward.framehook_names  # from the kept code, with what its source names


def test_processes_filling_one_cache_at_once_leave_it_readable(tmp_path):
    (tmp_path / "userkernel.py").write_text(textwrap.dedent(_MODULE.format(offset=1.5, op="+")))
    env = dict(
        os.environ,
        FRAMEHOOK_TRANSLATION_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONPATH=os.pathsep.join([str(tmp_path)] + [p for p in sys.path if p]),
        PYTHONDONTWRITEBYTECODE="1",
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-W", "error::UserWarning", "-c", _SCRIPT.format(), "eager", "breaks"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err  # a warning (a corrupt file seen) would have raised
    assert not [p for p in os.listdir(tmp_path / "cache") if p.endswith(".tmp")]
    again = _run(tmp_path, fn="breaks")
    assert again["origin"] == "loaded" and again["counts"]["hits"] == 2 and again["out"] == again["plain"]
