"""``debug.dump(fn, directory)``: what the translator compiled for ``fn``, as Python files.

    step(x, 0.1)                                  # step is decorated with optimize(...)
    paths = framehook.translator.debug.dump(step, "/tmp/step-dump")

For every cache entry of ``fn`` (most recent first) it writes:

* ``entry<i>_graph<j>.py``: the captured graph, listed node by node in comments, followed by
  its generated function ``forward`` as a runnable module: the numpy functions and other
  objects it uses are imported or loaded at the top (constants that have no source form are
  pickled next to it in ``entry<i>_graph<j>_constants.pkl``), so ``import`` it, or open it in
  a debugger and step through ``forward``;
* ``entry<i>_guards.py``: the guards as readable conditions, and the generated check function;
* ``entry<i>_generated.py``: the function that replaced ``fn``'s body, as Python
  (``decompiler/render.py``): the graph call, the values rebuilt after it, the side effects
  replayed, the instructions that broke and the call of the resume function decompiled
  from the bytecode; a statement run as in the original (a break inside a loop or a try
  block) as the user's own lines. The header says whether it is exact (then running it
  does what the bytecode does) and which names to bind to run it; the bytecode is listed
  below it;
* ``resume<k>_code.py``: each resume function (where the generated code continues after a
  graph break) as Python: its arguments, then the rest of ``fn`` from the break on, as the
  user's lines (or decompiled, where the break is inside an expression);
* the same files as for ``fn``, prefixed ``resume<k>_``, for each resume function that has
  compiled entries of its own;
* ``index.txt``: the files written, per code object and entry.

Rendered code is exact, or says in comments from which point it is not rendered, why, and
which lines of the original that part comes from. ``load_function(path, namespace)``
returns a rendered function with the names its header lists bound (graphs via
``load_graph``, resume functions from their files, objects imported or unpickled);
``fn`` must have run under ``optimize`` first (``dump`` reads the cache; it compiles nothing).
"""

from __future__ import annotations

import builtins
import dis
import importlib
import importlib.util
import inspect
import io
import os
import pickle
import re
import sys
import types
from typing import Any, Dict, List, Optional, Tuple

from ._runtime import runtime
from .bytecode import decode, prefix_length
from .decompiler.decompile import decompile
from .decompiler.render import Rendered, render_code, signature_text

__all__ = ["dump", "load_graph", "load_function", "graph_module_source", "generated_source"]


def _code_of(fn: Any) -> types.CodeType:
    from .eval_frame import _code_of as code_of

    code = code_of(fn)
    if code is None:
        raise TypeError(f"debug.dump: cannot find the code object of {fn!r:.80}")
    return code


def _importable(obj: Any) -> Optional[str]:
    """``module.attr.attr`` naming ``obj`` when importing it gives the very same object."""
    from .graph.ir import target_name

    candidates = []
    if isinstance(obj, types.ModuleType):
        candidates.append(obj.__name__)
    if hasattr(obj, "__name__"):
        candidates.append(target_name(obj))
        module = getattr(obj, "__module__", None)
        qual = getattr(obj, "__qualname__", None)
        if isinstance(module, str) and isinstance(qual, str):
            candidates.append(f"{module}.{qual}")
    for path in candidates:
        if "." not in path and not isinstance(obj, types.ModuleType):
            path = f"builtins.{path}"
        try:
            if _load(path) is obj:
                return path
        except Exception:
            continue
    return None


