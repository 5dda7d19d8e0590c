"""How a `file:line` is shown in text: short, and the same on every machine.

Only the display changes; causes and JSON keep the path as recorded, since the diagnosis tells
user code from library code by it.
"""

from __future__ import annotations

import os
import re

__all__ = ["short_location"]

# An installed package's file is shown from its package (`torch_xla/core/xla_model.py`): the
# machine's own prefix says nothing to a reader of the report on another machine.
_INSTALLED = re.compile(r"^.*?[/\\](?:site|dist)-packages[/\\]")


def short_location(loc: str) -> str:
    """`/usr/lib/python3/site-packages/torch/x.py:3` -> `torch/x.py:3`; a path under the current
    directory relative to it; anything else as it is."""
    path, sep, line = loc.rpartition(":")
    if not sep or not line.isdigit():
        path, line = loc, ""
    if "-packages" in path:
        path = _INSTALLED.sub("", path)
    elif os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:
            rel = path
        if not rel.startswith(".."):
            path = rel
    return f"{path}:{line}" if line else path
