"""How a `file:line` is shown: short, and the same on every machine.

Paths are shown in their portable form (`xlagraph.source_paths.portable_path`): an installed
package's file from its package (`torch_xla/core/xla_model.py`), the standard library's from its
module, a path under the current directory relative to it. A capture records them in that form
already; a raw dump's absolute paths are shortened here.
"""

from __future__ import annotations

import re

from xlagraph.source_paths import portable_path

__all__ = ["short_location", "short_locations_in", "split_user_lines"]

# An absolute `file.py:N` inside prose (a cause's summary names the user's `if` line, say).
_IN_TEXT = re.compile(r"(?<![\w.])/[^\s:()`'\",;]+\.py(?::\d+)?")


def short_location(loc: str) -> str:
    """`/usr/lib/python3/site-packages/torch/x.py:3` -> `torch/x.py:3`; a path under the current
    directory relative to it; anything else as it is."""
    path, sep, line = loc.rpartition(":")
    if not sep or not line.isdigit():
        path, line = loc, ""
    path = portable_path(path)
    return f"{path}:{line}" if line else path


def short_locations_in(text: str) -> str:
    """Every absolute `path.py[:N]` in `text` shown as `short_location` shows it, so that a
    summary and the `at` line below it name a file the same way."""
    return _IN_TEXT.sub(lambda m: short_location(m.group(0)), text) if "/" in text else text


def split_user_lines(sources: tuple[str, ...], library: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(the user's `file:line`s, the library ones), each once, in order. A cause whose instructions
    carry no frame of the user's has its library lines as `sources`: they are not the user's."""
    from xlagraph.diagnose.frames import is_library  # only when causes are shown
    from xlagraph.ir import Frame

    def lib(loc: str) -> bool:
        path, _, line = loc.rpartition(":")
        return is_library(Frame("", path if line.isdigit() else loc, 0))

    user = [s for s in dict.fromkeys(sources) if not lib(s)]
    rest = [s for s in dict.fromkeys([*sources, *library]) if lib(s) or s not in user]
    return user, [s for s in rest if s not in user]
