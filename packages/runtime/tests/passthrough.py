"""The runtime's public pass-through callback under the name the runtime's tests import
(importable without pytest, so subprocess runners do not drag in pytest's monkeypatches)."""

from __future__ import annotations

from framehook.runtime.passthrough import PassThrough, always as always_true  # noqa: F401