def _load(path: str) -> Any:
    """Import ``a.b.c``: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"cannot import {path}")


# the dumped module carries its own copy of ``_load`` (it must import without framehook)
_PREAMBLE = "import importlib\nimport os\nimport pickle\nfrom typing import Any\n\n\n" + inspect.getsource(_load) + "\n"


def graph_module_source(graph: Any, constants_file: Optional[str] = None) -> Tuple[str, Dict[str, Any]]:
    """A runnable module defining the graph's ``forward``, and the constants to pickle for it."""
    forward = graph.forward
    source = getattr(forward, "graph_source", None) or graph.python_code()
    bound = {
        name: value
        for name, value in forward.__globals__.items()
        if name.startswith("__") and not name.endswith("__") and re.search(rf"\b{re.escape(name)}\b", source)
    }
    lines = [f"# framehook: captured graph {graph.name}", "#"]
    lines += [f"# {line}" for line in str(graph).splitlines()]
    lines += ["", _PREAMBLE]
    pickled: Dict[str, Any] = {}
    for name, value in sorted(bound.items()):
        path = _importable(value)
        if path is not None:
            lines.append(f"{name} = _load({path!r})")
            continue
        try:
            pickle.dumps(value)
        except Exception:
            lines.append(f"{name} = None  # not reproducible outside the process: {_short(value)}")
            continue
        pickled[name] = value
    if pickled:
        where = repr(os.path.basename(constants_file or "constants.pkl"))
        lines.append(f"with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), {where}), 'rb') as _f:")
        lines.append("    _constants = pickle.load(_f)")
        for name in sorted(pickled):
            lines.append(f"{name} = _constants[{name!r}]  # {_short(pickled[name])}")
    lines += ["", "", source.rstrip(), ""]
    return "\n".join(lines), pickled


def _short(value: Any) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 70 else text[:67] + "..."


def generated_source(code: types.CodeType, names: Optional[Dict[int, str]] = None) -> Optional[str]:
    """``code`` decompiled as a whole (``def f(args): ...``) when every path through it is
    straight-line code ending in ``return`` or ``raise``, otherwise None. ``names`` maps the
    id of a callable constant (a compiled graph) to the name to call it by (new ones become
    ``compiled_<n>``); other constants without a literal form make it None."""
    names = names if names is not None else {}

    def const_name(value: Any) -> str:
        if callable(value) and not isinstance(value, type):
            return names.setdefault(id(value), f"compiled_{len(names)}")
        raise ValueError("no name")

    insts = decode(code)
    try:
        d = decompile(insts, prefix_length(insts), const_name=const_name, consts=code.co_consts)
    except ValueError:  # pragma: no cover - decompile reports problems in its result
        return None
    if not d.complete:
        return None
    stores = sorted(d.global_stores)
    head = f"def {code.co_name}({signature_text(code)}):\n"
    if stores:
        head += f"    global {', '.join(stores)}\n"
    return head + d.text()


_signature_text = signature_text


def _dis_text(code: types.CodeType) -> str:
    buf = io.StringIO()
    dis.dis(code, file=buf)
    return buf.getvalue()


# ------------------------------------------------------------------ names rendered code uses
# objects a dumped file refers to that only this process has (load_function finds them here)
_LIVE: Dict[str, Any] = {}


class _Names:
    """The names rendered code gives the constants of a code object that are not literals,
    and how each is bound again (the ``# bind`` lines of the file's header)."""

    def __init__(self, dumper: "_Dumper", fixed: Dict[int, Tuple[str, str]], pickle_file: str) -> None:
        self.dumper = dumper
        self.fixed = fixed  # id -> (name, binding): graphs of this entry
        self.pickle_file = pickle_file
        self.by_id: Dict[int, str] = {}
        self.bindings: Dict[str, str] = {}
        self.values: Dict[str, Any] = {}

    def __call__(self, value: Any) -> str:
        name = self.by_id.get(id(value))
        if name is not None:
            return name
        fixed = self.fixed.get(id(value))
        if fixed is not None:
            name, binding = fixed
        else:
            resume = self.dumper.resume_binding(value)
            if resume is not None:
                name, binding = resume
            else:
                name = self._fresh(value)
                path = _importable(value)
                if path is not None:
                    binding = f"import {path}"
                elif _picklable(value):
                    binding = f"pickle {self.pickle_file} {name}"
                else:
                    token = f"{type(value).__name__}-{id(value):x}"
                    _LIVE[token] = value
                    binding = f"live {token} {_short(value)}"
        self.by_id[id(value)] = name
        self.bindings[name] = binding
        self.values[name] = value
        return name

    def _fresh(self, value: Any) -> str:
        base = getattr(value, "__name__", None) or type(value).__name__
        base = "___" + (re.sub(r"\W", "_", str(base)).strip("_") or "const")
        name, n = base, 1
        while name in self.bindings:
            n += 1
            name = f"{base}{n}"
        return name

    def used(self, text: str) -> List[Tuple[str, str]]:
        return [(n, b) for n, b in self.bindings.items() if re.search(rf"\b{re.escape(n)}\b", text)]


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


