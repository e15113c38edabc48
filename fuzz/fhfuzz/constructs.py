"""The language constructs the fuzzer's programs use, found in a program's AST, and a table of
how often the grammar strategy generates each one on this interpreter.

    python -m fhfuzz.constructs --count 3000
"""

from __future__ import annotations

import argparse
import ast
import sys
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

#: construct name -> (the first CPython whose syntax has it, what it is)
CONSTRUCTS: Dict[str, Tuple[Tuple[int, int], str]] = {
    "arithmetic": ((3, 9), "+ - * / // % **"),
    "augmented_assign": ((3, 9), "x += ..."),
    "bitwise": ((3, 9), "& | ^"),
    "shift": ((3, 9), "<< >>"),
    "invert": ((3, 9), "~x"),
    "not": ((3, 9), "not x"),
    "unary_plus": ((3, 9), "+x"),
    "and": ((3, 9), "x and y"),
    "or": ((3, 9), "x or y"),
    "in": ((3, 9), "x in y, x not in y"),
    "is": ((3, 9), "x is y, x is not y"),
    "chained_comparison": ((3, 9), "a < b < c"),
    "big_int": ((3, 9), "an int constant beyond 64 bits"),
    "f_string": ((3, 9), "f'{x}'"),
    "if": ((3, 9), "if/elif/else"),
    "conditional_expression": ((3, 9), "a if c else b"),
    "while": ((3, 9), "while loops"),
    "for_range": ((3, 9), "for over range(...)"),
    "for_other": ((3, 9), "for over anything but range(...)"),
    "loop_else": ((3, 9), "for/while ... else"),
    "break_continue": ((3, 9), "break, continue"),
    "tuple_unpacking": ((3, 9), "a, b = ..., a, *b = ..."),
    "walrus": ((3, 9), "(x := ...)"),
    "list_comprehension": ((3, 9), "[... for ...]"),
    "set_comprehension": ((3, 9), "{... for ...}"),
    "dict_comprehension": ((3, 9), "{k: v for ...}"),
    "generator_expression": ((3, 9), "(... for ...)"),
    "set_literal": ((3, 9), "{1, 2}"),
    "dict_literal": ((3, 9), "{k: v}"),
    "subscript_slice": ((3, 9), "x[i:j:k]"),
    "pass": ((3, 9), "pass"),
    "assert": ((3, 9), "assert"),
    "raise": ((3, 9), "raise"),
    "try_except": ((3, 9), "try/except"),
    "try_else": ((3, 9), "try ... else"),
    "try_finally": ((3, 9), "try ... finally"),
    "try_star": ((3, 11), "try/except* (exception groups)"),
    "match": ((3, 10), "match/case"),
    "global": ((3, 9), "global"),
    "nonlocal": ((3, 9), "nonlocal"),
    "import": ((3, 9), "import, from ... import"),
    "nested_function": ((3, 9), "def inside a function (closures)"),
    "lambda": ((3, 9), "lambda"),
    "default_arguments": ((3, 9), "parameters with defaults"),
    "star_arguments": ((3, 9), "*args/**kwargs parameters or f(*x) calls"),
    "class": ((3, 9), "class definitions"),
    "with": ((3, 9), "with"),
    "with_errstate": ((3, 9), "with np.errstate(...)"),
    "numpy": ((3, 9), "np.* expressions"),
    "generator": ((3, 9), "def with yield"),
    "yield_from": ((3, 9), "yield from"),
    "generator_send": ((3, 9), "gen.send(...)"),
    "generator_throw": ((3, 9), "gen.throw(...)"),
    "generator_close": ((3, 9), "gen.close()"),
    "async_def": ((3, 9), "async def"),
    "await": ((3, 9), "await"),
    "async_for": ((3, 9), "async for"),
    "async_with": ((3, 9), "async with"),
    "async_comprehension": ((3, 9), "[... async for ...] or await in a comprehension"),
    "async_generator": ((3, 9), "async def with yield"),
    "delete": ((3, 9), "del"),
    "return": ((3, 9), "return"),
    "decorator": ((3, 9), "@decorator over a def"),
    "positional_only_params": ((3, 9), "def f(a, /, ...)"),
    "keyword_only_params": ((3, 9), "def f(..., *, k=...)"),
    "dict_unpacking": ((3, 9), "{**d, ...} in a dict display"),
    "annotated_assign": ((3, 9), "x: int = ..."),
    "matmul": ((3, 9), "a @ b"),
}


