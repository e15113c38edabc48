"""A pass-through callback (every frame intercepted, a distinct copy of its code run
behind an always-true guard) leaves program behaviour unchanged."""

from __future__ import annotations

import sys

import pytest

import framehook.runtime as rt
from framehook.runtime import _C
from passthrough import PassThrough
from runtime_helpers import targeting
from corpus import CASES

VERSION_ONLY = {
    "structural_pattern_matching": (3, 10),
    "exception_groups_except_star": (3, 11),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_case_unchanged(name):
    fn = CASES[name]
    expected = fn()
    hook = PassThrough()
    with rt.enable(hook):
        got = fn()
        again = fn()  # second run: cache hits instead of callbacks
    assert got == expected
    assert again == expected
    assert hook.codes[id(fn.__code__)] is fn.__code__
    assert rt.cache_entries(fn.__code__)[0].hits >= 1


@pytest.mark.parametrize("name,version", sorted(VERSION_ONLY.items()))
def test_version_specific_cases_present(name, version):
    if sys.version_info < version:
        pytest.skip(f"{name} needs Python {'.'.join(map(str, version))}+ syntax")
    assert name in CASES


def test_passthrough_runs_distinct_code_objects():
    def target(x):
        return x + 1

    hook = PassThrough()
    with rt.enable(hook):
        target(1)
    (entry,) = rt.cache_entries(target.__code__)
    assert entry.code is not target.__code__
    assert entry.code == target.__code__ or entry.code.co_code == target.__code__.co_code


def big_replacement(name, nlocals):
    """Code for `def name(n, *rest, key=0, **kw)` that needs a much larger frame."""
    body = "".join(f"    v{i} = n + {i}\n" for i in range(nlocals))
    src = f"def {name}(n, *rest, key=0, **kw):\n{body}    return (v{nlocals - 1}, rest, key, tuple(sorted(kw)))\n"
    ns: dict = {}
    exec(src, ns)
    return ns[name].__code__


def test_replacement_needing_a_larger_frame_at_every_depth():
    # Recursion walks frames up to and across data-stack chunk boundaries, where a bigger
    # replacement cannot grow in place and runs as a call instead (3.11+).
    def leaf(n, *rest, key=0, **kw):
        return (n, rest, key, tuple(sorted(kw)))

    def down(k):
        if k == 0:
            return leaf(1, 2, 3, key=4, extra=5)
        return down(k - 1)

    replacement = big_replacement("leaf", 400)
    cb = targeting(leaf, lambda *a: rt.GuardedCode(replacement, lambda L: True))
    with rt.enable(cb):
        # counted inside the block: entering and leaving it runs enable()'s own functions,
        # which earlier tests may have cached replacements for
        before = _C._shadow_stats()
        results = {down(k) for k in range(0, 600, 3)}
        after = _C._shadow_stats()
    assert results == {(400, (2, 3), 4, ("extra",))}
    assert rt.cache_entries(leaf.__code__)[0].hits == 199
    runs = {k: after[k] - before[k] for k in after}
    assert runs["in_frame"] + runs["as_call"] == 200
    if sys.version_info >= (3, 11):
        # both ways happened: in place where the chunk had room, as a call where it had not
        assert runs["as_call"] > 0 and runs["in_frame"] > 0, runs
    else:
        assert runs["as_call"] == 0  # 3.9/3.10 always build a shadow frame object


def test_larger_replacement_with_closure_and_cells():
    def make(offset):
        def leaf(a, b=2):
            def inner():
                return a + b + offset

            return inner()

        return leaf

    leaf = make(100)
    body = "".join(f"        w{i} = {i}\n" for i in range(300))
    src = (
        f"def make(offset):\n    def leaf(a, b=2):\n{body}        def inner():\n"
        f"            return (a + b + offset) * 2\n        return inner()\n    return leaf\n"
    )
    ns: dict = {}
    exec(src, ns)
    replacement = ns["make"](0).__code__

    def down(k):
        return leaf(k) if k < 1 else down(k - 1)

    with rt.enable(targeting(leaf, lambda *a: rt.GuardedCode(replacement, lambda L: True))):
        assert {down(k) for k in range(0, 500, 7)} == {(0 + 2 + 100) * 2}


def _square(x):
    return x * x


@pytest.fixture
def traced_callbacks():
    """Let trace functions (coverage.py) see the callback's own lines."""
    previous = rt.set_trace_callbacks(True)
    yield
    rt.set_trace_callbacks(previous)


def _counting(n):
    yield from range(n)


def test_helper_counts_frames_and_resets_its_entries(traced_callbacks):
    hook = PassThrough()
    with rt.enable(hook):
        assert [_square(0), _square(1), _square(2)] == [0, 1, 4]  # no comprehension frame
    assert hook.calls == 1 and hook.codes == {id(_square.__code__): _square.__code__}
    assert hook.frames_seen() == 3  # one miss, then two cache hits
    hook.reset()
    assert rt.cache_entries(_square.__code__) == [] and hook.frames_seen() == 3
    with rt.enable(hook):
        _square(3)
    assert hook.calls == 2 and hook.frames_seen() == 4
    hook.reset()


def test_helper_counts_only_its_own_cache_hits(traced_callbacks):
    rt.reset_code(_square.__code__)
    hook = PassThrough()
    with rt.enable(hook):
        _square(1)
    other = _square.__code__.replace()

    def other_callback(frame, cache_entry, frame_state):
        return rt.GuardedCode(other, lambda f_locals: True)

    rt.reset_code(_square.__code__)
    with rt.enable(other_callback):
        _square(1), _square(2)  # a miss, then a hit of the other callback's entry
    assert rt.cache_entries(_square.__code__)[0].hits == 1
    assert hook.frames_seen() == 1
    rt.reset_code(_square.__code__)


def test_shadow_replay_reports_the_outcome_and_the_interception(traced_callbacks):
    from framehook.runtime.passthrough import shadow_replay

    calls = []

    def run(fn):
        calls.append(fn)
        return fn(7)

    report = shadow_replay(_square, run)
    assert calls == [_square] and report["outcome"] == 49
    assert report["intercepted"] == 2 and report["problems"] == []  # run's frame and _square's
    assert rt.cache_entries(_square.__code__) == []  # the replay leaves no entries behind


def test_shadow_replay_names_a_frame_it_did_not_see(traced_callbacks):
    from framehook.runtime.passthrough import shadow_replay

    report = shadow_replay(_square, lambda fn: 0)  # run never calls the function
    assert report["problems"] == ["the recorded frame was not intercepted by the runtime"]
    # a generator's frame runs when it is first resumed, not at the call: not a problem
    report = shadow_replay(_counting, lambda fn: 0)
    assert report["problems"] == [] and report["intercepted"] == 1  # the lambda's frame only
