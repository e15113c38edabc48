"""The translator package's layout (issue #33): few top-level modules, no import circles,
no import from a lower layer into a higher one, no very large modules.

The import graph is built with ``ast`` over every module of the package: imports inside
functions count, as do ``if TYPE_CHECKING:`` ones (a circle that only a type checker sees
is still a circle for a reader), relative imports are resolved, and a package
``__init__`` importing its own submodules is an edge like any other. ``from X import name``
is an edge to ``X.name`` when that is a module, to ``X`` otherwise.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

import pytest

import framehook.translator

PACKAGE = "framehook.translator"
PACKAGE_DIR = Path(framehook.translator.__file__).resolve().parent

MAX_TOP_LEVEL_MODULES = 12
MAX_MODULE_LINES = 800

# The layers, bottom first (the README's "Layout" section draws them): a module imports
# modules of its own layer and of the layers below. Each entry names a top-level module or
# subpackage by its name under the package ("" is the package's __init__).
LAYERS: Tuple[Tuple[str, ...], ...] = (
    ("bytecode", "config", "logs", "exc", "hooks"),
    ("graph", "decompiler"),
    ("_runtime",),  # hands the runtime's skip_code to graph code generation
    ("guards", "backends"),
    ("translation",),
    ("symbolic",),
    ("conversion",),
    ("", "eval_frame", "explaining", "exporting", "debug", "replay_mode"),
)


# ---------------------------------------------------------------------------------------
# the checker


def module_names(package_dir: Path, package: str) -> Dict[str, Path]:
    """Every module of the package: dotted name -> file (a package is its __init__.py)."""
    modules: Dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join([package, *parts])] = path
    return modules


def _is_package(name: str, modules: Dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _resolve(name: str, modules: Dict[str, Path], level: int, target: Optional[str]) -> str:
    """The absolute name of ``from <level dots><target> import ...`` inside module ``name``."""
    if level == 0:
        return target or ""
    base = name.split(".")
    if not _is_package(name, modules):
        base = base[:-1]  # a module's relative imports start from its package
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(name: str, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules that module ``name`` imports, anywhere in its body."""
    tree = ast.parse(modules[name].read_text(encoding="utf-8"), str(modules[name]))
    found: Set[str] = set()

    def add(dotted: str) -> None:
        # the longest prefix that is one of the package's modules
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in modules:
                if candidate != name:
                    found.add(candidate)
                return
            parts.pop()

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(name, modules, node.level, node.module)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                add(submodule if submodule in modules else source)
    return found


