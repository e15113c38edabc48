"""Regenerate the hostile record corpus in ./hostile (checked in; run when the format changes).

    PYTHONPATH=packages/records/src python packages/records/tests/records_data/make_hostile.py

Every file must be rejected by ``framehook.records.load`` with a RecordError
whose message contains the fragment listed in hostile/MANIFEST.json, executing nothing.
"""
from __future__ import annotations

import base64
import copy
import hashlib
import json
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
    doc["python"] = {"version": "3.11.7", "implementation": "cpython", "magic": "a70d0d0a",
                     "cache_tag": "cpython-311"}
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
        "09_huge_decoded_length.fhrec": (header(flags=1, stored=10, decoded=2**40) + b"x" * 10, "body_bytes 1099511627776 exceeds the limit"),
        "10_zip_bomb.fhrec": (header(flags=1, stored=len(bomb_body), decoded=1000) + bomb_body,
                              "does not match its declared length"),
        "11_checksum_mismatch.fhrec": (good[:-1] + bytes([good[-1] ^ 0xFF]), ""),
        "12_unknown_flags.fhrec": (raw(b"{}", flags=0x80), "unknown header flags"),
        "13_newer_major.fhrec": (raw(b"{}", major=2), "newer than this reader"),
        "14_major_zero.fhrec": (raw(b"{}", major=0), "unknown record format version"),
        "15_not_json.fhrec": (raw(b"\x80\x04\x95 this is not json"), "not valid JSON"),
        "16_json_array.fhrec": (raw(b"[1, 2, 3]"), "not a JSON object"),
        "17_nan_constant.fhrec": (raw(b'{"kind": NaN}'), "non-standard JSON constant"),
        "18_duplicate_keys.fhrec": (raw(b'{"kind": 1, "kind": 2}'), "duplicate key"),
        "19_json_nesting_bomb.fhrec": (raw(b"[" * 200_000 + b"]" * 200_000), "depth exceeds the limit of 400"),
        "20_bad_zlib.fhrec": (header(flags=1, stored=20, decoded=20) + b"\x78\x9c" + b"\xff" * 18, "corrupt compressed"),
        "21_value_nesting_bomb.fhrec": (with_doc(_set(["outcome", "value"], nested_list(150))), "deeper than"),
        "22_unknown_tag.fhrec": (with_doc(_set(["outcome", "value"], {"t": "evil", "cmd": "rm -rf /"})),
                                 "unknown value tag"),
        "23_pickle_in_args.fhrec": (with_doc(_set(["call", "args"], {"t": "tuple", "items": [_pickle_tree()]})),
                                    "pickle payload"),
        "24_pickle_in_globals.fhrec": (with_doc(_set(["globals", "x"], _pickle_tree())), "pickle payload"),
        "25_pickle_as_npy.fhrec": (with_doc(_set(["outcome", "value"], {
            "t": "ndarray", "id": 0, "npy": base64.b64encode(pickle.dumps(_Exploit())).decode()})), ".npy format"),
        "26_bad_base64.fhrec": (with_doc(_set(["outcome", "value"], {"t": "bytes", "v": "!!!not base64!!!"})),
                                "malformed base64"),
        "27_forward_ref.fhrec": (with_doc(_set(["outcome", "value"], {"t": "ref", "id": 5})), "undefined id"),
        "28_id_out_of_sequence.fhrec": (with_doc(_set(["outcome", "value"], {"t": "list", "id": 7, "items": []})),
                                        "out of sequence"),
        "29_int_injection.fhrec": (with_doc(_set(["outcome", "value"], {"t": "int", "v": "__import__('os')"})),
                                   "malformed integer"),
        "30_int_too_long.fhrec": (with_doc(_set(["outcome", "value"], {"t": "int", "v": "f" * 200_001})),
                                  "malformed integer"),
        "31_module_injection.fhrec": (with_doc(_set(["globals", "os"], {"t": "module", "name": "os; rm -rf /"})),
                                      "invalid module name"),
        "32_global_injection.fhrec": (with_doc(_set(["globals", "f"], {
            "t": "global", "module": "builtins", "qualname": "__import__('os').system"})), "invalid qualified name"),
        "33_missing_outcome.fhrec": (with_doc(lambda d: d.pop("outcome")), "outcome"),
        "34_unknown_field.fhrec": (with_doc(_set(["__reduce__"], "exec")), "unknown fields"),
        "35_wrong_kind.fhrec": (with_doc(_set(["kind"], "pickle")), "kind is not framehook-record"),
        "36_format_disagrees.fhrec": (with_doc(_set(["format"], [1, 7])), "disagrees with the header"),
        "37_bad_code_kind.fhrec": (with_doc(_set(["code", "kind"], "exec")), "code.kind"),
        "38_bad_events.fhrec": (with_doc(_set(["outcome", "events"], [["exec", None]])), "outcome.events"),
        "39_unhashable_key.fhrec": (with_doc(_set(["outcome", "value"], {
            "t": "dict", "id": 0, "items": [[{"t": "list", "id": 1, "items": []}, None]]})), "unhashable"),
        "40_empty_cell_outside.fhrec": (with_doc(_set(["outcome", "value"], {"t": "empty_cell"})),
                                        "empty_cell outside"),
        "41_bad_float.fhrec": (with_doc(_set(["outcome", "value"], {"t": "float", "v": "1e999999; os"})),
                               "malformed float"),
        "42_translator_nesting.fhrec": (with_doc(_set(["translator"], json.loads("[" * 80 + "]" * 80))),
                                        "must be an object"),
        "43_deep_translator.fhrec": (with_doc(_set(["translator"], {"a": json.loads("[" * 80 + "]" * 80)})),
                                     "nests too deeply"),
        "44_bad_code_flags.fhrec": (with_doc(_set(["code", "flags"], 0x20)), "code.flags"),
        "45_invalid_utf8.fhrec": (raw(b'{"kind": "\xff\xfe"}'), "not valid JSON"),
        "46_extra_value_field.fhrec": (with_doc(_set(["outcome", "value"], {"t": "int", "v": "1", "exec": "x"})),
                                       "unexpected fields"),
        "47_marshal_not_string.fhrec": (with_doc(_set(["code", "marshal"], {"t": "bytes", "v": ""})),
                                        "code.marshal"),
        "48_pickle_in_closure.fhrec": (with_doc(_set(["function", "closure"], [["x", _pickle_tree()]])),
                                       "pickle payload"),
        "49_numbers_as_values.fhrec": (with_doc(_set(["outcome", "value"], 12345)), "expected a tagged value"),
        "50_big_id.fhrec": (with_doc(_set(["outcome", "value"], {"t": "ref", "id": 10**12})),
                            "small non-negative integer"),
    }
    return cases


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("*.fhrec"):
        old.unlink()
    manifest = {}
    for name, (data, fragment) in build().items():
        (OUT / name).write_bytes(data)
        manifest[name] = fragment
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(manifest)} hostile files to {OUT}")


if __name__ == "__main__":
    main()
