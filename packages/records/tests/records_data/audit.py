"""Shared helpers for the records tests (not a test module)."""

from __future__ import annotations

import sys

FORBIDDEN_EVENTS = (
    "exec",
    "compile",
    "import",
    "marshal.loads",
    "pickle.find_class",
    "os.system",
    "subprocess.Popen",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "ctypes.dlopen",
    "builtins.input",
    "socket.connect",
    "code.__new__",
    "function.__new__",
)


class AuditWatch:
    """Collects security-relevant audit events while active (audit hooks cannot be removed)."""

    installed = False
    active = False
    events: list = []

    @classmethod
    def install(cls) -> None:
        if not cls.installed:
            sys.addaudithook(cls._hook)
            cls.installed = True

    @classmethod
    def _hook(cls, event: str, args: tuple) -> None:
        if cls.active and event in FORBIDDEN_EVENTS:
            cls.events.append((event, repr(args)[:200]))

    def __enter__(self) -> "AuditWatch":
        self.install()
        AuditWatch.events = []
        AuditWatch.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        AuditWatch.active = False
