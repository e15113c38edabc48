"""Is a usable numba installed? Missing, too old, or failing to import, the backend runs
every graph eager with a one-line FH016 note saying which (never an exception in the
user's call); ``require_numba`` is the strict form, raising InvalidBackendError.

Importing numba takes a quarter of a second: ``numba_version`` answers from the installed
package's metadata without importing it, so that a graph's first call (which runs eager
while the kernel compiles in the background) does not pay for it; the import happens with
the compile, where a failure is a fallback too."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
from typing import Any, Optional, Tuple

from ...exc import InvalidBackendError

__all__ = ["NUMBA_EXTRA", "MIN_NUMBA_VERSION", "numba_or_reason", "numba_version", "require_numba"]

NUMBA_EXTRA = "framehook-translator[numba]"
#: the oldest numba the backend supports (the extra's pin in pyproject.toml)
MIN_NUMBA_VERSION = (0, 60)


def _version(text: str) -> Tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


_INSTALL = f'install it with: pip install "{NUMBA_EXTRA}"'
_metadata_version: Optional[str] = None


@functools.lru_cache(maxsize=None)  # asked at every graph's compile
def _too_old(version: str) -> Optional[str]:
    try:
        old = _version(version) < MIN_NUMBA_VERSION
    except ValueError:
        old = True
    if not old:
        return None
    need = ".".join(map(str, MIN_NUMBA_VERSION))
    return f"numba {version} is older than {need}, the oldest the backend supports; {_INSTALL}"


def _dist_info_version(spec: Any) -> Optional[str]:
    """The version in the name of the one ``numba-<version>.dist-info`` directory beside the
    package (where pip puts it), or None. ``importlib.metadata`` reads the same but scans
    every ``sys.path`` entry first: 10-15 ms of a graph's first call."""
    for location in spec.submodule_search_locations or ():
        parent = os.path.dirname(os.path.abspath(location))
        try:
            names = [n for n in os.listdir(parent) if n.lower().startswith("numba-") and n.endswith(".dist-info")]
        except OSError:
            return None
        if len(names) == 1:  # several (a stale install): let importlib.metadata choose
            version = names[0][len("numba-") : -len(".dist-info")]
            return version if re.fullmatch(r"\d+(\.\d+)+\S*", version) else None
        return None
    return None


def numba_version() -> Tuple[Optional[str], Optional[str]]:
    """(numba's version, None), or (None, why numba cannot be used), without importing it
    when it is not imported yet (a broken install is then found when the kernel compiles)."""
    global _metadata_version
    module = sys.modules.get("numba", sys)
    if module is None:  # an import known to fail
        return None, f"the numba package is not installed; {_INSTALL}"
    if module is not sys:
        version = str(getattr(module, "__version__", "0"))
    else:
        try:
            spec = importlib.util.find_spec("numba")
        except Exception as e:  # noqa: BLE001 - a broken install must not reach the user
            first = (str(e).strip().splitlines() or [""])[0]
            return None, f"numba fails to import ({type(e).__name__}: {first})"[:300]
        if spec is None:
            return None, f"the numba package is not installed; {_INSTALL}"
        if _metadata_version is None:
            _metadata_version = _dist_info_version(spec)
        if _metadata_version is None:
            try:
                from importlib import metadata  # not at import: it costs 30 ms

                _metadata_version = metadata.version("numba")
            except Exception:  # noqa: BLE001 - no metadata: import it to know
                numba, why = numba_or_reason()
                return (None, why) if numba is None else (str(numba.__version__), None)
        version = _metadata_version
    why = _too_old(version)
    return (None, why) if why else (version, None)


def numba_or_reason() -> Tuple[Any, Optional[str]]:
    """(the numba module, None), or (None, one line saying why it cannot be used)."""
    try:
        import numba
    except ImportError:
        return None, f"the numba package is not installed; {_INSTALL}"
    except Exception as e:  # noqa: BLE001 - a broken install must not reach the user
        first = (str(e).strip().splitlines() or [""])[0]
        return None, f"numba fails to import ({type(e).__name__}: {first})"[:300]
    why = _too_old(str(getattr(numba, "__version__", "0")))
    return (None, why) if why else (numba, None)


def require_numba() -> Any:
    """The numba module, or an InvalidBackendError naming the extra that installs it."""
    numba, why = numba_or_reason()
    if numba is None:
        raise InvalidBackendError(f"the 'numba' backend cannot run: {why}")
    return numba
