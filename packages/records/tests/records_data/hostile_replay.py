"""Hostile records that load, or nearly: what they attack is replay (issue 30).

Each case is built for the running interpreter (its version and bytecode magic), so the
recorded source is what replay compiles. ``CASES`` maps a name to (builder, expectation):

* ``("load", fragment)``: ``load()`` refuses the file, the message holding ``fragment``;
* ``("replay", fragment)``: it loads, and ``replay_record`` refuses it before running
  anything, with a RecordError holding ``fragment``;
* ``("runs", imports)``: it replays, importing exactly the modules listed.

Used by tests/test_records_trust.py (one child process per case, under an audit hook) and
benchmarks/bench_hostile.py (time and peak memory per case). Not a test module.
"""

from __future__ import annotations

import copy
from typing import Callable

from framehook.records import container, record_call
from framehook.records.codeloc import current_python

# A module whose import would be visible: tests put a file of this name on sys.path.
SIDE_EFFECT_MODULE = "fh_hostile_side_effect"
SOURCE = "def sample(a, b=2):\n    return [a, b]\n"


def sample(a, b=2):
    return [a, b]


def base() -> dict:
    doc = record_call(sample, (3,), {}, label="hostile-replay").to_document()
    doc["python"] = current_python()
    doc["code"].update(
        filename="sample.py", firstlineno=1, source=SOURCE, source_line=1, marshal=None, module="hostile_sample"
    )
    doc["globals"] = dict(doc["globals"])  # edited by name below; written back as pairs
    doc["created"] = "2026-12-01T00:00:00+00:00"
    doc["packages"] = {}
    return doc


def _with_source(body: str) -> Callable[[], dict]:
    def build() -> dict:
        doc = base()
        doc["code"]["source"] = f"def sample(a, b=2):\n    return {body}\n"
        return doc

    return build


def _builtin_os_system() -> dict:
    doc = _with_source("len(a)")()
    doc["builtins"]["len"] = {"t": "global", "module": "os", "qualname": "system"}
    return doc


def _builtin_module() -> dict:
    doc = _with_source("len(a)")()
    doc["builtins"]["len"] = {"t": "module", "name": SIDE_EFFECT_MODULE}
    return doc


def _unused_global_import() -> dict:
    doc = base()
    doc["globals"]["zen"] = {"t": "module", "name": SIDE_EFFECT_MODULE}
    return doc


def _unused_global_inside() -> dict:
    doc = base()
    doc["globals"]["cfg"] = {
        "t": "list",
        "id": 1,  # the call's kwargs dict is id 0: the inputs share one id space
        "items": [{"t": "global", "module": SIDE_EFFECT_MODULE, "qualname": "run"}],
    }
    return doc


def _many_module_globals() -> dict:
    doc = base()
    for i in range(60_000):  # 62,499 of them pass the node limit
        doc["globals"][f"g{i}"] = {"t": "module", "name": f"{SIDE_EFFECT_MODULE}{i}"}
    return doc


def _python_from_the_future() -> dict:
    doc = base()
    doc["python"]["version"] = "4.2.0"
    return doc


def _generator_kind_on_a_function() -> dict:
    doc = base()
    doc["code"]["kind"] = "generator"
    return doc


def _big_int_list_global() -> dict:
    doc = _with_source("[a, b, big]")()
    doc["globals"]["big"] = {"t": "list", "id": 1, "items": [{"t": "int", "v": "1"}] * 199_000}
    return doc


def _values_over_limit() -> dict:
    # the cheapest tagged value (three JSON nodes), so the node limit lets it through
    doc = _with_source("[a, b, big]")()
    doc["globals"]["big"] = {"t": "list", "id": 1, "items": [{"t": "target"}] * 100_001}
    return doc


def _three_million_nodes() -> dict:
    doc = base()
    doc["notes"] = [[]] * 3_000_000
    return doc


def _source(text: str) -> Callable[[], dict]:
    def build() -> dict:
        doc = base()
        doc["code"]["source"] = SOURCE + text
        return doc

    return build


CASES: dict[str, tuple[Callable[[], dict], tuple]] = {
    # names bound to what the code does not show
    "builtin_names_os_system": (_builtin_os_system, ("load", "builtins['len']: may only name the builtin len")),
    "builtin_names_a_module": (_builtin_module, ("load", "builtins['len']: may only name the builtin len")),
    "unused_global_imports_a_module": (_unused_global_import, ("runs", [])),
    "unused_global_holds_a_path": (_unused_global_inside, ("runs", [])),
    "many_unused_module_globals": (_many_module_globals, ("runs", [])),
    "python_4_2_with_this_magic": (_python_from_the_future, ("load", "python: claims Python 4.2.0")),
    "generator_kind_on_a_function": (_generator_kind_on_a_function, ("replay", "code.kind: the record says")),
    # sources that crash or explode compile()
    "chain_of_200000_additions": (_with_source("a" + "+1" * 200_000), ("replay", "source_nesting exceeds")),
    "chain_of_100000_attributes": (_with_source("a" + ".a" * 100_000), ("replay", "source_nesting exceeds")),
    "chain_of_100000_calls": (_with_source("a" + "()" * 100_000), ("replay", "source_nesting exceeds")),
    "chain_of_100000_subscripts": (_with_source("a" + "[0]" * 100_000), ("replay", "source_nesting exceeds")),
    "chain_of_5000_nots": (_with_source("not " * 5_000 + "a"), ("replay", "source_nesting exceeds")),
    "chain_of_5000_lambdas": (_with_source("lambda: " * 5_000 + "a"), ("replay", "source_nesting exceeds")),
    "brackets_nested_150_deep": (_with_source("[" * 150 + "a" + "]" * 150), ("replay", "source_nesting exceeds")),
    "chain_inside_an_fstring": (_with_source('f"{a' + "+1" * 100_000 + '}"'), ("replay", "source_nesting exceeds")),
    "decimal_literal_of_50000_digits": (_with_source("1" * 50_000), ("replay", "number literal of 50000 digits")),
    "source_of_2097102_lines": (_source("x=1\n" * 2_097_102), ("replay", "source_bytes ")),
    "source_of_1000000_statements": (_source("x=1\n" * 1_000_000), ("replay", "source_tokens exceeds")),
    # values within the decoding limits that cost too much
    "list_of_199000_ints": (_big_int_list_global, ("load", "nodes exceeds the limit")),
    "list_of_100001_values": (
        _values_over_limit,
        ("replay", "exceeds the limit of 100000; raise it with limits= or --limit values=N"),
    ),
    "record_of_3000000_nodes": (_three_million_nodes, ("load", "nodes exceeds the limit")),
}


def pack(doc: dict) -> bytes:
    """File bytes of a document built here (globals by name), as format 2 writes them."""
    doc = copy.deepcopy(doc)
    doc["globals"] = [[key, tree] for key, tree in doc["globals"].items()]
    return container.pack(doc)


def build(name: str) -> bytes:
    builder, _ = CASES[name]
    return pack(builder())
