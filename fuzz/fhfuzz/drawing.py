"""Hypothesis settings for drawing programs rather than testing a property of them."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, settings


def drawing(**overrides: Any) -> settings:
    """Generation only: no database, no deadline, no shrinking, and no health checks (the
    programs are large by design, and some draws are filtered out)."""
    return settings(
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        **overrides,
    )
