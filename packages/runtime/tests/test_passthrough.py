"""A pass-through callback (every frame intercepted, a distinct copy of its code run
behind an always-true guard) leaves program behaviour unchanged."""
from __future__ import annotations

import sys

import pytest

import framehook.runtime as rt
from conftest import PassThrough
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
    assert fn.__code__ in hook.codes
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
