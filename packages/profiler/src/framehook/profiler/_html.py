"""A self-contained HTML flame graph: one file, no network, that any browser opens offline.

The merged call paths (the flame graph's, written by the tracer from its exact per-path
aggregates: _folded.py) are embedded as JSON, and a short script draws them as an icicle
(callers above callees): click a frame to zoom to it, click the top bar to zoom out, hover
for its time and share, and search to highlight the frames whose name matches, with the
share they cover.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any, BinaryIO, List, Optional
from xml.sax.saxutils import escape

from ._flamegraph import _color, _Node, flame_title
from ._folded import FLAME, write_folded

if TYPE_CHECKING:
    from ._profile import Profile


def _nested(node: _Node) -> List[Any]:
    """[name, kind, ns, colour, children] for a node and everything under it, widest first."""
    children = sorted(node.children.values(), key=lambda n: (-n.ns, n.name))
    return [node.name, node.kind, node.ns, _color(node.kind, node.name), [_nested(c) for c in children if c.ns > 0]]


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font: 12px monospace; margin: 8px; background: #fdfdf8; color: #222; }}
h1 {{ font-size: 15px; margin: 4px 0; }}
#bar {{ margin: 6px 0; }}
#status {{ min-height: 1.4em; white-space: pre; }}
svg text {{ pointer-events: none; font: 11px monospace; }}
svg rect {{ stroke: #fdfdf8; stroke-width: 0.5; cursor: pointer; }}
svg rect.hit {{ fill: #e040a0 !important; }}
</style>
</head>
<body>
<h1>{title}</h1>
<div id="bar">search: <input id="search" size="30"> <span id="matched"></span>
<button id="reset">reset zoom</button></div>
<div id="status">click a frame to zoom to it, the top frame to zoom out</div>
<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="100%"></svg>
<script id="data" type="application/json">{data}</script>
<script>
"use strict";
const ROOT = JSON.parse(document.getElementById("data").textContent);
const ROW = 17, NS = "http://www.w3.org/2000/svg";
const svg = document.getElementById("graph"), statusLine = document.getElementById("status");
let zoomed = ROOT, term = "";
const ms = ns => (ns / 1e6).toFixed(3) + " ms";
const pct = (a, b) => (b ? 100 * a / b : 0).toFixed(2) + "%";
function path(node, target, trail) {{
  if (node === target) return trail.concat([node]);
  for (const child of node[4]) {{
    const found = path(child, target, trail.concat([node]));
    if (found) return found;
  }}
  return null;
}}
function draw() {{
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const width = svg.clientWidth || 1200, ancestors = path(ROOT, zoomed, []);
  let rows = 0, matched = 0;
  function box(node, x, w, level) {{
    const g = document.createElementNS(NS, "g"), r = document.createElementNS(NS, "rect");
    r.setAttribute("x", x); r.setAttribute("y", level * ROW);
    r.setAttribute("width", Math.max(w - 0.5, 0.5)); r.setAttribute("height", ROW - 1);
    r.setAttribute("fill", node[3]);
    if (term && node[0].includes(term)) r.setAttribute("class", "hit");
    r.addEventListener("click", () => {{ zoomed = node === zoomed ? (ancestors[ancestors.length - 2] || ROOT) : node; draw(); }});
    r.addEventListener("mouseover", () => {{
      statusLine.textContent = node[0] + "  " + ms(node[2]) + "  " + pct(node[2], ROOT[2]) + " of all, " + pct(node[2], zoomed[2]) + " of the zoomed frame";
    }});
    g.appendChild(r);
    const chars = Math.floor((w - 6) / 6.7);
    if (chars >= 3) {{
      const t = document.createElementNS(NS, "text");
      t.setAttribute("x", x + 3); t.setAttribute("y", level * ROW + ROW - 5);
      t.textContent = node[0].length <= chars ? node[0] : node[0].slice(0, chars - 2) + "..";
      g.appendChild(t);
    }}
    svg.appendChild(g);
    rows = Math.max(rows, level + 1);
  }}
  ancestors.slice(0, -1).forEach((node, level) => box(node, 0, width, level));
  const top = ancestors.length - 1;
  (function walk(node, x, w, level, counted) {{
    const hit = term && node[0].includes(term);
    if (hit && !counted) matched += node[2];
    box(node, x, w, level);
    let offset = x;
    for (const child of node[4]) {{
      const cw = node[2] ? w * child[2] / node[2] : 0;
      if (cw >= 0.3) walk(child, offset, cw, level + 1, counted || hit);
      offset += cw;
    }}
  }})(zoomed, 0, width, top, false);
  svg.setAttribute("height", rows * ROW);
  document.getElementById("matched").textContent = term ? "matched " + pct(matched, zoomed[2]) + " of the zoomed frame" : "";
}}
document.getElementById("search").addEventListener("input", e => {{ term = e.target.value; draw(); }});
document.getElementById("reset").addEventListener("click", () => {{ zoomed = ROOT; draw(); }});
window.addEventListener("resize", draw);
draw();
</script>
</body>
</html>
"""


def _halves(title: str) -> List[bytes]:
    """The page before and after its data."""
    head, tail = _PAGE.split("{data}")
    return [half.format(title=escape(title)).encode() for half in (head, tail)]


def render_html(root: _Node, title: str) -> str:
    """The page of a merged tree (several processes', merged from their parts)."""
    # "</" would end the script element early: JSON allows "<\\/" for it
    data = json.dumps(_nested(root), separators=(",", ":")).replace("</", "<\\/")
    head, tail = _halves(title)
    return head.decode() + data + tail.decode()


def write_html(profile: "Profile", out: BinaryIO, title: Optional[str] = None) -> None:
    """The page of a profile, its tree written by the tracer."""
    head, tail = _halves(flame_title(profile, title))
    out.write(head)
    if not write_folded(profile, out.write, FLAME, str):
        out.write(json.dumps(_nested(_Node("all", "root")), separators=(",", ":")).encode())
    out.write(tail)


def to_html(profile: "Profile", title: Optional[str] = None) -> str:
    buffer = io.BytesIO()
    write_html(profile, buffer, title)
    return buffer.getvalue().decode()
