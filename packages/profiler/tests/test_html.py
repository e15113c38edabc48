"""The self-contained HTML flame graph: one file with nothing to fetch, whose embedded
call paths are the flame graph's exact ones, safe against names that look like markup.
(tests/test_browser.py opens it in headless Chromium and looks at the boxes drawn.)
"""

from __future__ import annotations

import html.parser
import json
import pathlib
import sys
import threading

import pytest

from framehook.profiler import Profiler, record_function
from framehook.profiler._flamegraph import flame_title, merged_tree
from framehook.profiler._html import render_html


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def recorded(max_events=None):
    kwargs = {} if max_events is None else {"max_events": max_events}
    with Profiler(**kwargs) as prof:
        with record_function("setup </script><b>bold</b>"):
            fib(10)
        worker = threading.Thread(target=fib, args=(9,), name="worker")
        worker.start()
        worker.join()
    return prof.profile


class _Page(html.parser.HTMLParser):
    """The page's elements, attributes, title and the contents of each script."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list = []
        self.scripts: list = []
        self.title = ""
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag
        if tag == "script":
            self.scripts.append((dict(attrs), ""))

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "script":
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        elif self._in == "title":
            self.title += data


def parsed(text):
    page = _Page()
    page.feed(text)
    page.close()
    return page


def as_tree(node):
    return (node.name, node.ns, sorted(as_tree(child) for child in node.children.values() if child.ns > 0))


def embedded_tree(entry):
    name, _, ns, colour, children = entry
    assert colour.startswith("#") and len(colour) == 7
    return (name, ns, sorted(embedded_tree(child) for child in children))


def test_the_page_embeds_the_flame_graphs_paths_and_fetches_nothing():
    profile = recorded()
    text = profile.to_html()
    page = parsed(text)
    data = [body for attrs, body in page.scripts if attrs.get("type") == "application/json"]
    assert len(data) == 1
    assert embedded_tree(json.loads(data[0])) == as_tree(merged_tree(profile))
    names = {name for name, _, _ in embedded_tree(json.loads(data[0]))[2]}
    assert names == {f"{name} ({ident})" for ident, name in profile.thread_names}
    # a name that looks like markup stays data: no element of its own, no early end of the script
    assert [tag for tag, _ in page.tags].count("b") == 0
    assert "</script>" not in data[0]

    def names_in(entry):
        yield entry[0]
        for child in entry[4]:
            yield from names_in(child)

    assert "setup </script><b>bold</b>" in set(names_in(json.loads(data[0])))
    for tag, attrs in page.tags:  # offline: no external script, style, image or link
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
    assert "@import" not in text and "url(" not in text
    assert page.title == "framehook-profiler flame graph"


def test_a_bounded_run_says_how_many_events_were_dropped(tmp_path):
    profile = recorded(max_events=30)
    dropped = profile.aggregates().dropped
    assert dropped > 0
    path = profile.export(tmp_path / "flame.html")
    page = parsed(pathlib.Path(path).read_text(encoding="utf-8"))
    assert page.title == f"framehook-profiler flame graph ({dropped} events dropped by max_events, included here)"
    # the widths are the exact aggregates': the root's time is every thread's whole time
    (data,) = [body for attrs, body in page.scripts if attrs.get("type") == "application/json"]
    roots = sum(e.total_ns for paths in profile.aggregates().paths for e in paths if e.parent < 0)
    assert json.loads(data)[2] == merged_tree(profile).ns == roots


@pytest.mark.parametrize("max_events", [None, 30])
def test_the_tracer_writes_the_page_the_merged_tree_gives(max_events):
    # byte for byte what the Python rendering of the merged tree gives (it draws merged
    # processes): the same order of siblings, widest first, and the same colours
    profile = recorded(max_events)
    assert profile.to_html() == render_html(merged_tree(profile), flame_title(profile))


def down(n):
    return 0 if n == 0 else down(n - 1)


def nesting(text: str) -> int:
    """The deepest nesting of JSON arrays in text (json.loads recurses, as deep as this)."""
    deepest = level = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            in_string = True
        elif char in "[]":
            level += 1 if char == "[" else -1
            deepest = max(deepest, level)
    assert level == 0
    return deepest


def test_a_deep_call_path_is_written_whole():
    # deeper than Python's default recursion limit: the tracer writes it without recursion
    depth = 3000
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 1000)
    try:
        with Profiler() as prof:
            down(depth)
    finally:
        sys.setrecursionlimit(limit)
    (data,) = [b for a, b in parsed(prof.profile.to_html()).scripts if a.get("type") == "application/json"]
    assert data.count('["down (') == depth + 1  # one node per level: a path, not a tree
    # each node two arrays deeper than its parent: all, the thread, the test, then down's
    assert nesting(data) >= 2 * (depth + 1 + 3)
