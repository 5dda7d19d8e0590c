"""A module made mid-run and used once it exists: `if self.head is not None:` around its use, and
`self.head = nn.Linear(...)` in a method the loop calls (not `__init__`), often joined to the
optimizer there (`add_param_group`). The work under that `if` is new weights, not a condition
that flips: from that step on the graph takes them as inputs and returns their updates.
"""

from __future__ import annotations

import re

from xlagraph.diagnose.frames import source_line, source_lines, split_location
from xlagraph.diagnose.recognizers._source import BUILDERS, MAX_SCANNED_LINES, enclosing_function, source_text

__all__ = ["created_late"]

# `if self.head is not None:` (or `elif`): the test of a value made lazily.
_EXISTS = re.compile(r"^\s*(?:el)?if\s+(self\.\w+)\s+is\s+not\s+None\s*:")
_JOINS = re.compile(r"\.add_param_group\s*\(")
_NEAR = 5  # lines from the module's creation to where it joins the optimizer


def created_late(site: str, files: list[str]) -> tuple[str, ...]:
    """For the `if` at `site` (`file:line`) testing `self.x is not None`: the line of `files`
    (its own file first) that sets `self.x` to something other than None outside the methods
    that build the object, and the line near it that adds it to the optimizer, if any; () when
    the `if` tests nothing made late."""
    file, line = split_location(site)
    m = _EXISTS.match(source_text(site).split("#", 1)[0])
    if not m or not line:
        return ()
    assign = re.compile(rf"^\s*{re.escape(m.group(1))}\s*(?::[^=]+)?=(?!=)\s*(?!None\b)\S")
    for where in dict.fromkeys([file, *files]):
        for n, text in source_lines(where, MAX_SCANNED_LINES):
            if not assign.match(text.split("#", 1)[0]) or enclosing_function(where, n) in BUILDERS:
                continue
            joins = [
                f"{where}:{k}"
                for k in range(n + 1, n + _NEAR)
                if _JOINS.search(source_line(where, k).split("#", 1)[0])
            ]
            return (f"{where}:{n}", *joins[:1])
    return ()
