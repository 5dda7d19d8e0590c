"""Lists in a cause's summary, bounded, and counted nouns."""

from __future__ import annotations

MAX_LISTED = 6


def fmt_list(items: list[str], limit: int = MAX_LISTED) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
