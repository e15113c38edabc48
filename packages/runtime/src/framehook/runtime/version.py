"""Version of the distribution and of the API that other framehook packages build on."""

from __future__ import annotations

__version__ = "0.2.0"

#: Bumped whenever the public API or the C event ABI changes in a way that another package
#: may depend on (a break, or an addition it needs): 2 added CallbackWrapper.
API_VERSION = 2


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
