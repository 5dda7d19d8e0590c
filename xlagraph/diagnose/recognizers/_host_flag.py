"""A plain Python flag that a value read on the host sets: the traced code tests the name
(`inp = gold if teacher_forcing else pred`, or `if hard_mode:` around the work) and the loop
assigns it under a test that reads a tensor on the host (`if teacher_forcing and value < t:
teacher_forcing = False`, `value = loss.item()` above) or from such a read (`hard = acc.item() >
t`). The host read decides which code the step traces, as `if loss.item() > t:` around the work
does, only a step later: the same bug, the same fix (decide on the device with torch.where)."""

from __future__ import annotations

import ast

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._set_before import read_into, set_before
from xlagraph.diagnose.recognizers._statements import enclosing, loads, reads_on_host, stores, syntax_tree

__all__ = ["flag_set_on_host", "flag_setters", "flag_test"]

# Conversions that read a tensor's value on the host when handed one (`float(loss)`): counted
# in the setter's test only, where the flag rule already asks for a tensor's value.
_CONVERSIONS = frozenset({"float", "bool"})
Assignment = ast.Assign | ast.AnnAssign


def flag_test(location: str) -> tuple[str, int, frozenset[str]]:
    """(file, line of the test, the names tested) where `location`'s statement holds an inline
    `a if flag else b` testing plain names, else where the nearest `if` whose block holds it
    does (`if hard_mode:`, `if not warm:`); ("", 0, ∅) otherwise. Only plain names: an
    attribute (`self.training`) is a module's state, which other rules own."""
    file, line = split_location(location)
    chain = enclosing(file, line) if file and line else []
    if not chain:
        return "", 0, frozenset()
    stmt = chain[-1][0]
    if not isinstance(stmt, ast.If):
        inline = [n for n in ast.walk(stmt) if isinstance(n, ast.IfExp) and _spans(n, line)]
        names = next((found for n in inline if (found := _plain_names(n.test))), frozenset())
        if names:
            return file, line, names
    ifs = [
        s
        for s, _ in chain
        if isinstance(s, ast.If)
        and any(b.lineno <= line <= (b.end_lineno or b.lineno) for b in (*s.body, *s.orelse))
    ]
    if ifs and (names := _plain_names(ifs[-1].test)):
        return file, ifs[-1].lineno, names
    return "", 0, frozenset()


def flag_set_on_host(file: str, names: frozenset[str]) -> tuple[str, ...]:
    """`file:line`s that set one of `names` from a host read: the `if` whose test reads a tensor
    on the host (itself or through a name set from `.item()` above it) and the assignment in its
    block, or an assignment whose value reads one; () when no assignment of them does."""
    tree = syntax_tree(file) if names else None
    if tree is None:
        return ()
    found: list[int] = []
    for guard in (s for s in ast.walk(tree) if isinstance(s, ast.If)):
        if not (_host_test(guard.test) or read_into(file, guard)):
            continue
        sets = [s.lineno for b in (*guard.body, *guard.orelse) for s in _assignments(b, names)]
        if sets:
            found += [guard.lineno, *sets]
    for s in _assignments(tree, names):
        if _host_test(s.value):
            found.append(s.lineno)
        elif reads := _read_above(file, s):
            found += [*reads, s.lineno]
    return tuple(f"{file}:{n}" for n in dict.fromkeys(found))


def flag_setters(site: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """(the flag names, `flag_set_on_host`'s lines) for the test at `site`: an `if` or an inline
    `a if flag else b` there testing plain names that a host read sets; (∅, ()) otherwise."""
    file, line = split_location(site)
    chain = enclosing(file, line) if file and line else []
    if not chain:
        return frozenset(), ()
    stmt = chain[-1][0]
    if isinstance(stmt, ast.If) and stmt.lineno == line:
        names = _plain_names(stmt.test)
    else:
        inline = [n for n in ast.walk(stmt) if isinstance(n, ast.IfExp) and _spans(n, line)]
        names = next((found for n in inline if (found := _plain_names(n.test))), frozenset())
    setters = flag_set_on_host(file, names)
    return (names, setters) if setters else (frozenset(), ())


def _spans(node: ast.expr, line: int) -> bool:
    return node.lineno <= line <= (node.end_lineno or node.lineno)


def _read_above(file: str, stmt: Assignment) -> list[int]:
    """The lines just above the assignment that set a name its value reads from a host read
    (`value = loss.item()` over `done = value < t`), or []."""
    chain = enclosing(file, stmt.lineno)
    if not chain or chain[-1][0].lineno != stmt.lineno or stmt.value is None:
        return []
    lines = set(set_before(chain, loads(stmt.value)))
    return sorted(s.lineno for s in _assignments(chain[0][0]) if s.lineno in lines and _host_test(s.value))


def _plain_names(test: ast.expr) -> frozenset[str]:
    """The names of a test made of plain names only (`flag`, `not flag`, `a and not b`)."""
    if isinstance(test, ast.Name):
        return frozenset({test.id})
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _plain_names(test.operand)
    if isinstance(test, ast.BoolOp):
        parts = [_plain_names(v) for v in test.values]
        return frozenset().union(*parts) if all(parts) else frozenset()
    return frozenset()


def _assignments(node: ast.AST, names: frozenset[str] | None = None) -> list[Assignment]:
    """The assignments with a value under `node`; with `names`, those that bind one of them
    (`flag = False`, `flag: bool = x > t`, `flag, n = ...`)."""
    return [
        s
        for s in ast.walk(node)
        if isinstance(s, (ast.Assign, ast.AnnAssign))
        and s.value is not None
        and (names is None or stores(s) & names)
    ]


def _host_test(node: ast.AST | None) -> bool:
    """`node` reads a tensor on the host: `.item()`, `.tolist()`, ... or `float(x)`/`bool(x)` of
    something that is not a literal."""
    if node is None:
        return False
    return reads_on_host(node) or any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in _CONVERSIONS
        and len(n.args) == 1
        and not isinstance(n.args[0], ast.Constant)
        for n in ast.walk(node)
    )
