"""Allowlisted registry of extra value codecs.

Only types registered here (exact type, no subclasses) are encoded beyond the built-in
kinds; everything else becomes a named placeholder. Types are keyed by their import
path ("module:qualname") so registering a codec never imports its module, and decoding
looks codecs up by name only: a record can name a codec, never supply one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


@dataclass(frozen=True)
class Codec:
    name: str  # stored in the record: {"t": "ext", "codec": name, "v": ...}
    type_path: str  # "module:qualname" of the exact type handled
    encode: Callable[[Any], Any]  # obj -> a value the encoder can encode
    decode: Callable[[Any], Any]  # decoded value -> obj


_BY_TYPE: dict[str, Codec] = {}
_BY_NAME: dict[str, Codec] = {}


def type_path(tp: type) -> str:
    return f"{tp.__module__}:{tp.__qualname__}"


def register_codec(
    tp: "type | str", name: str, encode: Callable[[Any], Any], decode: Callable[[Any], Any], *, replace: bool = False
) -> Codec:
    """Allow values of exactly type ``tp`` in records, under the codec name ``name``.

    ``encode(obj)`` returns a value made of encodable kinds; ``decode(value)`` rebuilds
    the object from it. Decoding runs only when a record is replayed.
    """
    path = tp if isinstance(tp, str) else type_path(tp)
    if not _NAME.match(name):
        raise ValueError(f"invalid codec name {name!r}")
    if not replace and (name in _BY_NAME or path in _BY_TYPE):
        raise ValueError(f"a codec for {path} or named {name!r} is already registered")
    codec = Codec(name, path, encode, decode)
    old = _BY_NAME.pop(name, None)
    if old is not None:
        _BY_TYPE.pop(old.type_path, None)
    _BY_TYPE[path] = codec
    _BY_NAME[name] = codec
    return codec


def unregister_codec(name: str) -> None:
    codec = _BY_NAME.pop(name, None)
    if codec is not None:
        _BY_TYPE.pop(codec.type_path, None)


def codec_for_object(obj: Any) -> Codec | None:
    return _BY_TYPE.get(type_path(type(obj)))


def codec_named(name: str) -> Codec | None:
    return _BY_NAME.get(name)


def registered_codecs() -> list[str]:
    return sorted(_BY_NAME)


# -- codecs shipped with framehook: standard-library value types -------------------------


def _lazy(module: str, attr: str) -> Callable[..., Any]:
    """A constructor resolved at decode time, so registration imports nothing."""

    def build(*args: Any) -> Any:
        import importlib

        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj(*args)

    return build


def _namespace(attrs: Any) -> Any:
    import types

    return types.SimpleNamespace(**attrs)


def _register_defaults() -> None:
    register_codec("builtins:range", "range", lambda r: (r.start, r.stop, r.step), lambda v: range(*v))
    register_codec("builtins:slice", "slice", lambda s: (s.start, s.stop, s.step), lambda v: slice(*v))
    register_codec(
        "fractions:Fraction",
        "fraction",
        lambda f: (f.numerator, f.denominator),
        lambda v: _lazy("fractions", "Fraction")(*v),
    )
    register_codec("decimal:Decimal", "decimal", str, lambda v: _lazy("decimal", "Decimal")(v))
    register_codec(
        "datetime:date", "date", lambda d: d.isoformat(), lambda v: _lazy("datetime", "date.fromisoformat")(v)
    )
    register_codec(
        "datetime:datetime",
        "datetime",
        lambda d: d.isoformat(),
        lambda v: _lazy("datetime", "datetime.fromisoformat")(v),
    )
    register_codec(
        "datetime:timedelta",
        "timedelta",
        lambda d: (d.days, d.seconds, d.microseconds),
        lambda v: _lazy("datetime", "timedelta")(*v),
    )
    register_codec(
        "collections:OrderedDict",
        "ordereddict",
        lambda d: list(d.items()),
        lambda v: _lazy("collections", "OrderedDict")(v),
    )
    register_codec(
        "collections:deque", "deque", lambda d: (list(d), d.maxlen), lambda v: _lazy("collections", "deque")(*v)
    )
    register_codec(
        "collections:defaultdict",
        "defaultdict",
        lambda d: (d.default_factory, dict(d)),
        lambda v: _lazy("collections", "defaultdict")(*v),
    )
    register_codec("types:SimpleNamespace", "namespace", lambda n: dict(vars(n)), _namespace)
    register_codec("re:Pattern", "re.pattern", lambda p: (p.pattern, p.flags), lambda v: _lazy("re", "compile")(*v))
    register_codec(
        "functools:partial",
        "partial",
        lambda p: (p.func, p.args, p.keywords),
        lambda v: _lazy("functools", "partial")(v[0], *v[1], **v[2]),
    )
    register_codec(
        "operator:itemgetter",
        "itemgetter",
        lambda g: g.__reduce__()[1],
        lambda v: _lazy("operator", "itemgetter")(*v),
    )
    register_codec(
        "operator:attrgetter",
        "attrgetter",
        lambda g: g.__reduce__()[1],
        lambda v: _lazy("operator", "attrgetter")(*v),
    )
    register_codec("uuid:UUID", "uuid", str, lambda v: _lazy("uuid", "UUID")(v))
    register_codec(
        "datetime:time", "time", lambda t: t.isoformat(), lambda v: _lazy("datetime", "time.fromisoformat")(v)
    )
    register_codec(
        "datetime:timezone",
        "timezone",
        lambda z: (z.utcoffset(None), z.tzname(None)),
        lambda v: _lazy("datetime", "timezone")(*v),
    )
    register_codec("collections:Counter", "counter", lambda c: dict(c), lambda v: _lazy("collections", "Counter")(v))
    register_codec(
        "collections:ChainMap", "chainmap", lambda c: list(c.maps), lambda v: _lazy("collections", "ChainMap")(*v)
    )
    # the classes of None, ... and NotImplemented: written by the encoder itself (their
    # instances are not what a codec is looked up by), decoded here by name
    register_codec(
        "framehook.records.codec:_SingletonTypes",
        "singleton_type",
        lambda obj: obj,
        lambda v: type({"None": None, "Ellipsis": Ellipsis, "NotImplemented": NotImplemented}[v]),
    )
    # pathlib's classes moved to pathlib._local in 3.13: one codec name, both type paths
    for cls in ("PurePath", "PurePosixPath", "PureWindowsPath", "Path", "PosixPath", "WindowsPath"):
        codec = register_codec(f"pathlib:{cls}", f"path.{cls}", str, _path_decoder(cls))
        _BY_TYPE[f"pathlib._local:{cls}"] = codec


def _path_decoder(cls: str) -> Callable[[Any], Any]:
    return lambda v: _lazy("pathlib", cls)(v)


_register_defaults()
