"""Which of a cause's `file:line`s are the user's, as the pages list them.

How one `file:line` is shown (short, the same on every machine) is
`xlagraph.source_paths.short_location`, which the diagnosis uses too.
"""

from __future__ import annotations

from xlagraph.source_paths import is_library_path

__all__ = ["split_user_lines"]


def split_user_lines(sources: tuple[str, ...], library: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(the user's `file:line`s, the library ones), each once, in order. A cause whose instructions
    carry no frame of the user's has its library lines as `sources`: they are not the user's."""
    from xlagraph.diagnose.frames import split_location  # only when causes are shown

    def lib(loc: str) -> bool:
        return is_library_path(split_location(loc)[0])

    user = [s for s in dict.fromkeys(sources) if not lib(s)]
    rest = [s for s in dict.fromkeys([*sources, *library]) if lib(s) or s not in user]
    return user, [s for s in rest if s not in user]