# ------------------------------------------------------------------ dump
class _Dumper:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.written: List[str] = []
        self.index: List[str] = []
        self.resume_ids: Dict[int, int] = {}  # id(resume code) -> k
        self.resumes: List[Tuple[int, types.CodeType, str]] = []  # (k, code, how it is called)
        self.pick_ids: Dict[int, int] = {}  # id(_ResumeUnbound) -> n
        self.keep: List[Any] = []

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.written.append(path)
        return name

    def write_pickle(self, name: str, pickled: Dict[str, Any]) -> None:
        path = os.path.join(self.directory, name)
        with open(path, "wb") as f:
            pickle.dump(pickled, f)
        self.written.append(path)

    def resume_number(self, code: types.CodeType) -> int:
        k = self.resume_ids.get(id(code))
        if k is None:
            k = self.resume_ids[id(code)] = len(self.resumes) + 1
            self.resumes.append((k, code, ""))
            self.keep.append(code)
        return k

    def resume_binding(self, value: Any) -> Optional[Tuple[str, str]]:
        """(name, binding) for a resume function, or for the object that picks one at run time."""
        from .symbolic.resume import _ResumeUnbound, _WithCells, is_resume_code

        if isinstance(value, types.FunctionType) and is_resume_code(value.__code__):
            k = self.resume_number(value.__code__)
            return f"___resume{k}", f"resume resume{k}_code.py"
        if isinstance(value, _WithCells):
            k = self.resume_number(value.code)
            return (
                f"___resume{k}",
                f"live {self._live(value)} resume{k}_code.py made around the caller's cells "
                f"(called with the tuple of cells first)",
            )
        if isinstance(value, _ResumeUnbound):
            made = [
                (key, fn)
                for key, fn in value.resume_cache.items()
                if isinstance(key, tuple) and key[0] == value.target and key[1] == ()
            ]
            picks = []
            for key, fn in made:
                code = fn.code if isinstance(fn, _WithCells) else getattr(fn, "__code__", None)
                if code is not None:
                    picks.append(f"resume{self.resume_number(code)} ({', '.join(key[2])})")
            k = self.pick_ids.setdefault(id(value), len(self.pick_ids) + 1)
            self.keep.append(value)
            maybe = ", ".join(value.maybe)
            return f"___resume_pick{k}", (
                f"live {self._live(value)} calls the resume function for the locals "
                f"bound in the calling frame (of {maybe}): " + (", ".join(picks) or "none made yet")
            )
        return None

    @staticmethod
    def _live(value: Any) -> str:
        token = f"{type(value).__name__}-{id(value):x}"
        _LIVE[token] = value
        return token

    def rendered_file(
        self, stem: str, title: List[str], code: types.CodeType, resume: bool, fixed: Dict[int, Tuple[str, str]]
    ) -> Tuple[str, Rendered]:
        names = _Names(self, fixed, f"{stem}_constants.pkl")
        try:
            rendered = render_code(code, names, resume)
        except Exception as e:  # noqa: BLE001 - the bytecode listing is still worth writing
            rendered = Rendered(
                f"def {code.co_name}({signature_text(code)}):\n    raise NotImplementedError("
                f"'framehook dump: not rendered as Python')\n",
                False,
                f"not rendered: {type(e).__name__}: {e}",
            )
        used = names.used(rendered.text)
        pickled = {n: names.values[n] for n, b in used if b.startswith("pickle ")}
        if pickled:
            self.write_pickle(f"{stem}_constants.pkl", pickled)
        lines = [f"# framehook: {t}" if i == 0 else f"# {t}" for i, t in enumerate(title)]
        if rendered.future:  # the module's, for the function to compile as it does there
            lines.append(f"from __future__ import {', '.join(rendered.future)}")
        lines.append("#")
        if rendered.exact:
            lines.append(f"# EXACT: running {code.co_name} below does what the bytecode does ({rendered.how}).")
        else:
            lines.append(f"# NOT EXACT: {rendered.how}.")
            lines.append("# What is rendered runs as the bytecode does; the rest is described in comments.")
        lines.append(
            "# It runs in the globals of the function's module (defaults are not rendered: pass every argument),"
        )
        if used:
            lines.append("# with these names bound (debug.load_function(path, namespace) binds them):")
            lines += [f"# bind {n}: {b}" for n, b in used]
        else:
            lines.append("# and needs no other names.")
        lines += ["", rendered.text.rstrip(), "", "", "# bytecode:"]
        lines += [f"# {line}" for line in _dis_text(code).splitlines()]
        return self.write(f"{stem}.py", "\n".join(lines) + "\n"), rendered

    # ---------------------------------------------------------------- one code object
    def dump_code(self, code: types.CodeType, prefix: str) -> None:
        entries = runtime.cache_entries(code)
        qualname = getattr(code, "co_qualname", code.co_name)
        where = f"{code.co_filename}:{code.co_firstlineno}"
        label = f"{prefix[:-1]}: " if prefix else ""
        self.index += [f"{label}framehook dump of {qualname} ({where}): {len(entries)} cache entries"]
        if prefix:
            k = int(prefix[len("resume") : -1])
            title = [
                f"resume function {k}: {qualname} ({where})",
                "the arguments are the values on the stack at the break (___stack<n>) and the live locals",
            ]
            name, rendered = self.rendered_file(f"resume{k}_code", title, code, True, {})
            self.index.append(f"  code: {name} ({'exact' if rendered.exact else 'not exact'})")
        self.index.append("")
        for i, entry in enumerate(entries):
            self.dump_entry(code, prefix, qualname, i, entry)
        self.index.append("")

    def dump_entry(self, code: types.CodeType, prefix: str, qualname: str, i: int, entry: Any) -> None:
        check_fn = entry.check_fn
        compile_id = getattr(check_fn, "compile_id", "?")
        self.index.append(f"entry {i} [compile {compile_id}], {entry.hits} hits:")
        fixed: Dict[int, Tuple[str, str]] = {}
        for j, graph in enumerate(getattr(check_fn, "framehook_graphs", None) or []):
            if not hasattr(graph, "python_code"):
                continue  # the part-1 FrameGraph: nothing to dump
            base = f"{prefix}entry{i}_graph{j}"
            text, pickled = graph_module_source(graph, f"{base}_constants.pkl")
            if pickled:
                self.write_pickle(f"{base}_constants.pkl", pickled)
            self.index.append(f"  graph {j}: {self.write(base + '.py', text)}")
            compiled = (getattr(check_fn, "framehook_compiled_fns", None) or [None] * (j + 1))[j]
            fixed[id(compiled)] = (f"___{base}", f"graph {base}.py")
            backend_graph = getattr(compiled, "fused_graph", None)
            if backend_graph is not None:  # what the backend made of it (numexpr: fused kernels)
                text, pickled = graph_module_source(backend_graph, f"{base}_backend_constants.pkl")
                if pickled:
                    self.write_pickle(f"{base}_backend_constants.pkl", pickled)
                self.index.append(f"  graph {j} as compiled by the backend: {self.write(base + '_backend.py', text)}")
                fixed[id(compiled)] = (f"___{base}_backend", f"graph {base}_backend.py")
        guards = getattr(check_fn, "code_parts", None) or []
        lines = [
            f"# framehook: guards of cache entry {i} of {qualname} [compile {compile_id}]",
            "# the entry runs when every condition holds (L: the frame's arguments, G: its globals):",
            "#",
        ]
        lines += [f"#   {g}" for g in guards]
        source = getattr(check_fn, "source", None)
        if source:
            lines += [
                "",
                "# the generated check function (___make_check_fn binds G and the guarded objects):",
                "",
                source.rstrip(),
            ]
        self.index.append(f"  guards: {self.write(f'{prefix}entry{i}_guards.py', chr(10).join(lines) + chr(10))}")
        generated = getattr(check_fn, "framehook_generated_code", None)
        original = getattr(check_fn, "framehook_original_code", None)
        runs_original = generated is not None and generated is original
        for c in entry.code.co_consts:  # resume functions in the order the code holds them
            self.resume_binding(c)
        title = [
            f"the code that replaced the body of {qualname} in cache entry {i} [compile {compile_id}]",
            f"({code.co_filename}:{code.co_firstlineno})",
        ]
        if runs_original:
            title[0] = f"cache entry {i} of {qualname} [compile {compile_id}] runs its original code, guarded"
        name, rendered = self.rendered_file(f"{prefix}entry{i}_generated", title, entry.code, runs_original, fixed)
        self.index.append(f"  generated: {name} ({'exact' if rendered.exact else 'not exact'})")