def available(name: str, version: Tuple[int, int] = sys.version_info[:2]) -> bool:
    """Whether the syntax of CPython ``version`` has construct ``name``."""
    return version >= CONSTRUCTS[name][0]


def _is_range_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"


def _own_nodes(fn: ast.AST) -> List[ast.AST]:
    """The nodes of a function's body that are not inside a nested function or class."""
    found: List[ast.AST] = []
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return found


_OPS: Dict[type, str] = {
    ast.Add: "arithmetic",
    ast.Sub: "arithmetic",
    ast.Mult: "arithmetic",
    ast.Div: "arithmetic",
    ast.FloorDiv: "arithmetic",
    ast.Mod: "arithmetic",
    ast.Pow: "arithmetic",
    ast.BitAnd: "bitwise",
    ast.BitOr: "bitwise",
    ast.BitXor: "bitwise",
    ast.LShift: "shift",
    ast.RShift: "shift",
    ast.Invert: "invert",
    ast.Not: "not",
    ast.UAdd: "unary_plus",
    ast.USub: "arithmetic",
    ast.And: "and",
    ast.Or: "or",
    ast.In: "in",
    ast.NotIn: "in",
    ast.Is: "is",
    ast.IsNot: "is",
    ast.MatMult: "matmul",
}

_SIMPLE: Dict[type, str] = {
    ast.AugAssign: "augmented_assign",
    ast.JoinedStr: "f_string",
    ast.If: "if",
    ast.IfExp: "conditional_expression",
    ast.While: "while",
    ast.Break: "break_continue",
    ast.Continue: "break_continue",
    ast.NamedExpr: "walrus",
    ast.ListComp: "list_comprehension",
    ast.SetComp: "set_comprehension",
    ast.DictComp: "dict_comprehension",
    ast.GeneratorExp: "generator_expression",
    ast.Set: "set_literal",
    ast.Dict: "dict_literal",
    ast.Slice: "subscript_slice",
    ast.Pass: "pass",
    ast.Assert: "assert",
    ast.Raise: "raise",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.Lambda: "lambda",
    ast.ClassDef: "class",
    ast.With: "with",
    ast.YieldFrom: "yield_from",
    ast.AsyncFunctionDef: "async_def",
    ast.Await: "await",
    ast.AsyncFor: "async_for",
    ast.AsyncWith: "async_with",
    ast.Delete: "delete",
    ast.Return: "return",
    ast.Starred: "star_arguments",
    ast.AnnAssign: "annotated_assign",
}


def _match_node(node: ast.AST, found: Set[str]) -> None:
    """Constructs that need more than the node's type."""
    kind = type(node)
    if kind in (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.AugAssign):
        name = _OPS.get(type(node.op))  # type: ignore[attr-defined]
        if name:
            found.add(name)
    if isinstance(node, ast.Compare):
        found.update(_OPS[type(op)] for op in node.ops if type(op) in _OPS)
        if len(node.ops) > 1:
            found.add("chained_comparison")
    elif isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) >= 2**64:
        found.add("big_int")
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        found.add("for_range" if _is_range_call(node.iter) else "for_other")
        if node.orelse:
            found.add("loop_else")
    elif isinstance(node, ast.While) and node.orelse:
        found.add("loop_else")
    elif isinstance(node, (ast.Assign, ast.For)) or type(node).__name__ == "comprehension":
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
            found.add("tuple_unpacking")
        if type(node).__name__ == "comprehension" and node.is_async:  # type: ignore[attr-defined]
            found.add("async_comprehension")
    elif type(node).__name__ in ("Try", "TryStar"):
        found.add("try_star" if type(node).__name__ == "TryStar" else ("try_except" if node.handlers else "try"))  # type: ignore[attr-defined]
        if node.orelse:  # type: ignore[attr-defined]
            found.add("try_else")
        if node.finalbody:  # type: ignore[attr-defined]
            found.add("try_finally")
    elif type(node).__name__ == "Match":
        found.add("match")
    elif isinstance(node, ast.Dict) and any(key is None for key in node.keys):
        found.add("dict_unpacking")
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        if args.posonlyargs:
            found.add("positional_only_params")
        if args.kwonlyargs:
            found.add("keyword_only_params")
        if not isinstance(node, ast.Lambda) and node.decorator_list:
            found.add("decorator")
        if args.defaults or any(d is not None for d in args.kw_defaults):
            found.add("default_arguments")
        if args.vararg or args.kwarg:
            found.add("star_arguments")
        if not isinstance(node, ast.Lambda):
            if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(node)):
                found.add("async_generator" if isinstance(node, ast.AsyncFunctionDef) else "generator")
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        if attr in ("send", "throw", "close"):
            found.add("generator_" + attr)
        if attr == "errstate":
            found.add("with_errstate")
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "np":
        found.add("numpy")
    elif isinstance(node, ast.Await):
        # an await inside a comprehension is an asynchronous comprehension too
        pass


