"""A module made mid-run and used once it exists: `if self.head is not None:` around its use, and
`self.head = nn.Linear(...)` in a method the loop calls (not `__init__`), often joined to the
optimizer there (`add_param_group`). The work under that `if` is new weights, not a condition
that flips: from that step on the graph takes them as inputs and returns their updates.
"""

from __future__ import annotations

import ast

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._source import BUILDERS
from xlagraph.diagnose.recognizers._statements import (
    calls_of,
    enclosing,
    enclosing_function,
    on_self,
    statements_where,
)

__all__ = ["created_late"]

_NEAR = 5  # lines from the module's creation to where it joins the optimizer


def created_late(site: str, files: list[str]) -> tuple[str, ...]:
    """For the `if` (or `elif`) at `site` (`file:line`) testing `self.x is not None`: the
    statement of `files` (its own file first) that sets `self.x` to something other than None
    outside the methods that build the object, and the call near it that adds it to the
    optimizer (`add_param_group`), if any; () when the `if` tests nothing made late."""
    file, line = split_location(site)
    test = next(
        (s.test for s, _ in enclosing(file, line) if isinstance(s, ast.If) and s.lineno == line), None
    )
    if not isinstance(test, ast.Compare) or not on_self(test.left):
        return ()
    attr = f"self.{test.left.attr}"  # type: ignore[attr-defined]
    if ast.unparse(test) != f"{attr} is not None":
        return ()

    def sets(stmt: ast.stmt) -> bool:  # `self.x = ...` or `self.x: T = ...`, not to None
        first = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        return value is not None and ast.unparse(first) == attr and ast.unparse(value) != "None"  # type: ignore[arg-type]

    for where in dict.fromkeys([file, *files]):
        for at in statements_where([where], sets, limit=10_000):
            n = split_location(at)[1]
            if enclosing_function(where, n) not in BUILDERS:
                joins = [
                    c
                    for c in calls_of("add_param_group", [where], 10_000)
                    if 0 < split_location(c)[1] - n < _NEAR
                ]
                return (at, *joins[:1])
    return ()
