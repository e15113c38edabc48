"""Regenerate the hostile record corpus in ./hostile (checked in; run when the format changes).

    PYTHONPATH=packages/records/src python packages/records/tests/records_data/make_hostile.py

Every file under "load" in hostile/MANIFEST.json must be rejected by
``framehook.records.load`` with a RecordError whose message contains the fragment listed,
executing nothing. Files under "replay" load (their defect is in the recorded bytecode) and
are refused when replay reaches it: the bytecode is never run by default, and with
trust_bytecode=True it is refused with the listed fragment.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import marshal
import pickle
import struct
import zlib
from pathlib import Path

from framehook.records import container, record_call

OUT = Path(__file__).resolve().parent / "hostile"


class _Exploit:
    """Unpickling this would run exec(); the corpus proves the reader never unpickles."""

    def __reduce__(self):
        return (exec, ("import sys; sys.FRAMEHOOK_PWNED = True",))


def sample(a, b=2):
    return [a, b, {"k": a * b}]


def base_document() -> dict:
    rec = record_call(sample, (3,), {}, label="hostile-base")
    doc = rec.to_document()
    doc["code"]["filename"] = "sample.py"
    doc["code"]["source"] = "def sample(a, b=2):\n    return [a, b, {'k': a * b}]\n"
    doc["created"] = "2024-01-01T00:00:00+00:00"
    doc["python"] = {"version": "3.11.7", "implementation": "cpython", "magic": "a70d0d0a", "cache_tag": "cpython-311"}
    doc["packages"] = {"framehook.translator": "0.1.0"}
    return doc


def header(major=1, minor=0, flags=0, stored=0, decoded=0, digest=b"\0" * 32) -> bytes:
    return struct.pack(">8sHHIQQ32s", container.MAGIC, major, minor, flags, stored, decoded, digest)


def raw(body: bytes, **kw) -> bytes:
    """An uncompressed envelope around arbitrary body bytes, with a correct checksum."""
    args = dict(stored=len(body), decoded=len(body), digest=hashlib.sha256(body).digest())
    args.update(kw)
    return header(**args) + body


def with_doc(mutate) -> bytes:
    doc = copy.deepcopy(base_document())
    mutate(doc)
    return container.pack(doc)


def _set(path, value):
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _pickle_tree() -> dict:
    return {"t": "pickle", "v": base64.b64encode(pickle.dumps(_Exploit())).decode()}


def nested_list(depth: int) -> dict:
    tree: dict = {"t": "list", "id": 0, "items": []}
    node = tree
    for i in range(1, depth):
        child = {"t": "list", "id": i, "items": []}
        node["items"].append(child)
        node = child
    return tree


def compressed(body: bytes, **kw) -> bytes:
    """A zlib envelope around arbitrary body bytes, with correct lengths and checksum."""
    packed = zlib.compress(body, 9)
    args = dict(flags=1, stored=len(packed), decoded=len(body), digest=hashlib.sha256(body).digest())
    args.update(kw)
    return header(**args) + packed


def npy(descr: str, shape: str, payload: bytes = b"", fortran: str = "False") -> dict:
    text = "{'descr': %r, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    head = text.encode("latin-1")
    head += b" " * (63 - (len(head) + 10) % 64) + b"\n"
    data = b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head + payload
    return {"t": "ndarray", "id": 0, "npy": base64.b64encode(data).decode()}


def npy_raw(data: bytes) -> dict:
    return {"t": "ndarray", "id": 0, "npy": base64.b64encode(data).decode()}


# Text a terminal would obey: erase the line, return, and print a forged verdict.
FORGE = "\x1b[2K\rMATCH    forged.fhrec\n"


def load_cases(good: bytes) -> dict[str, tuple[bytes, str]]:
    """Cases 51-: more of each kind, all refused by load()."""
    plain_body = json.dumps(base_document()).encode()
    many_empty = b'{"kind": [' + b"[]," * 3_000_000 + b'[]]}'
    many_ints = b'{"kind": [' + b"0," * 3_000_000 + b'0]}'
    deep_objects = b'{"a":' * 500 + b'1' + b'}' * 500
    wide_keys = b"{" + b'"k": 0,' * 600_000 + b'"k": 0}'  # counted before duplicates are seen
    cases: dict[str, tuple[bytes, str]] = {
        # decompression bombs and oversized bodies
        "51_bomb_many_empty_arrays.fhrec": (compressed(many_empty), "nodes exceeds the limit of 500000"),
        "52_bomb_three_million_ints.fhrec": (compressed(many_ints), "nodes exceeds the limit of 500000"),
        "53_declared_just_over_body_limit.fhrec": (
            header(flags=1, stored=8, decoded=64 * 1024 * 1024 + 1) + b"x" * 8,
            "body_bytes 67108865 exceeds the limit",
        ),
        "54_bomb_longer_than_declared.fhrec": (
            compressed(b" " * (40 * 1024 * 1024), decoded=10 * 1024 * 1024, digest=b"\0" * 32),
            "does not match its declared length",
        ),
        "55_bomb_shorter_than_declared.fhrec": (
            compressed(b"{}", decoded=1000, digest=b"\0" * 32),
            "does not match its declared length",
        ),
        "56_deep_objects.fhrec": (compressed(deep_objects), "depth exceeds the limit of 400"),
        "57_wide_object_keys.fhrec": (compressed(wide_keys), "nodes exceeds the limit of 500000"),
        "58_deep_nesting_compressed.fhrec": (
            compressed(b"[" * 900_000 + b"]" * 900_000),
            "depth exceeds the limit of 400",
        ),
        "59_long_label.fhrec": (with_doc(_set(["label"], "A" * 5_000_000)), "label: must be a string of sane length"),
        "60_many_notes.fhrec": (with_doc(_set(["notes"], ["n"] * 10_001)), "notes: must be a list"),
        # huge and malformed integers
        "61_int_over_digit_limit.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "int", "v": "1" * 100_001})),
            "malformed integer",
        ),
        "62_negative_int_over_limit.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "int", "v": "-" + "f" * 100_001})),
            "malformed integer",
        ),
        "63_int_uppercase_hex.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "int", "v": "FF"})),
            "malformed integer",
        ),
        "64_int_empty.fhrec": (with_doc(_set(["outcome", "value"], {"t": "int", "v": ""})), "malformed integer"),
        "65_int_as_json_number.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "int", "v": 5})),
            "int.v must be a JSON str",
        ),
        "66_int_prefixed.fhrec": (with_doc(_set(["outcome", "value"], {"t": "int", "v": "0x10"})), "malformed integer"),
        # numpy payloads
        "67_npy_object_dtype.fhrec": (
            with_doc(_set(["outcome", "value"], npy("|O", "(1,)", b"\0" * 8))),
            "object dtype refused",
        ),
        "68_npy_object_field.fhrec": (
            with_doc(
                _set(
                    ["outcome", "value"],
                    npy_raw(
                        b"\x93NUMPY\x01\x00"
                        + (
                            b"{'descr': [('a', '<i8'), ('b', '|O')], 'fortran_order': False, 'shape': (1,), }".ljust(
                                117
                            )
                            + b"\n"
                        )
                        .__len__()
                        .to_bytes(2, "little")
                        + b"{'descr': [('a', '<i8'), ('b', '|O')], 'fortran_order': False, 'shape': (1,), }".ljust(117)
                        + b"\n"
                        + b"\0" * 16
                    ),
                )
            ),
            "object dtype refused",
        ),
        "69_npy_shape_10e12.fhrec": (
            with_doc(_set(["outcome", "value"], npy("<f8", "(1000000000000,)"))),
            "array_elements 1000000000000 exceeds the limit",
        ),
        "70_npy_shape_square.fhrec": (
            with_doc(_set(["outcome", "value"], npy("<i4", "(1048576, 1048576)"))),
            "array_elements 1099511627776 exceeds the limit",
        ),
        "71_npy_bytes_over_limit.fhrec": (
            with_doc(_set(["outcome", "value"], npy("<c16", "(8388608,)"))),
            "array_bytes 134217728 exceeds the limit",
        ),
        "72_npy_huge_unicode_items.fhrec": (
            with_doc(_set(["outcome", "value"], npy("<U99999999", "(4,)"))),
            "array_bytes 1599999984 exceeds the limit",
        ),
        "73_npy_truncated_data.fhrec": (
            with_doc(_set(["outcome", "value"], npy("<f8", "(10,)", b"\0" * 8))),
            "disagrees with its header",
        ),
        "74_npy_bad_version.fhrec": (
            with_doc(_set(["outcome", "value"], npy_raw(b"\x93NUMPY\x09\x00" + b"\0" * 20))),
            "unsupported .npy version",
        ),
        "75_npy_no_shape.fhrec": (
            with_doc(
                _set(["outcome", "value"], npy_raw(b"\x93NUMPY\x01\x00\x20\x00{'descr': '<f8', 'x': 1}        \n"))
            ),
            "malformed .npy header",
        ),
        "76_npy_truncated_header.fhrec": (
            with_doc(_set(["outcome", "value"], npy_raw(b"\x93NUMPY\x01\x00\xff\xff{'descr'"))),
            "truncated .npy header",
        ),
        "77_npy_unsupported_dtype.fhrec": (
            with_doc(_set(["outcome", "value"], npy("<f8;__import__(os)", "(1,)"))),
            "unsupported numpy dtype",
        ),
        "78_npy_expression_shape.fhrec": (
            with_doc(_set(["outcome", "value"], npy("<f8", "(__import__('os'),)"))),
            "malformed .npy header",
        ),
        # control characters: every message escapes them (a terminal must not obey them)
        "79_control_chars_in_global_name.fhrec": (
            with_doc(_set(["globals", FORGE], {"t": "evil"})),
            "unknown value tag",
        ),
        "80_control_chars_in_module.fhrec": (
            with_doc(_set(["globals", "m"], {"t": "module", "name": FORGE})),
            "invalid module name",
        ),
        "81_control_chars_in_qualname.fhrec": (
            with_doc(_set(["globals", "g"], {"t": "global", "module": "os", "qualname": FORGE})),
            "invalid qualified name",
        ),
        "82_control_chars_in_version.fhrec": (
            with_doc(_set(["python", "version"], FORGE * 20)),
            "python.version: must be a string of sane length",
        ),
        "83_control_chars_in_closure_name.fhrec": (
            with_doc(_set(["function", "closure"], [[FORGE]])),
            "must be a [name, value] pair",
        ),
        "84_control_chars_in_tag.fhrec": (with_doc(_set(["outcome", "value"], {"t": FORGE})), "unknown value tag"),
        # wrong types in every field
        "85_format_string.fhrec": (with_doc(_set(["format"], "1.0")), "disagrees with the header"),
        "86_python_list.fhrec": (with_doc(_set(["python"], ["3.11"])), "python: must be a JSON object"),
        "87_python_version_int.fhrec": (with_doc(_set(["python", "version"], 311)), "python.version"),
        "88_packages_list.fhrec": (with_doc(_set(["packages"], ["framehook"])), "packages: must be an object"),
        "89_package_version_int.fhrec": (with_doc(_set(["packages", "framehook.records"], 1)), "packages["),
        "90_code_string.fhrec": (with_doc(_set(["code"], "def f(): pass")), "code: must be a JSON object"),
        "91_code_name_int.fhrec": (with_doc(_set(["code", "name"], 7)), "code.name"),
        "92_code_qualname_list.fhrec": (with_doc(_set(["code", "qualname"], ["a"])), "code.qualname"),
        "93_code_module_int.fhrec": (with_doc(_set(["code", "module"], 1)), "code.module"),
        "94_code_filename_null.fhrec": (with_doc(_set(["code", "filename"], None)), "code.filename"),
        "95_firstlineno_string.fhrec": (with_doc(_set(["code", "firstlineno"], "1")), "code.firstlineno"),
        "96_firstlineno_negative.fhrec": (with_doc(_set(["code", "firstlineno"], -1)), "code.firstlineno"),
        "97_firstlineno_huge.fhrec": (with_doc(_set(["code", "firstlineno"], 2**31)), "code.firstlineno"),
        "98_firstlineno_bool.fhrec": (with_doc(_set(["code", "firstlineno"], True)), "code.firstlineno"),
        "99_code_source_int.fhrec": (with_doc(_set(["code", "source"], 0)), "code.source"),
        "100_code_kind_null.fhrec": (with_doc(_set(["code", "kind"], None)), "code.kind"),
        "101_code_missing_field.fhrec": (with_doc(lambda d: d["code"].pop("marshal")), "missing fields ['marshal']"),
        "102_function_null.fhrec": (with_doc(_set(["function"], None)), "function: must be a JSON object"),
        "103_closure_object.fhrec": (
            with_doc(_set(["function", "closure"], {"x": None})),
            "function.closure: must be a list",
        ),
        "104_function_extra_field.fhrec": (with_doc(_set(["function", "__code__"], "x")), "unexpected fields"),
        "105_globals_list.fhrec": (with_doc(_set(["globals"], [])), "globals: must be an object"),
        "106_builtins_string.fhrec": (with_doc(_set(["builtins"], "len")), "builtins: must be an object"),
        "107_locals_int.fhrec": (with_doc(_set(["locals"], 3)), "locals: must be an object"),
        "108_call_args_list.fhrec": (
            with_doc(_set(["call", "args"], {"t": "list", "id": 0, "items": []})),
            "call.args: must be a tuple",
        ),
        "109_call_kwargs_tuple.fhrec": (
            with_doc(_set(["call", "kwargs"], {"t": "tuple", "items": []})),
            "call.kwargs: must be a dict",
        ),
        "110_outcome_kind_exit.fhrec": (with_doc(_set(["outcome", "kind"], "exit")), "outcome.kind"),
        "111_outcome_exception_int.fhrec": (
            with_doc(_set(["outcome", "exception"], {"t": "int", "v": "1"})),
            "outcome.exception: must be an exception value",
        ),
        "112_events_object.fhrec": (
            with_doc(_set(["outcome", "events"], {"yield": 1})),
            "outcome.events: must be a list",
        ),
        "113_label_int.fhrec": (with_doc(_set(["label"], 5)), "label: must be a string"),
        "114_created_list.fhrec": (with_doc(_set(["created"], [])), "created: must be a string"),
        "115_missing_object.fhrec": (with_doc(_set(["missing"], {})), "missing: must be a list"),
        "116_notes_ints.fhrec": (with_doc(_set(["notes"], [1, 2])), "notes: must be a string"),
        "117_kind_missing.fhrec": (with_doc(lambda d: d.pop("kind")), "kind is not framehook-record"),
        "118_float_as_number.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "float", "v": 1.5})),
            "float.v must be a JSON str",
        ),
        "119_bytes_as_list.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "bytes", "v": [1, 2]})),
            "bytes.v must be a JSON str",
        ),
        # truncated and corrupt containers
        "120_header_63_bytes.fhrec": (good[:63], "truncated header"),
        "121_compressed_truncated.fhrec": (good[: 64 + 20], "truncated body"),
        "122_stored_length_short.fhrec": (raw(plain_body, stored=len(plain_body) - 1), "trailing data"),
        "123_plain_flagged_compressed.fhrec": (raw(plain_body, flags=1), "corrupt compressed"),
        "124_gzip_not_zlib.fhrec": (
            header(flags=1, stored=20, decoded=20) + b"\x1f\x8b\x08" + b"\0" * 17,
            "corrupt compressed",
        ),
        "125_uncompressed_length_mismatch.fhrec": (
            raw(plain_body, decoded=len(plain_body) + 1),
            "uncompressed body length mismatch",
        ),
        "126_plain_checksum_mismatch.fhrec": (raw(plain_body, digest=b"\1" * 32), "checksum mismatch"),
        "127_zero_length_body.fhrec": (raw(b""), "not valid JSON"),
        "128_json_string_body.fhrec": (raw(b'"framehook-record"'), "not a JSON object"),
        "129_unclosed_bracket.fhrec": (raw(b"]" + b"{}"), "not valid JSON"),
        "130_utf16_body.fhrec": (raw('{"kind": "framehook-record"}'.encode("utf-16")), "not valid JSON"),
    }
    return cases


# Loaded fine, refused when replay reaches the recorded bytecode (see test_records_hostile).
HIDDEN_SOURCE = "def sample(a, b=2):\n    __import__('sys').FRAMEHOOK_PWNED = True\n    return [a, b, {'k': a * b}]\n"


def _marshal_case(payload: str | None, hidden: bool = False) -> bytes:
    def mutate(doc: dict) -> None:
        doc["code"].update(firstlineno=1, qualname="sample", name="sample")
        if hidden:
            module = compile(HIDDEN_SOURCE, "sample.py", "exec")
            payload_code = next(c for c in module.co_consts if hasattr(c, "co_code"))
            doc["code"]["marshal"] = base64.b64encode(marshal.dumps(payload_code)).decode()
        else:
            doc["code"]["marshal"] = payload

    return with_doc(mutate)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def replay_cases() -> dict[str, tuple[bytes, dict]]:
    """name -> (file, {"note": in bytecode_note by default, "trust": in the error with trust_bytecode
    (None: that bytecode is this generator's own, valid only on its version)})."""
    corrupt = "marshalled code is corrupt"
    return {
        "r01_marshal_garbage.fhrec": (_marshal_case(_b64(b"\xde\xad\xbe\xef")), {"note": corrupt, "trust": corrupt}),
        "r02_marshal_int.fhrec": (
            _marshal_case(_b64(marshal.dumps(5))),
            {"note": "not the recorded function's code", "trust": "not the recorded function's code"},
        ),
        "r03_marshal_list_bomb.fhrec": (
            _marshal_case(_b64(b"[" + (2**31 - 1).to_bytes(4, "little"))),
            {"note": "declares 2147483647 items", "trust": "declares 2147483647 items"},
        ),
        "r04_marshal_long_bomb.fhrec": (
            _marshal_case(_b64(b"l" + (2**31 - 1).to_bytes(4, "little"))),
            {"note": "declares an integer", "trust": "declares an integer"},
        ),
        "r05_marshal_nested_tuples.fhrec": (
            _marshal_case(_b64((b"(" + (3).to_bytes(4, "little")) * 50)),
            {"note": corrupt, "trust": corrupt},
        ),
        "r06_marshal_empty.fhrec": (_marshal_case(""), {"note": corrupt, "trust": corrupt}),
        "r07_marshal_not_base64.fhrec": (_marshal_case("!!not base64!!"), {"note": corrupt, "trust": corrupt}),
        "r08_marshal_unknown_type.fhrec": (_marshal_case(_b64(b"\x01\x02")), {"note": corrupt, "trust": corrupt}),
        "r09_marshal_trailing.fhrec": (
            _marshal_case(_b64(marshal.dumps(None) + b"N")),
            {"note": corrupt, "trust": corrupt},
        ),
        "r10_hidden_bytecode.fhrec": (
            _marshal_case(None, hidden=True),
            {"note": "differs from the compilation of its source", "trust": None},
        ),
    }


def build() -> dict[str, tuple[bytes, str]]:
    good = container.pack(base_document())
    bomb_body = zlib.compress(b" " * (50 * 1024 * 1024), 9)
    cases: dict[str, tuple[bytes, str]] = {
        "01_empty.fhrec": (b"", "empty file"),
        "02_one_byte.fhrec": (b"\x89", "truncated header"),
        "03_png_magic.fhrec": (b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "bad magic"),
        "04_text_file.fhrec": (b"def f(): import os; os.system('echo pwned')\n" * 3, "bad magic"),
        "05_truncated_header.fhrec": (good[:30], "truncated header"),
        "06_truncated_body.fhrec": (good[:-10], "truncated body"),
        "07_trailing_data.fhrec": (good + b"EXTRA", "trailing data"),
        "08_huge_stored_length.fhrec": (header(stored=2**63, decoded=10) + b"x" * 10, "truncated body"),
        "09_huge_decoded_length.fhrec": (
            header(flags=1, stored=10, decoded=2**40) + b"x" * 10,
            "body_bytes 1099511627776 exceeds the limit",
        ),
        "10_zip_bomb.fhrec": (
            header(flags=1, stored=len(bomb_body), decoded=1000) + bomb_body,
            "does not match its declared length",
        ),
        "11_checksum_mismatch.fhrec": (good[:-1] + bytes([good[-1] ^ 0xFF]), ""),
        "12_unknown_flags.fhrec": (raw(b"{}", flags=0x80), "unknown header flags"),
        "13_newer_major.fhrec": (raw(b"{}", major=container.FORMAT_MAJOR + 1), "newer than this reader"),
        "14_major_zero.fhrec": (raw(b"{}", major=0), "unknown record format version"),
        "15_not_json.fhrec": (raw(b"\x80\x04\x95 this is not json"), "not valid JSON"),
        "16_json_array.fhrec": (raw(b"[1, 2, 3]"), "not a JSON object"),
        "17_nan_constant.fhrec": (raw(b'{"kind": NaN}'), "non-standard JSON constant"),
        "18_duplicate_keys.fhrec": (raw(b'{"kind": 1, "kind": 2}'), "duplicate key"),
        "19_json_nesting_bomb.fhrec": (compressed(b"[" * 200_000 + b"]" * 200_000), "depth exceeds the limit of 400"),
        "20_bad_zlib.fhrec": (
            header(flags=1, stored=20, decoded=20) + b"\x78\x9c" + b"\xff" * 18,
            "corrupt compressed",
        ),
        "21_value_nesting_bomb.fhrec": (with_doc(_set(["outcome", "value"], nested_list(150))), "deeper than"),
        "22_unknown_tag.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "evil", "cmd": "rm -rf /"})),
            "unknown value tag",
        ),
        "23_pickle_in_args.fhrec": (
            with_doc(_set(["call", "args"], {"t": "tuple", "items": [_pickle_tree()]})),
            "pickle payload",
        ),
        "24_pickle_in_globals.fhrec": (with_doc(_set(["globals", "x"], _pickle_tree())), "pickle payload"),
        "25_pickle_as_npy.fhrec": (
            with_doc(
                _set(
                    ["outcome", "value"],
                    {"t": "ndarray", "id": 0, "npy": base64.b64encode(pickle.dumps(_Exploit())).decode()},
                )
            ),
            ".npy format",
        ),
        "26_bad_base64.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "bytes", "v": "!!!not base64!!!"})),
            "malformed base64",
        ),
        "27_forward_ref.fhrec": (with_doc(_set(["outcome", "value"], {"t": "ref", "id": 5})), "undefined id"),
        "28_id_out_of_sequence.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "list", "id": 7, "items": []})),
            "out of sequence",
        ),
        "29_int_injection.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "int", "v": "__import__('os')"})),
            "malformed integer",
        ),
        "30_int_too_long.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "int", "v": "f" * 200_001})),
            "malformed integer",
        ),
        "31_module_injection.fhrec": (
            with_doc(_set(["globals", "os"], {"t": "module", "name": "os; rm -rf /"})),
            "invalid module name",
        ),
        "32_global_injection.fhrec": (
            with_doc(
                _set(["globals", "f"], {"t": "global", "module": "builtins", "qualname": "__import__('os').system"})
            ),
            "invalid qualified name",
        ),
        "33_missing_outcome.fhrec": (with_doc(lambda d: d.pop("outcome")), "outcome"),
        "34_unknown_field.fhrec": (with_doc(_set(["__reduce__"], "exec")), "unknown fields"),
        "35_wrong_kind.fhrec": (with_doc(_set(["kind"], "pickle")), "kind is not framehook-record"),
        "36_format_disagrees.fhrec": (with_doc(_set(["format"], [1, 7])), "disagrees with the header"),
        "37_bad_code_kind.fhrec": (with_doc(_set(["code", "kind"], "exec")), "code.kind"),
        "38_bad_events.fhrec": (with_doc(_set(["outcome", "events"], [["exec", None]])), "outcome.events"),
        "39_unhashable_key.fhrec": (
            with_doc(
                _set(
                    ["outcome", "value"], {"t": "dict", "id": 0, "items": [[{"t": "list", "id": 1, "items": []}, None]]}
                )
            ),
            "unhashable",
        ),
        "40_empty_cell_outside.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "empty_cell"})),
            "empty_cell outside",
        ),
        "41_bad_float.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "float", "v": "1e999999; os"})),
            "malformed float",
        ),
        "42_translator_nesting.fhrec": (
            with_doc(_set(["translator"], json.loads("[" * 80 + "]" * 80))),
            "must be an object",
        ),
        "43_deep_translator.fhrec": (
            with_doc(_set(["translator"], {"a": json.loads("[" * 80 + "]" * 80)})),
            "nests too deeply",
        ),
        "44_bad_code_flags.fhrec": (with_doc(_set(["code", "flags"], 0x20)), "code.flags"),
        "45_invalid_utf8.fhrec": (raw(b'{"kind": "\xff\xfe"}'), "not valid JSON"),
        "46_extra_value_field.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "int", "v": "1", "exec": "x"})),
            "unexpected fields",
        ),
        "47_marshal_not_string.fhrec": (with_doc(_set(["code", "marshal"], {"t": "bytes", "v": ""})), "code.marshal"),
        "48_pickle_in_closure.fhrec": (
            with_doc(_set(["function", "closure"], [["x", _pickle_tree()]])),
            "pickle payload",
        ),
        "49_numbers_as_values.fhrec": (with_doc(_set(["outcome", "value"], 12345)), "expected a tagged value"),
        "50_big_id.fhrec": (
            with_doc(_set(["outcome", "value"], {"t": "ref", "id": 10**12})),
            "small non-negative integer",
        ),
    }
    cases.update(load_cases(good))
    return cases


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("*.fhrec"):
        old.unlink()
    manifest: dict = {"load": {}, "replay": {}}
    for name, (data, fragment) in build().items():
        (OUT / name).write_bytes(data)
        manifest["load"][name] = fragment
    for name, (data, expect) in replay_cases().items():
        (OUT / name).write_bytes(data)
        manifest["replay"][name] = expect
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    total = len(manifest["load"]) + len(manifest["replay"])
    size = sum(f.stat().st_size for f in OUT.glob("*.fhrec"))
    print(f"wrote {total} hostile files ({size} bytes) to {OUT}")


if __name__ == "__main__":
    main()
