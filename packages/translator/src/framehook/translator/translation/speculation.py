"""The speculation log: decisions a translation made at given instructions, kept across
restarts so that a retry can avoid the speculation that failed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

from ..exc import InternalTranslatorError, SpeculationRestartAnalysis

__all__ = ["SpeculationEntry", "SpeculationLog"]


@dataclass
class SpeculationEntry:
    filename: str
    lineno: int
    instruction_pointer: int
    failed: bool = False
    reason: str = ""

    def fail_and_restart_analysis(self, reason: str = "") -> None:
        """Mark this speculation failed and restart; the retry sees ``failed``."""
        self.failed = True
        self.reason = reason
        raise SpeculationRestartAnalysis(reason or f"speculation at {self.filename}:{self.lineno} failed")


class SpeculationLog:
    """Entries in the order a translation reaches them; each attempt replays them from 0."""

    def __init__(self) -> None:
        self.entries: List[SpeculationEntry] = []
        self.index = 0

    def restart(self) -> None:
        self.index = 0

    def clear(self) -> None:
        self.entries.clear()
        self.index = 0

    def next(self, filename: str, lineno: int, instruction_pointer: int) -> SpeculationEntry:
        """The entry for this point of the translation (the same one on every attempt)."""
        if self.index < len(self.entries):
            entry = self.entries[self.index]
            if (entry.filename, entry.lineno, entry.instruction_pointer) != (filename, lineno, instruction_pointer):
                raise InternalTranslatorError(
                    f"speculation log diverged at entry {self.index}: expected "
                    f"{entry.filename}:{entry.lineno} (ip {entry.instruction_pointer}), got "
                    f"{filename}:{lineno} (ip {instruction_pointer}); translation is not deterministic"
                )
        else:
            entry = SpeculationEntry(filename, lineno, instruction_pointer)
            self.entries.append(entry)
        self.index += 1
        return entry
