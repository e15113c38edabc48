"""SVG flame graph: stacks merged by function path, widths proportional to time.

Each thread is a frame under a common root; within a thread, calls with the same function
under the same parent path are merged, so widths show total time per call path (the
tracer's per-path aggregates: no Python object per call).
"""

from __future__ import annotations

import colorsys
import zlib
from typing import TYPE_CHECKING, Dict, List, Optional
from xml.sax.saxutils import escape

if TYPE_CHECKING:
    from ._profile import Profile

WIDTH = 1200
ROW = 17
FONT = 11
PAD = 10
_HUES = {
    "python": (20, 60),
    "c": (190, 40),
    "annotation": (280, 30),
    "cache_lookup": (120, 30),
    "compiled_region": (90, 40),
    "task": (170, 25),
}


class _Node:
    __slots__ = ("name", "kind", "ns", "children")

    def __init__(self, name: str, kind: str) -> None:
        self.name = name
        self.kind = kind
        self.ns = 0
        self.children: Dict[str, "_Node"] = {}

    def child(self, name: str, kind: str) -> "_Node":
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = _Node(name, kind)
        return node


def _color(kind: str, name: str) -> str:
    """A fill near the kind's hue, varied by name, as ``#rrggbb``: SVG 1.1 has no
    ``hsl()``, and renderers that follow it (cairosvg, librsvg) paint such a fill black."""
    hue, spread = _HUES.get(kind, (0, 0))
    jitter = zlib.crc32(name.encode()) % 1000 / 1000.0
    rgb = colorsys.hls_to_rgb((hue + int(spread * jitter)) / 360.0, 0.60 + 0.10 * jitter, 0.70 + 0.20 * jitter)
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb)


def merged_tree(profile: "Profile") -> _Node:
    """The call paths of the tracer's aggregates, merged by label (name and location)."""
    agg = profile.aggregates()
    root = _Node("all", "root")
    for thread, paths in zip(agg.threads, agg.paths):
        top = root.child(thread.label, "thread")
        nodes: List[_Node] = []
        for entry in paths:
            func = entry.function
            parent = top if entry.parent < 0 else nodes[entry.parent]
            node = parent.child(func.label, func.kind)
            node.ns += entry.total_ns
            nodes.append(node)
        top.ns = sum(child.ns for child in top.children.values())
    root.ns = sum(child.ns for child in root.children.values())
    return root


def flame_title(profile: "Profile", title: Optional[str] = None) -> str:
    """The flame graph's title, saying how many events a bounded run dropped."""
    title = title or "framehook-profiler flame graph"
    dropped = profile.aggregates().dropped
    if dropped:  # (the widths include them: the aggregates are exact)
        title += f" ({dropped} events dropped by {profile.dropped_by}, included here)"
    return title


def to_svg(profile: "Profile", title: Optional[str] = None) -> str:
    return render_svg(merged_tree(profile), flame_title(profile, title))


def render_svg(root: _Node, title: str) -> str:
    """The flame graph of a merged tree (a profile's, or several processes')."""
    depth = 0
    rows: List[tuple] = []  # (x, depth, width, node)
    scale = (WIDTH - 2 * PAD) / root.ns if root.ns else 0.0
    stack = [(root, PAD + 0.0, 0)]
    while stack:
        node, x, level = stack.pop()
        width = node.ns * scale
        if width < 0.1 and node is not root:
            continue
        rows.append((x, level, width, node))
        depth = max(depth, level)
        offset = x
        for child in sorted(node.children.values(), key=lambda n: n.name):
            stack.append((child, offset, level + 1))
            offset += child.ns * scale
    height = (depth + 1) * ROW + 3 * PAD + FONT * 2
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="monospace" '
        f'font-size="{FONT}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#fdfdf8"/>',
        f'<text x="{WIDTH // 2}" y="{PAD + FONT}" text-anchor="middle" font-size="{FONT + 3}">{escape(title)}</text>',
    ]
    base = height - PAD
    total = root.ns or 1
    for x, level, width, node in rows:
        y = base - (level + 1) * ROW
        pct = 100.0 * node.ns / total
        tip = f"{node.name}: {node.ns / 1e6:.3f} ms ({pct:.2f}%)"
        out.append(f'<g class="frame"><title>{escape(tip)}</title>')
        out.append(
            f'<rect x="{x:.2f}" y="{y}" width="{width:.2f}" height="{ROW - 1}" '
            f'fill="{_color(node.kind, node.name)}" rx="2"/>'
        )
        chars = int(width // (FONT * 0.62))
        if chars >= 3:
            text = node.name if len(node.name) <= chars else node.name[: chars - 2] + ".."
            out.append(f'<text x="{x + 3:.2f}" y="{y + ROW - 5}">{escape(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