def dump(fn: Any, directory: str) -> List[str]:
    """Write what the translator compiled for ``fn`` into ``directory`` (created if needed);
    returns the paths written. Every resume function the generated code calls is written as
    ``resume<k>_code.py``, with its own compiled entries (if it has run) prefixed
    ``resume<k>_``. Raises ValueError when ``fn`` has no compiled entry."""
    code = _code_of(fn)
    qualname = getattr(code, "co_qualname", code.co_name)
    if not runtime.cache_entries(code):
        raise ValueError(f"debug.dump: {qualname} has no compiled entry; call it under optimize(...) first")
    os.makedirs(directory, exist_ok=True)
    dumper = _Dumper(directory)
    dumper.dump_code(code, "")
    done = 0
    while done < len(dumper.resumes):
        k, resume_code, _ = dumper.resumes[done]
        done += 1
        dumper.dump_code(resume_code, f"resume{k}_")
    path = os.path.join(directory, "index.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(dumper.index).rstrip("\n") + "\n")
    dumper.written.append(path)
    return dumper.written


def _called_codes(code: types.CodeType) -> List[types.CodeType]:
    """Code objects of the plain functions a generated code object holds as constants."""
    return [c.__code__ for c in code.co_consts if isinstance(c, types.FunctionType) and not hasattr(c, "graph_source")]


# ------------------------------------------------------------------ loading dumped files
def load_graph(path: str) -> Any:
    """Import a dumped ``entry<i>_graph<j>.py`` and return its ``forward``."""
    name = f"framehook_dump_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module.forward


_BIND = re.compile(r"^# bind (\w+): (\w+) ?(.*)$", re.M)


def load_function(
    path: str, namespace: Optional[Dict[str, Any]] = None, live: Optional[Dict[str, Any]] = None
) -> types.FunctionType:
    """The function a dumped ``entry<i>_generated.py`` or ``resume<k>_code.py`` defines,
    with ``namespace`` as its globals (pass the module's globals, or a copy, for the code
    to read and assign the globals it uses; a new dict by default). The names the file's
    ``# bind`` lines list are set in ``namespace`` first: compiled graphs (``load_graph``),
    resume functions (``load_function`` of their file, in the same namespace), importable
    objects, pickled constants, and objects only the dumping process has (found while it
    runs, or given in ``live`` by name)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_function: path must be a file path, not {type(path).__name__}")
    namespace = {} if namespace is None else namespace
    if not isinstance(namespace, dict):
        raise TypeError(f"load_function: namespace must be a dict, not {type(namespace).__name__}")
    namespace.setdefault("__builtins__", builtins)
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    where = os.path.dirname(os.path.abspath(path))
    for name, kind, detail in _BIND.findall(text):
        if kind == "graph":
            namespace[name] = load_graph(os.path.join(where, detail))
        elif kind == "resume":
            namespace[name] = load_function(os.path.join(where, detail), namespace, live)
        elif kind == "import":
            namespace[name] = _load(detail)
        elif kind == "pickle":
            file, key = detail.split(" ", 1)
            with open(os.path.join(where, file), "rb") as f:
                namespace[name] = pickle.load(f)[key]
        elif kind == "live":
            token = detail.split(" ", 1)[0]
            if live is not None and name in live:
                namespace[name] = live[name]
            elif token in _LIVE:
                namespace[name] = _LIVE[token]
            else:
                raise LookupError(
                    f"load_function: {name} ({detail}) exists only in the process that dumped "
                    f"{os.path.basename(path)}; pass it in live={{{name!r}: ...}}"
                )
        else:
            raise ValueError(f"load_function: {path} binds {name} as {kind!r}, which is unknown")
    module = compile(text, path, "exec", dont_inherit=True)
    code = next((c for c in module.co_consts if isinstance(c, types.CodeType)), None)
    if code is None:
        raise ValueError(f"load_function: {path} defines no function")
    return types.FunctionType(code, namespace, code.co_name)
