"""Lists in a cause's summary, bounded."""

from __future__ import annotations

MAX_LISTED = 6


def fmt_list(items: list[str], limit: int = MAX_LISTED) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
