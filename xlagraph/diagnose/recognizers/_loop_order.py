"""Where the order of the loop around a line is decided: the iterable's own statements before the
loop (entries popped or moved, a list reversed or rotated), the function that returned it, the
attribute of `self` it reads and the loops that filled it (`_statements` gives the statements
around a line; this follows one loop's iterable back through them).
"""

from __future__ import annotations

import ast

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._passed_in import decided_by_callers
from xlagraph.diagnose.recognizers._set_before import set_before
from xlagraph.diagnose.recognizers._statements import (
    LOOPS,
    SCOPES,
    Function,
    call_name,
    enclosing,
    is_range,
    loads,
    loop_targets,
    on_self,
    own_nodes,
    syntax_tree,
)

__all__ = ["loop_order"]


def loop_order(location: str, syncs: tuple[str, ...] = ()) -> list[str]:
    """Where the order of the loop around `location` is decided: the header of the innermost
    `for` that encloses it, then the lines just before it that set what it iterates (`names =
    list(d) if ... else list(reversed(d))`, `random.shuffle(order)`); and, when what it iterates
    comes from an outer loop's variable (`for p in model[name].parameters()` inside `for name in
    sorted(...)`), that loop's too. Before the header, the statements that move entries of what
    it iterates (`d.pop(k)` and `d[k] = v`: a dict's order is its insertion order). Not the
    training loop (the one around a sync line of `syncs`) nor a loop over `range(...)`, and never
    past the function the line is in. `[]` when there is no such loop."""
    file, line = split_location(location)
    if not file or not line:
        return []
    chain = enclosing(file, line)
    stops = {n for f, n in map(split_location, syncs) if f == file and n}
    found: list[int] = []
    follow: set[str] | None = None  # the names an inner cited loop iterates over
    for depth in range(len(chain) - 1, -1, -1):
        stmt = chain[depth][0]
        if isinstance(stmt, SCOPES):
            break
        if not isinstance(stmt, (ast.For, ast.AsyncFor)) or is_range(stmt.iter):
            continue
        if any(stmt.lineno <= n <= (stmt.end_lineno or stmt.lineno) for n in stops):
            break  # the loop that runs the steps
        if follow is not None and not follow & loop_targets(stmt):
            continue  # an outer loop the inner one's order does not read
        names = loads(stmt.iter)
        found += [
            *_passed_in(file, chain[:depth], names),
            *_entries_moved(chain[: depth + 1], names),
            stmt.lineno,
            *_returned_by(file, chain, stmt.iter),
            *set_before(chain[: depth + 1], names),
            *_set_on_self(chain, stmt.iter),
        ]
        follow = names
    return [f"{file}:{n}" for n in dict.fromkeys(found)]


def _passed_in(file: str, chain: list[tuple[ast.stmt, list[ast.stmt]]], names: set[str]) -> list[int]:
    """A loop over a parameter of a function `torch_xla.compile` traces: the caller decides its
    order where it sets the argument (`decided_by_callers`); first, as the deciding lines."""
    function = next((s for s, _ in reversed(chain) if isinstance(s, SCOPES)), None)
    return decided_by_callers(file, function, names) if isinstance(function, Function) else []


_ENTRY_CALLS = frozenset({"pop", "popitem", "setdefault", "update", "move_to_end", "insert", "remove"})


