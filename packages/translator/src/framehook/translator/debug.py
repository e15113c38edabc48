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
* ``entry<i>_generated.py``: the function that replaced ``fn``'s body (rebuilt as Python from
  its bytecode, with the bytecode listed below it);
* ``index.txt``: the files written, per entry;
* the same, prefixed ``resume<n>_``, for each resume function (where the generated code
  continues after a graph break) that has compiled entries of its own.

``fn`` must have run under ``optimize`` first (``dump`` reads the cache; it compiles nothing).
``load_graph(path)`` imports a dumped graph file and returns its ``forward``.
"""
from __future__ import annotations

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

__all__ = ["dump", "load_graph", "graph_module_source", "generated_source"]


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
    bound = {name: value for name, value in forward.__globals__.items()
             if name.startswith("__") and not name.endswith("__") and re.search(rf"\b{re.escape(name)}\b", source)}
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


_SKIP = {"RESUME", "NOP", "COPY_FREE_VARS", "MAKE_CELL", "PUSH_NULL", "PRECALL", "CACHE", "EXTENDED_ARG"}


def generated_source(code: types.CodeType, names: Optional[Dict[int, str]] = None) -> Optional[str]:
    """The replacement code rebuilt as Python (``def f(args): return compiled(...)``), or None
    when it holds instructions this small decompiler does not know."""
    names = names if names is not None else {}
    stack: List[str] = []
    body: List[str] = []
    for inst in dis.get_instructions(code):
        op = inst.opname
        if op in _SKIP:
            continue
        if op == "LOAD_CONST":
            value = inst.argval
            if callable(value) and not isinstance(value, type):
                stack.append(names.setdefault(id(value), f"compiled_{len(names)}"))
            else:
                stack.append(repr(value))
        elif op in ("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK", "LOAD_GLOBAL"):
            stack.append(str(inst.argval))
        elif op == "LOAD_FAST_LOAD_FAST":
            stack.extend(str(v) for v in inst.argval)
        elif op in ("LOAD_ATTR", "LOAD_METHOD"):
            stack.append(f"{stack.pop()}.{inst.argval}")
        elif op == "BINARY_SUBSCR":
            key = stack.pop()
            stack.append(f"{stack.pop()}[{key}]")
        elif op in ("BUILD_TUPLE", "BUILD_LIST"):
            items = [stack.pop() for _ in range(inst.arg or 0)][::-1]
            open_, close = ("(", ",)" if len(items) == 1 else ")") if op == "BUILD_TUPLE" else ("[", "]")
            stack.append(open_ + ", ".join(items) + close)
        elif op in ("CALL", "CALL_FUNCTION", "CALL_METHOD"):
            args = [stack.pop() for _ in range(inst.arg or 0)][::-1]
            stack.append(f"{stack.pop()}({', '.join(args)})")
        elif op == "RETURN_VALUE":
            body.append(f"return {stack.pop()}")
            break
        elif op == "RETURN_CONST":
            body.append(f"return {inst.argval!r}")
            break
        else:
            return None
    if not body:
        return None
    signature = _signature_text(code)
    return f"def {code.co_name}({signature}):\n    " + "\n    ".join(body) + "\n"


def _signature_text(code: types.CodeType) -> str:
    n = code.co_argcount
    params = list(code.co_varnames[:n])
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    i = n
    if code.co_flags & 0x04:  # CO_VARARGS
        params.append("*" + code.co_varnames[n + code.co_kwonlyargcount])
    elif code.co_kwonlyargcount:
        params.append("*")
    params += list(code.co_varnames[i:i + code.co_kwonlyargcount])
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        params.append("**" + code.co_varnames[n + code.co_kwonlyargcount + bool(code.co_flags & 0x04)])
    return ", ".join(params)


def _dis_text(code: types.CodeType) -> str:
    buf = io.StringIO()
    dis.dis(code, file=buf)
    return buf.getvalue()


def dump(fn: Any, directory: str) -> List[str]:
    """Write what the translator compiled for ``fn`` into ``directory`` (created if needed);
    returns the paths written. Functions the generated code continues in after a graph break
    (resume functions) that have compiled entries of their own are written too, with the
    prefix ``resume<n>_``. Raises ValueError when ``fn`` has no compiled entry."""
    code = _code_of(fn)
    qualname = getattr(code, "co_qualname", code.co_name)
    if not runtime.cache_entries(code):
        raise ValueError(f"debug.dump: {qualname} has no compiled entry; call it under optimize(...) first")
    os.makedirs(directory, exist_ok=True)
    written: List[str] = []
    index: List[str] = []
    pending: List[Tuple[types.CodeType, str]] = [(code, "")]
    seen = {id(code)}
    while pending:
        current, prefix = pending.pop(0)
        for found in _dump_code(current, prefix, directory, written, index):
            if id(found) not in seen and runtime.cache_entries(found):
                seen.add(id(found))
                pending.append((found, f"resume{len(seen) - 1}_"))
    path = os.path.join(directory, "index.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(index) + "\n")
    written.append(path)
    return written


def _called_codes(code: types.CodeType) -> List[types.CodeType]:
    """Code objects of the plain functions a generated code object holds as constants."""
    return [c.__code__ for c in code.co_consts
            if isinstance(c, types.FunctionType) and not hasattr(c, "graph_source")]


def _dump_code(code: types.CodeType, prefix: str, directory: str, written: List[str],
               index: List[str]) -> List[types.CodeType]:
    entries = runtime.cache_entries(code)
    qualname = getattr(code, "co_qualname", code.co_name)
    index += [f"{prefix[:-1] + ': ' if prefix else ''}framehook dump of {qualname} ({code.co_filename}:{code.co_firstlineno}): "
              f"{len(entries)} cache entries", ""]
    called: List[types.CodeType] = []

    def write(name: str, text: str) -> str:
        path = os.path.join(directory, prefix + name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
        return prefix + name

    def write_pickle(name: str, pickled: Dict[str, Any]) -> None:
        path = os.path.join(directory, prefix + name)
        with open(path, "wb") as f:
            pickle.dump(pickled, f)
        written.append(path)

    for i, entry in enumerate(entries):
        check_fn = entry.check_fn
        compile_id = getattr(check_fn, "compile_id", "?")
        index.append(f"entry {i} [compile {compile_id}], {entry.hits} hits:")
        names: Dict[int, str] = {}
        for j, graph in enumerate(getattr(check_fn, "framehook_graphs", None) or []):
            if not hasattr(graph, "python_code"):
                continue  # the part-1 FrameGraph: nothing to dump
            base = f"entry{i}_graph{j}"
            text, pickled = graph_module_source(graph, f"{prefix}{base}_constants.pkl")
            if pickled:
                write_pickle(f"{base}_constants.pkl", pickled)
            index.append(f"  graph {j}: {write(base + '.py', text)}")
            compiled = (getattr(check_fn, "framehook_compiled_fns", None) or [None] * (j + 1))[j]
            names[id(compiled)] = f"{prefix}{base}.forward"
            backend_graph = getattr(compiled, "fused_graph", None)
            if backend_graph is not None:  # what the backend made of it (numexpr: fused kernels)
                text, pickled = graph_module_source(backend_graph, f"{prefix}{base}_backend_constants.pkl")
                if pickled:
                    write_pickle(f"{base}_backend_constants.pkl", pickled)
                index.append(f"  graph {j} as compiled by the backend: {write(base + '_backend.py', text)}")
                names[id(compiled)] = f"{prefix}{base}_backend.forward"
        guards = getattr(check_fn, "code_parts", None) or []
        text = [f"# framehook: guards of cache entry {i} of {qualname} [compile {compile_id}]",
                "# the entry runs when every condition holds (L: the frame's arguments, G: its globals):", "#"]
        text += [f"#   {g}" for g in guards]
        source = getattr(check_fn, "source", None)
        if source:
            text += ["", "# the generated check function (___make_check_fn binds G and the guarded objects):",
                     "", source.rstrip()]
        index.append(f"  guards: {write(f'entry{i}_guards.py', chr(10).join(text) + chr(10))}")
        rebuilt = generated_source(entry.code, names)
        text = [f"# framehook: the code that replaced the body of {qualname} in cache entry {i}",
                "# (compiled_N / entry<i>_graph<j>.forward: the compiled graph it calls)", ""]
        text.append(rebuilt if rebuilt is not None else "# (not rebuilt as Python: see the bytecode below)\n")
        text += ["", "# bytecode:"] + [f"# {line}" for line in _dis_text(entry.code).splitlines()]
        index.append(f"  generated: {write(f'entry{i}_generated.py', chr(10).join(text) + chr(10))}")
        called += _called_codes(entry.code)
    index.append("")
    return called


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
