"""The calls of a user's helper that run on some steps only: the graph's metadata names the
innermost frame of an op (a line of `_loss`, which both the step's loss and the validation under
`if run_val:` call), not which call made it. Of the helper's calls in its file, those under an
`if` (in the caller's own function) are where work appears on some calls, where others call it
unguarded on every call."""

from __future__ import annotations

import ast

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._statements import Function, call_name, enclosing, syntax_tree

__all__ = ["guarded_calls"]


def _guard(file: str, call: ast.Call) -> ast.If | None:
    """The nearest `if` around `call` (in its block, not its test) inside the caller's own
    function; None when the call runs whenever its function does."""
    chain = enclosing(file, call.lineno)
    found: ast.If | None = None
    for stmt, _ in chain:
        if isinstance(stmt, Function):
            found = None  # only the `if`s of the innermost function count
        elif isinstance(stmt, ast.If) and not stmt.test.lineno <= call.lineno <= (stmt.test.end_lineno or 0):
            # `if __name__ == "__main__":` runs the script, it decides no step's work
            found = None if "__name__" in ast.unparse(stmt.test) else stmt
    return found


def guarded_calls(location: str) -> list[str]:
    """`file:line` of the call and then of its `if`, for each call of the function that holds
    `location` that sits under an `if`, where the same file also calls that function unguarded;
    [] otherwise (one call only, all guarded, none found: nothing tells the calls apart)."""
    file, line = split_location(location)
    tree = syntax_tree(file) if file and line else None
    chain = enclosing(file, line) if tree is not None else []
    functions = [s for s, _ in chain if isinstance(s, Function)]
    if tree is None or not functions:
        return []
    function = functions[-1]
    inside = range(function.lineno, (function.end_lineno or function.lineno) + 1)
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and call_name(n.func) == function.name and n.lineno not in inside
    ]
    guards = {id(c): _guard(file, c) for c in calls}
    guarded = sorted((c for c in calls if guards[id(c)] is not None), key=lambda c: c.lineno)
    if not guarded or len(guarded) == len(calls):
        return []
    lines = [n for c in guarded for n in (c.lineno, guards[id(c)].lineno)]  # type: ignore[union-attr]
    return [f"{file}:{n}" for n in dict.fromkeys(lines)]
