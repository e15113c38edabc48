"""The call paths of every thread merged by how their frames read, written by the tracer
(Tracer.write_folded) from its per-path aggregates: collapsed stacks, and the HTML flame
graph's tree.

Here each function gets its frame's text once: a number per distinct text (numbered in
name order, the flame graph's order for siblings of equal time) and, for the flame graph,
a style per (text, kind) whose JSON holds the name, the kind and the colour around the
node's time. The tracer folds the paths and writes them; no Python object is made per
path.
"""

from __future__ import annotations

import array
import json
from typing import TYPE_CHECKING, Callable, Dict, List, Tuple

from ._flamegraph import _color

if TYPE_CHECKING:
    from ._profile import Profile

COLLAPSED_TIME, COLLAPSED_CALLS, FLAME = 0, 1, 2


class _Styles:
    """The flame graph's JSON around each node's time, per (name, kind)."""

    def __init__(self) -> None:
        self.index: Dict[Tuple[str, str], int] = {}
        self.fragments: List[bytes] = []

    def __call__(self, name: str, kind: str) -> int:
        found = self.index.get((name, kind))
        if found is None:
            found = self.index[(name, kind)] = len(self.index)
            head = json.dumps([name, kind], separators=(",", ":"))[:-1] + ","
            # the tree goes in an HTML script element: "</" there would end it early, and
            # JSON allows "<\/" for it (names are whole inside one fragment)
            self.fragments.append(head.replace("</", "<\\/").encode())
            self.fragments.append(f',"{_color(kind, name)}",['.encode())
        return found


def write_folded(profile: "Profile", write: Callable[[bytes], object], mode: int, text: Callable[[str], str]) -> bool:
    """Writes the merged paths (``mode``: COLLAPSED_TIME, COLLAPSED_CALLS or FLAME), each
    frame read as ``text(label)``. False, writing nothing, when nothing was recorded."""
    tracer = profile._tracer
    if tracer is None:
        return False
    agg = profile.aggregates()
    roots = [text(info.label) for info in agg.threads]
    labels = [[text(func.label) for func in funcs] for funcs in agg.thread_functions]
    names = sorted(set(roots).union(*labels))
    number = {name: i for i, name in enumerate(names)}
    styles = _Styles()
    flame = mode == FLAME
    threads = []
    for root, funcs, texts in zip(roots, agg.thread_functions, labels):
        ids = array.array("I", [number[t] for t in texts])
        kinds = array.array("I", [styles(t, f.kind) for t, f in zip(texts, funcs)]) if flame else ids
        threads.append((number[root], styles(root, "thread") if flame else 0, ids.tobytes(), kinds.tobytes()))
    top = styles("all", "root") if flame else 0
    fragments = styles.fragments if flame else [name.encode() for name in names]
    tracer.write_folded(write, mode, threads, fragments, top)
    return True
