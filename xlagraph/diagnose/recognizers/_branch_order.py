"""An `if` that decides an order: its two branches run the same statements in another order
(`if peak_first: a(); b()` / `else: b(); a()`), so the tensors they update come out in the order
the test picks. Read from the stored file's syntax tree."""

from __future__ import annotations

import ast

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._statements import SCOPES, enclosing

__all__ = ["branch_order"]


def _reordered(stmt: ast.If) -> bool:
    """Body and `else` hold the same statements (as code, wherever they sit), in another order."""
    body = [ast.dump(s) for s in stmt.body]
    other = [ast.dump(s) for s in stmt.orelse]
    return len(body) >= 2 and body != other and sorted(body) == sorted(other)


def branch_order(location: str) -> list[str]:
    """`file:line` of the innermost `if` around `location`, inside its function, whose branches
    run the same statements in another order; [] when there is none."""
    file, line = split_location(location)
    if not file or not line:
        return []
    for stmt, _ in reversed(enclosing(file, line)):
        if isinstance(stmt, SCOPES):
            break
        if isinstance(stmt, ast.If) and _reordered(stmt):
            return [f"{file}:{stmt.lineno}"]
    return []
