"""Version of the distribution and of the API that other framehook packages build on."""
from __future__ import annotations

__version__ = "0.1.0"

#: Bumped whenever a change to the public API or the C event ABI would break a package
#: built against an earlier one.
API_VERSION = 1


def require_api(min_version: int, package: str) -> None:
    """Raise ImportError unless this runtime offers at least API ``min_version``.

    Packages that depend on the runtime call this at import, so a mismatch is reported
    with both versions instead of surfacing later as an obscure failure.
    """
    if not isinstance(min_version, int) or isinstance(min_version, bool):
        raise TypeError(f"require_api() argument 'min_version' must be an int, not {type(min_version).__name__}")
    if not isinstance(package, str):
        raise TypeError(f"require_api() argument 'package' must be a str, not {type(package).__name__}")
    if API_VERSION < min_version:
        raise ImportError(
            f"{package} needs framehook-runtime API {min_version} or newer, but the installed "
            f"framehook-runtime {__version__} provides API {API_VERSION}; upgrade framehook-runtime"
        )