def _moves_entry(stmt: ast.stmt, names: set[str]) -> bool:
    """`stmt` takes an entry out of one of `names` or puts one in (a key set, deleted or popped),
    wherever in the statement the call sits (`fn, _ = regs.pop("l2")`)."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = stmt.targets if isinstance(stmt, (ast.Assign, ast.Delete)) else [stmt.target]
        if any(
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names
            for t in targets
        ):
            return True
    if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
        return False
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in _ENTRY_CALLS
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in names
        for n in ast.walk(stmt)
    )


def _entries_moved(chain: list[tuple[ast.stmt, list[ast.stmt]]], names: set[str]) -> list[int]:
    """Lines before `chain[-1]`, in the body of the loop or function around it, that move entries
    of what it iterates (a dict's key popped and set again, deleted, added), then the `if` that
    guards them: a dict iterates in insertion order, so these decide the order, not the loop."""
    found: list[int] = []
    for depth in range(len(chain) - 1, -1, -1):
        stmt, block = chain[depth]
        for before in block[: block.index(stmt)]:
            inner = [s for s in ast.walk(before) if isinstance(s, ast.stmt) and _moves_entry(s, names)]
            found += [s.lineno for s in inner]
            if inner and isinstance(before, ast.If):
                found.append(before.lineno)
        if depth and isinstance(chain[depth - 1][0], LOOPS + SCOPES):
            break
    return found


def _returned_by(file: str, chain: list[tuple[ast.stmt, list[ast.stmt]]], iterated: ast.expr) -> list[int]:
    """A loop over what a function of the user's returns (`for m in self.ordered_monitors():`,
    `for p in ordered(params):`): the lines of its `return`s (a `sorted(...)` by a key that
    changes) decide the order. Methods of the class around the loop, functions of the file."""
    owner = next((s for s, _ in reversed(chain) if isinstance(s, ast.ClassDef)), None)
    tree = syntax_tree(file)
    found: list[int] = []
    for call in (n for n in ast.walk(iterated) if isinstance(n, ast.Call)):
        f = call.func
        if isinstance(f, ast.Attribute) and on_self(f) and owner is not None:
            scope: list[ast.stmt] = owner.body
        elif isinstance(f, ast.Name) and tree is not None:
            scope = tree.body
        else:
            continue
        name = call_name(f)
        for fn in (s for s in scope if isinstance(s, Function) and s.name == name):
            found += [n.lineno for n in own_nodes(fn) if isinstance(n, ast.Return) and n.value is not None]
    return found[:2]


def _set_on_self(chain: list[tuple[ast.stmt, list[ast.stmt]]], iterated: ast.expr) -> list[int]:
    """Where the class around a method sets or reorders the attributes of `self` its loop
    iterates: `self.order = names[start:] + names[:start]` in `__init__` under `for name in
    self.order:`, `self.order.rotate(1)` or `self.meters[name] = self.meters.pop(name)` in
    another method. The object's state decides the order, wherever in the class it is kept."""
    attrs = {a.attr for a in ast.walk(iterated) if on_self(a)}
    owner = next((s for s, _ in reversed(chain) if isinstance(s, ast.ClassDef)), None)
    if not attrs or owner is None:
        return []
    found = []
    for node in ast.walk(owner):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value  # `self.order.rotate(1)`, `random.shuffle(self.order)`
            targets = [call.func.value] if isinstance(call.func, ast.Attribute) else []
            targets += call.args
        else:
            continue
        # `self.x = ...`, and `self.x[k] = ...` (an entry moved to the end of a dict)
        entry = isinstance(node, ast.Expr) or any(isinstance(t, ast.Subscript) for t in targets)
        targets = [t.value if isinstance(t, ast.Subscript) else t for t in targets]
        if any(on_self(t) and t.attr in attrs for t in targets):  # type: ignore[attr-defined]
            found.append(node.lineno)
            if entry:  # entries added one by one: the loop that adds them orders them
                found += _filling_loops(owner, node.lineno)
    return sorted(set(found))


def _filling_loops(owner: ast.ClassDef, line: int) -> list[int]:
    """The headers of the loops (not over `range`) around `line` in `owner`'s methods: `for name
    in sorted(state["callbacks"]):` around `self.callbacks.append(cb)` puts the entries in its
    iteration's order (sorted, reversed, a dict's or a set's)."""
    return [
        n.lineno
        for n in ast.walk(owner)
        if isinstance(n, (ast.For, ast.AsyncFor))
        and not is_range(n.iter)
        and n.lineno < line <= (n.end_lineno or n.lineno)
    ]
