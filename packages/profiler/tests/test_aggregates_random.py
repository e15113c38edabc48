"""Random call shapes (hypothesis): the C aggregates and event writers agree with the tree
walk, and a ring (max_events) leaves every count as it was."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from framehook.profiler import Profiler, record_function  # noqa: E402
from framehook.profiler._export import render  # noqa: E402
from framehook.profiler._flamegraph import flame_title, merged_tree  # noqa: E402
from framehook.profiler._html import render_html  # noqa: E402

from fhprof_helpers import chrome_spans  # noqa: E402
from tree_reference import (
    chrome_from_trees,
    collapsed_from_trees,
    flame_from_trees,
    flame_shape,  # noqa: E402
    pstats_from_trees,
    speedscope_from_trees,
    summary_from_trees,
)

KINDS = ("a", "b", "raise", "gen", "annot", "sort")


@pytest.fixture(autouse=True, scope="module")
def no_gc_callbacks_left_behind():
    """hypothesis adds a gc callback (timing collections) the first time it runs a test:
    a Python function that later recordings would show wherever a collection happens,
    and which sys.setprofile references taken elsewhere would not. Taken out again here."""
    import gc

    before = list(gc.callbacks)
    yield
    gc.callbacks[:] = before


class Boom(Exception):
    pass


def run(node):
    kind, children = node
    if kind == "a":
        return step_a(children)
    if kind == "b":
        return step_b(children)
    if kind == "raise":
        try:
            failing(children)
        except Boom:
            pass
        return 0
    if kind == "gen":
        return sum(walk(children))
    if kind == "annot":
        with record_function("region"):
            return step_a(children)
    return len(sorted(children, key=run))  # Python called from C


def step_a(children):
    return sum(run(c) for c in children) + 1


def step_b(children):
    total = 0
    for child in children:
        total += run(child)
    return total


def failing(children):
    step_b(children)
    raise Boom


def walk(children):
    for child in children:
        yield run(child)


nodes = st.recursive(
    st.tuples(st.sampled_from(KINDS), st.just(())),
    lambda inner: st.tuples(st.sampled_from(KINDS), st.lists(inner, max_size=4).map(tuple)),
    max_leaves=40,
)


def recorded(plan, **options):
    with Profiler(**options) as prof:
        run(plan)
    return prof.profile


# the backend fixture only picks the backend: the same for every example
CHECKS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=40, deadline=None, suppress_health_check=CHECKS)
@given(plan=nodes)
def test_random_shapes_match_the_trees(backend, plan):
    profile = recorded(plan)
    assert profile.to_pstats() == pstats_from_trees(profile)
    assert profile.summary(limit=1000) == summary_from_trees(profile, limit=1000)
    assert flame_shape(merged_tree(profile)) == flame_shape(flame_from_trees(profile))
    for fmt, weight in (("collapsed", "time"), ("collapsed-calls", "calls")):
        written = [line.rpartition(" ") for line in render(profile, fmt).decode().splitlines()]
        assert [(stack, int(n)) for stack, _, n in written] == list(collapsed_from_trees(profile, weight).items())
    assert profile.to_html() == render_html(flame_from_trees(profile), flame_title(profile))
    assert spans(profile.to_chrome()) == spans(chrome_from_trees(profile))
    assert opens_and_closes(profile.to_speedscope()) == opens_and_closes(speedscope_from_trees(profile))


@settings(max_examples=25, deadline=None, suppress_health_check=CHECKS)
@given(plan=nodes, keep=st.integers(min_value=1, max_value=300))
def test_random_shapes_count_the_same_through_a_ring(backend, plan, keep):
    def counts(profile):
        return {
            k: v[:2]
            for k, v in profile.to_pstats().items()
            if k[2] in ("run", "step_a", "step_b", "failing", "walk", "<genexpr>", "<record_function region>")
        }

    full = recorded(plan)
    ring = recorded(plan, max_events=keep)
    assert counts(ring) == counts(full)
    # what is kept is written as the trees of the kept events show it, balanced and
    # monotone however the ring cut it
    assert spans(ring.to_chrome()) == spans(chrome_from_trees(ring))


def opens_and_closes(doc):
    frames = doc["shared"]["frames"]
    return [
        (p["name"], p["endValue"], [(e["type"], frames[e["frame"]]["name"], e["at"]) for e in p["events"]])
        for p in doc["profiles"]
    ]


def spans(doc):
    """A Chrome document's calls by id, as complete events (B/E paired, or X as is)."""
    calls = (
        chrome_spans(doc)
        if any(e["ph"] == "B" for e in doc["traceEvents"])
        else [e for e in doc["traceEvents"] if e["ph"] == "X"]
    )
    return sorted(({k: v for k, v in e.items() if k != "ph"} for e in calls), key=lambda e: e["args"]["id"])