def import_graph(package_dir: Path, package: str) -> Dict[str, Set[str]]:
    modules = module_names(package_dir, package)
    return {name: imports_of(name, modules) for name in modules}


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (or a module importing
    itself), each sorted; found with Tarjan's algorithm, written iteratively."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    on_stack: Set[str] = set()
    stack: List[str] = []
    result: List[List[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: List[Tuple[str, Iterable[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in graph:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    result.append(sorted(component))
    return sorted(result)


def layer_of(module: str, package: str, layers: Tuple[Tuple[str, ...], ...]) -> Optional[int]:
    """The index in ``layers`` of the layer holding ``module`` (None: in no layer)."""
    head = module[len(package) + 1 :].split(".")[0] if module != package else ""
    for rank, names in enumerate(layers):
        if head in names:
            return rank
    return None


def layering_problems(package_dir: Path, package: str, layers: Tuple[Tuple[str, ...], ...]) -> List[str]:
    """Modules in no layer, and imports from a layer into a higher one."""
    graph = import_graph(package_dir, package)
    problems = [f"{m} is in no layer" for m in sorted(graph) if layer_of(m, package, layers) is None]
    for module in sorted(graph):
        rank = layer_of(module, package, layers)
        for imported in sorted(graph[module]):
            other = layer_of(imported, package, layers)
            if rank is not None and other is not None and other > rank:
                problems.append(f"{module} (layer {rank}) imports {imported} (layer {other})")
    return problems


def top_level_modules(package_dir: Path) -> List[str]:
    return sorted(p.name for p in package_dir.glob("*.py"))


def large_modules(package_dir: Path, package: str, limit: int) -> Dict[str, int]:
    sizes = {}
    for name, path in module_names(package_dir, package).items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            sizes[name] = lines
    return sizes


# ---------------------------------------------------------------------------------------
# the package


def test_top_level_has_few_modules():
    top = top_level_modules(PACKAGE_DIR)
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules at the top level: {top}"


def test_no_import_circles():
    found = circles(import_graph(PACKAGE_DIR, PACKAGE))
    assert not found, "import circles among translator modules:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_layers():
    problems = layering_problems(PACKAGE_DIR, PACKAGE, LAYERS)
    assert not problems, "lower layers importing higher ones:\n" + "\n".join(problems)


def test_no_large_modules():
    sizes = large_modules(PACKAGE_DIR, PACKAGE, MAX_MODULE_LINES)
    assert not sizes, f"modules over {MAX_MODULE_LINES} lines: {sizes}"


# ---------------------------------------------------------------------------------------
# the checker on a small package made for it: each check can fail


def _write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_checker_finds_circles(tmp_path):
    pkg = _write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from .b import x\n",
            "b.py": "def f():\n    from . import a  # inside a function: counts\n",
            "c.py": "import pkg.sub.d\n",
            "sub/__init__.py": "from .d import y\n",
            "sub/d.py": "from ..c import z\n",
            "sub/e.py": "from .. import a\n",  # one way only: no circle
            "tc.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .tc2 import q\n",
            "tc2.py": "from .tc import r\n",
        },
    )
    found = circles(import_graph(pkg, "pkg"))
    assert found == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub.d"], ["pkg.tc", "pkg.tc2"]]


def test_checker_counts_init_importing_its_submodules(tmp_path):
    pkg = _write(tmp_path, {"__init__.py": "from . import a\n", "a.py": "from . import helper\n", "helper.py": ""})
    assert circles(import_graph(pkg, "pkg")) == []
    (pkg / "helper.py").write_text("from pkg import something\n", encoding="utf-8")
    assert circles(import_graph(pkg, "pkg")) == [["pkg", "pkg.a", "pkg.helper"]]


def test_checker_resolves_relative_imports(tmp_path):
    pkg = _write(
        tmp_path,
        {
            "__init__.py": "",
            "top.py": "",
            "sub/__init__.py": "from . import inner\nfrom .. import top\n",
            "sub/inner.py": "from ..top import f\nfrom .sibling import g\nimport os\n",
            "sub/sibling.py": "",
        },
    )
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.sub"] == {"pkg.sub.inner", "pkg.top"}
    assert graph["pkg.sub.inner"] == {"pkg.top", "pkg.sub.sibling"}


def test_checker_finds_upward_imports(tmp_path):
    pkg = _write(
        tmp_path,
        {
            "__init__.py": "from . import top\n",
            "top.py": "from .low import x\n",
            "low/__init__.py": "",
            "low/a.py": "def f():\n    from ..top import y\n",
            "stray.py": "",
        },
    )
    layers = (("low",), ("", "top"))
    assert layering_problems(pkg, "pkg", layers) == [
        "pkg.stray is in no layer",
        "pkg.low.a (layer 0) imports pkg.top (layer 1)",
    ]
    assert layering_problems(pkg, "pkg", (("low", "top", "", "stray"),)) == []


def test_checker_counts_top_level_modules(tmp_path):
    pkg = _write(tmp_path, {f"m{i}.py": "" for i in range(MAX_TOP_LEVEL_MODULES + 1)})
    _write(tmp_path, {"sub/__init__.py": "", "sub/x.py": ""})
    assert len(top_level_modules(pkg)) == MAX_TOP_LEVEL_MODULES + 1


def test_checker_finds_large_modules(tmp_path):
    pkg = _write(tmp_path, {"__init__.py": "", "small.py": "x = 1\n" * 10, "sub/big.py": "x = 1\n" * 11})
    assert large_modules(pkg, "pkg", 10) == {"pkg.sub.big": 11}


if __name__ == "__main__":  # python test_layout.py: print the graph's circles
    for component in circles(import_graph(PACKAGE_DIR, PACKAGE)):
        print(" <-> ".join(component))
    sys.exit(pytest.main([__file__, "-q"]) if "--test" in sys.argv else 0)
