"""Resource limits applied while a record is decoded, each checked before the memory is taken."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .errors import RecordLimitError, SourceLimitError

_MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Upper bounds for one record; the defaults are far above every record the project makes.

    file_bytes: size of the file; body_bytes: size of the decompressed JSON body;
    nodes: JSON values and object keys in the body (an empty array or object counts one);
    depth: nesting of JSON arrays and objects; array_elements / array_bytes: one numpy
    payload's element count and data size, taken from its .npy header; values: value-tree
    nodes in the trees replay decodes (each is rebuilt, run through and compared once per
    mode); source_bytes / source_tokens / source_nesting: the recorded source's size, its
    token count and an upper estimate of its deepest expression, checked before it is
    compiled (see sourcescan).
    """

    file_bytes: int = 64 * _MIB
    body_bytes: int = 64 * _MIB
    nodes: int = 500_000
    depth: int = 400
    array_elements: int = 1 << 24
    array_bytes: int = 64 * _MIB
    values: int = 100_000
    source_bytes: int = 4 * _MIB
    source_tokens: int = 100_000
    source_nesting: int = 1_000

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if type(value) is not int or value < 1:
                raise TypeError(f"Limits.{field.name}: expected a positive int, got {value!r}")

    def check(self, name: str, value: int, path: str | None = None) -> None:
        """Raise RecordLimitError if ``value`` is above the limit called ``name``."""
        if value > getattr(self, name):
            raise self.error(name, value, path)

    def error(self, name: str, value: int, path: str | None = None, *, partial: bool = False) -> RecordLimitError:
        """The error for ``value`` past the limit ``name``; its advice depends on whether the
        caller lowered the limit below its default."""
        return RecordLimitError(name, value, getattr(self, name), path, partial=partial, default=self._default(name))

    def source_error(
        self, name: str, value: int, filename: str, line: int | None, path: str | None, *, partial: bool = False
    ) -> SourceLimitError:
        return SourceLimitError(
            name, value, getattr(self, name), filename, line, path, partial=partial, default=self._default(name)
        )

    def _default(self, name: str) -> int | None:
        default = self.__dataclass_fields__[name].default
        return default if isinstance(default, int) else None

    def replace(self, **changes: int) -> "Limits":
        return dataclasses.replace(self, **changes)

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]


DEFAULT = Limits()


def parse_assignment(text: str) -> tuple[str, int]:
    """``"nodes=5000000"`` -> ("nodes", 5000000); ValueError naming what was expected."""
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or name not in Limits.names():
        raise ValueError(f"--limit {text!r}: expected NAME=VALUE with NAME one of {', '.join(Limits.names())}")
    try:
        number = int(value.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"--limit {text!r}: expected a positive integer value") from None
    if number < 1:
        raise ValueError(f"--limit {text!r}: expected a positive integer value")
    return name, number
