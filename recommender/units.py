"""Units as people read them."""

from __future__ import annotations

__all__ = ["hours_text"]


def hours_text(hours: float) -> str:
    """A duration in hours as text: minutes under an hour, hours under two days, then days."""
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours / 24:.1f} d"
