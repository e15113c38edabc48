"""Import paths shared by run.py and record_golden.py."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GOLDEN = HERE / "golden"


def setup() -> None:
    """Make the case package importable, and framehook.records when it is not installed."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    try:
        import framehook.records  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "packages" / "records" / "src"))
