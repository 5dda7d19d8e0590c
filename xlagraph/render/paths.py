"""How a `file:line` is shown: short, and the same on every machine.

Paths are shown in their portable form (`xlagraph.source_paths.portable_path`): an installed
package's file from its package (`torch_xla/core/xla_model.py`), the standard library's from its
module, a path under the current directory relative to it. A capture records them in that form
already; a raw dump's absolute paths are shortened here.
"""

from __future__ import annotations

from xlagraph.source_paths import portable_path

__all__ = ["short_location"]


def short_location(loc: str) -> str:
    """`/usr/lib/python3/site-packages/torch/x.py:3` -> `torch/x.py:3`; a path under the current
    directory relative to it; anything else as it is."""
    path, sep, line = loc.rpartition(":")
    if not sep or not line.isdigit():
        path, line = loc, ""
    path = portable_path(path)
    return f"{path}:{line}" if line else path
