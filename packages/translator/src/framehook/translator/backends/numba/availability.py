"""Is a usable numba installed? Missing, too old, or failing to import, the backend runs
every graph eager with a one-line FH016 note saying which (never an exception in the
user's call); ``require_numba`` is the strict form, raising InvalidBackendError."""

from __future__ import annotations

import re
from typing import Any, Optional, Tuple

from ...exc import InvalidBackendError

__all__ = ["NUMBA_EXTRA", "MIN_NUMBA_VERSION", "numba_or_reason", "require_numba"]

NUMBA_EXTRA = "framehook-translator[numba]"
#: the oldest numba the backend supports (the extra's pin in pyproject.toml)
MIN_NUMBA_VERSION = (0, 60)


def _version(text: str) -> Tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


def numba_or_reason() -> Tuple[Any, Optional[str]]:
    """(the numba module, None), or (None, one line saying why it cannot be used)."""
    install = f'install it with: pip install "{NUMBA_EXTRA}"'
    try:
        import numba
    except ImportError:
        return None, f"the numba package is not installed; {install}"
    except Exception as e:  # noqa: BLE001 - a broken install must not reach the user
        first = (str(e).strip().splitlines() or [""])[0]
        return None, f"numba fails to import ({type(e).__name__}: {first})"[:300]
    version = str(getattr(numba, "__version__", "0"))
    try:
        too_old = _version(version) < MIN_NUMBA_VERSION
    except ValueError:
        too_old = True
    if too_old:
        need = ".".join(map(str, MIN_NUMBA_VERSION))
        return None, f"numba {version} is older than {need}, the oldest the backend supports; {install}"
    return numba, None


def require_numba() -> Any:
    """The numba module, or an InvalidBackendError naming the extra that installs it."""
    numba, why = numba_or_reason()
    if numba is None:
        raise InvalidBackendError(f"the 'numba' backend cannot run: {why}")
    return numba
