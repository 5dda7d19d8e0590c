"""Where the names a statement of the user's code reads were set just before it: the nearest
assignment of each in the blocks around it (up to its loop or function), the in-place
reorderings after it and the `if`s that rebind it on some steps (`set_before`); and the host
reads a guard's test depends on through such names (`read_into`).
"""

from __future__ import annotations

import ast

from xlagraph.diagnose.recognizers._statements import LOOPS, SCOPES, enclosing, loads, reads_on_host, stores

__all__ = ["read_into", "set_before"]


def _mutates(stmt: ast.stmt, names: set[str]) -> bool:
    """A bare call that can reorder a sequence in place: a method of one of `names`
    (`order.reverse()`, `keys.sort(key=...)`) or a call that takes one of them
    (`random.shuffle(order)`)."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    call = stmt.value
    if (
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id in names
    ):
        return True
    return any(isinstance(a, ast.Name) and a.id in names for a in call.args)


def _under_if(stmt: ast.stmt, names: set[str]) -> list[int]:
    """An `if` whose body (or `else`) rebinds or reorders one of `names` (`if step % 2 == 1:
    order.reverse()`): its header and those lines, which decide on which steps the sequence
    differs. The name stays wanted: on the other steps the assignment above holds."""
    if not isinstance(stmt, ast.If):
        return []
    inner = [
        s.lineno
        for s in ast.walk(stmt)
        if isinstance(s, ast.stmt) and s is not stmt and (stores(s) & names or _mutates(s, names))
    ]
    return [stmt.lineno, *inner] if inner else []


def set_before(chain: list[tuple[ast.stmt, list[ast.stmt]]], names: set[str]) -> list[int]:
    """Lines of the statements before `chain[-1]` that set one of `names` for it: the nearest
    assignment of each name, the in-place reorderings of it after that assignment and the `if`s
    that rebind or reorder it on some steps (`_under_if`). Searched
    in the blocks around it up to the body of the nearest loop or function that encloses it
    (an assignment outside the loop that runs each step decides no step's order)."""
    found: list[int] = []
    wanted = set(names)
    for depth in range(len(chain) - 1, -1, -1):
        stmt, block = chain[depth]
        for before in reversed(block[: block.index(stmt)]):
            if not wanted:
                return sorted(found)
            bound = stores(before) & wanted
            if bound or _mutates(before, wanted):
                found.append(before.lineno)
            else:
                found += _under_if(before, wanted)
            wanted -= bound
        if depth and isinstance(chain[depth - 1][0], LOOPS + SCOPES):
            break
    return sorted(found)


def read_into(file: str, guard: ast.If) -> list[int]:
    """Lines above `guard` in its loop or function that set a name its test reads from a value
    read on the host (`value = gnorm.item()`, then `if value > MAX_NORM:`): the test decides on a
    tensor's value as surely as `if gnorm.item() > MAX_NORM:` does."""
    chain = enclosing(file, guard.lineno)
    # compared by place, not identity: the parse cache may hand back another tree of the file
    inner = chain[-1][0] if chain else None
    if not isinstance(inner, ast.If) or (inner.lineno, inner.col_offset) != (guard.lineno, guard.col_offset):
        return []
    lines = set(set_before(chain, loads(guard.test)))
    return sorted(
        s.lineno
        for s in ast.walk(chain[0][0])
        if isinstance(s, (ast.Assign, ast.AnnAssign))
        and s.lineno in lines
        and s.value is not None
        and reads_on_host(s.value)
    )