def constructs_in(source: str) -> FrozenSet[str]:
    """The CONSTRUCTS names that ``source`` (Python text) uses, found in its AST."""
    tree = ast.parse(source)
    found: Set[str] = set()
    for node in ast.walk(tree):
        name = _SIMPLE.get(type(node))
        if name:
            found.add(name)
        _match_node(node, found)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(node) if n is not node):
                found.add("nested_function")
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            if any(isinstance(n, ast.Await) for n in ast.walk(node)):
                found.add("async_comprehension")
    found.discard("try")
    return frozenset(found)


def draw_sources(count: int, seed: int = 0) -> List[str]:
    """``count`` grammar program sources (fhfuzz.grammar.grammar_sources, what
    fhfuzz.strategies.programs(["grammar"]) puts in its programs), drawn deterministically: a
    Hypothesis run with a fixed seed, no database and no shrinking."""
    from hypothesis import given
    from hypothesis import seed as fixed_seed

    from fhfuzz.drawing import drawing
    from fhfuzz.grammar import grammar_sources

    sources: List[str] = []

    @fixed_seed(seed)
    @drawing(max_examples=count)
    @given(grammar_sources())
    def collect(source: str) -> None:
        sources.append(source)

    collect()
    return sources


def coverage_counts(sources: Sequence[str]) -> Dict[str, int]:
    """How many of ``sources`` use each construct (in their own code: the coroutine driver the
    grammar adds to programs with async code is not counted)."""
    from fhfuzz.grammar import DRIVER

    counts = {name: 0 for name in CONSTRUCTS}
    for source in sources:
        for name in constructs_in(source.replace(DRIVER, "")):
            counts[name] += 1
    return counts


def coverage_table(counts: Dict[str, int], total: int, version: Tuple[int, int] = sys.version_info[:2]) -> str:
    """The table text: one line per construct with how many of ``total`` programs use it."""
    lines = [f"constructs in {total} grammar programs on CPython {version[0]}.{version[1]}", ""]
    lines.append(f"{'construct':<24} {'since':>6}  generated")
    for name, ((major, minor), _) in CONSTRUCTS.items():
        if not available(name, version):
            cell = "not on this version"
        elif counts[name] == 0:
            cell = "NOT GENERATED"
        else:
            cell = str(counts[name])
        lines.append(f"{name:<24} {major}.{minor:<4}  {cell}")
    return "\n".join(lines)


def coverage_report(count: int = 3000, seed: int = 0) -> Tuple[str, List[str]]:
    """Draw ``count`` grammar programs deterministically and return the coverage table and
    the constructs this interpreter's syntax has that none of them used. The same
    ``seed`` draws the same programs."""
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"count: expected a positive int, got {count!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    sources = draw_sources(count, seed)
    counts = coverage_counts(sources)
    missing = [name for name in CONSTRUCTS if available(name) and counts[name] == 0]
    return coverage_table(counts, len(sources)), missing


def main(argv: Optional[Sequence[str]] = None, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m fhfuzz.constructs", description=__doc__)
    parser.add_argument("--count", type=int, default=3000, help="programs to draw (default 3000)")
    parser.add_argument("--seed", type=int, default=0, help="the Hypothesis seed of the draws (default 0)")
    ns = parser.parse_args(argv)
    table, missing = coverage_report(ns.count, ns.seed)
    out(table)
    if missing:
        out("\nnot generated: " + ", ".join(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
