"""What a replay binds and imports, worked out from the record before anything runs.

The rule (FORMAT.md, "Which names replay binds"): replay runs the code the record shows
and gives its names only the meanings the record shows.

* A ``builtins`` entry may only name the builtin of that name (``builtins.len`` for
  ``len``) or be a placeholder; ``check_builtins`` refuses anything else at load time.
* A recorded global is decoded, and so may import a module, only when the code names it:
  the ``co_names`` of the function's code, of the code nested in it, and of every
  same-file function the decoded values rebuild from the recorded source. The others are
  ignored and listed.
* Every module the decoded values import and every name bound to another module's
  object is listed in the ``ReplayPlan``, which replay hands to its ``show`` callback
  before it decodes or runs anything, and keeps in ``ReplayResult.plan``.

Nothing here imports, compiles or calls anything named by the record.
"""

from __future__ import annotations

import builtins
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import UnsafeBindingError

# Where a value tree sits in the record, as shown to a reader.
_Tree = Any


@dataclass
class ReplayPlan:
    """What replaying a record will import and bind, known before anything runs.

    ``imports``: modules the decoded values import (sorted, each once);
    ``bindings``: ``"name -> module.qualname"`` lines, one per reference to another
    module's object in the decoded values (builtins of their own name left out);
    ``ignored_globals``: recorded globals the code never names, so never decoded;
    ``globals_used``: the recorded globals that are decoded and bound;
    ``values``: how many tagged value nodes replay decodes per mode.
    """

    imports: list[str] = field(default_factory=list)
    bindings: list[str] = field(default_factory=list)
    ignored_globals: list[str] = field(default_factory=list)
    globals_used: list[str] = field(default_factory=list)
    values: int = 0

    def lines(self) -> list[str]:
        """The plan as text, one fact a line (the CLI prints these under ``-v``)."""
        out = [f"imports: {', '.join(self.imports) or 'nothing'}"]
        out += [f"binds {b}" for b in self.bindings]
        if self.ignored_globals:
            shown = ", ".join(self.ignored_globals[:10])
            more = f" and {len(self.ignored_globals) - 10} more" if len(self.ignored_globals) > 10 else ""
            out.append(f"ignores globals the code never names: {shown}{more}")
        return out


def _names_the_builtin(name: str, module: object, qualname: object) -> bool:
    """Whether ``module.qualname`` is, in this process, the builtin ``name`` itself (records
    made before builtins were written as ``builtins.NAME`` say ``io.open`` for ``open``).
    Looked up in modules already imported, through their ``__dict__``: imports nothing
    and runs no module ``__getattr__``."""
    if not isinstance(module, str) or not isinstance(qualname, str):
        return False
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        namespace = getattr(target, "__dict__", None)
        if not isinstance(namespace, dict) or part not in namespace:
            return False
        target = namespace[part]
    return target is getattr(builtins, name, object())


def check_builtins(builtins_section: dict, path: str | None) -> None:
    """Refuse a builtins entry that names anything but the builtin of its own name."""
    for name, tree in builtins_section.items():
        if isinstance(tree, dict) and tree.get("t") == "missing":
            continue
        if isinstance(tree, dict) and tree.get("t") == "global":
            if (tree.get("module"), tree.get("qualname")) == ("builtins", name):
                continue
            if _names_the_builtin(name, tree.get("module"), tree.get("qualname")):
                continue
        raise UnsafeBindingError(
            f"builtins[{name!r}]: may only name the builtin {name} (builtins.{name}), got {_describe(tree)}", path
        )


def _describe(tree: _Tree) -> str:
    if isinstance(tree, dict):
        tag = tree.get("t")
        if tag == "global":
            return f"{tree.get('module')}.{tree.get('qualname')}"
        if tag == "module":
            return f"module {tree.get('name')}"
        return f"a {tag} value"
    return f"a {type(tree).__name__} value"


def names_of(code: types.CodeType) -> set[str]:
    """Every global or attribute name the code, and the code nested in it, mentions."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= names_of(const)
    return names


_CONTAINERS = frozenset({"tuple", "list", "set", "frozenset"})


class _Survey:
    """What one value tree holds, from a single pass over it: its node count, its
    ``function`` nodes and its references to modules and their objects."""

    __slots__ = ("count", "functions", "references", "numpy")

    def __init__(self, tree: _Tree, where: str) -> None:
        self.count = 0
        self.functions: list[dict] = []
        self.references: list[tuple[str, dict]] = []
        self.numpy = False
        stack = [tree]
        at, inside = where, f"{where} (inside)"  # the root by its name, the rest inside it
        while stack:
            node = stack.pop()
            if type(node) is not dict:
                continue
            self.count += 1
            tag = node["t"]
            if tag in _CONTAINERS:
                stack.extend(node["items"])
            elif tag == "dict":
                for pair in node["items"]:
                    stack.extend(pair)
            elif tag in ("module", "global"):
                self.references.append((at, node))
            elif tag == "function":
                self.functions.append(node)
                stack.append(node["defaults"])
                stack.append(node["kwdefaults"])
                stack.extend(value for _, value in node["closure"])
                # another module's globals: listed even if its code turns out not to use
                # them all (replay decodes only those it names), never fewer
                stack.extend(value for _, value in node.get("globals", ()))
            elif tag == "method":
                stack.append(node["self"])
            elif tag == "iterator":
                stack.append(node["items"])
            elif tag == "class":
                self.references.append((at, node))
                stack.extend(value for _, value in node["globals"])
                stack.extend(value for _, value in node.get("cells", ()))
                stack.append(node.get("bases"))
            elif tag == "object":
                stack.extend(node[key] for key in ("type", "args", "state", "listitems", "dictitems"))
            elif tag == "exception":
                stack.append(node["type"])
                stack.append(node["args"])
            elif tag == "namedtuple":
                stack.append(node["type"])
                stack.extend(node["items"])
            elif tag == "ext":
                stack.append(node["v"])
            elif tag in ("ndarray", "npscalar"):
                self.numpy = True
            at = inside


def plan(
    record: Any,
    code: types.CodeType,
    locate: Callable[[dict], "types.CodeType | None"],
) -> ReplayPlan:
    """The plan for replaying ``record`` with ``code``; ``locate`` finds the code of a
    ``function`` node in the recorded source (None when it is not there)."""
    names = names_of(code)
    fn = record.function
    roots = [
        _Survey(fn["defaults"], "function defaults"),
        _Survey(fn["kwdefaults"], "function keyword defaults"),
        *(_Survey(value, f"closure cell {var}") for var, value in fn["closure"]),
        _Survey(record.call["args"], "call arguments"),
        _Survey(record.call["kwargs"], "call keyword arguments"),
    ]
    surveys = roots + [_Survey(tree, name) for name, tree in record.builtins.items()]
    surveys += [_Survey(tree, f"{module}.{attr}") for module, attr, tree in record.patches]
    used: list[str] = []
    pending = list(roots)
    seen_functions: set[tuple] = set()
    while True:
        # names of same-file functions the values rebuild count as the code's own
        for survey in pending:
            for node in survey.functions:
                if node.get("module") is not None:
                    continue  # another module's function: its names are its own namespace's
                key = (node["qualname"], node["firstlineno"], node.get("src"))
                if key not in seen_functions:
                    seen_functions.add(key)
                    found = locate(node)
                    if found is not None:
                        names |= names_of(found)
        fresh = [n for n in record.globals if n in names and n not in used]
        if not fresh:
            break
        used += fresh
        pending = [_Survey(record.globals[n], n) for n in fresh]
        surveys += pending
    result = ReplayPlan(
        globals_used=[n for n in record.globals if n in used],
        ignored_globals=sorted(n for n in record.globals if n not in names),
    )
    imports: set[str] = set()
    for survey in surveys:
        result.values += survey.count
        if survey.numpy:
            imports.add("numpy")
        for at, node in survey.references:
            if node["t"] == "module":
                imports.add(node["name"])
                result.bindings.append(f"{at} -> module {node['name']}")
            elif node["t"] == "class":
                result.bindings.append(
                    f"{at} -> class {node['module']}.{node['qualname']}, made by running its recorded class statement"
                )
            else:
                imports.add(node["module"])
                if node["module"] != "builtins":
                    result.bindings.append(f"{at} -> {node['module']}.{node['qualname']}")
    for module, attr, _ in record.patches:
        imports.add(module)
        result.bindings.append(f"{module}.{attr} -> the recorded value, set for the call as the test had")
    imports.discard("builtins")
    result.imports = sorted(imports)
    return result
