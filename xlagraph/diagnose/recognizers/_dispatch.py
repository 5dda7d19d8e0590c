"""Calls of a function made through a table of functions (issue 37): `UPDATERS[name](state, x)`
over a module-level `UPDATERS = {"mean": ema_of_mean, "peak": peak_abs}` (a dict, list or tuple
literal), and `getattr(obj, "peak_abs")(...)` or `getattr(obj, name)(...)` under `for name in
("ema_of_mean", "peak_abs"):`. The call's line names no function, so a search by name
(`calls_of`) misses it; the table names each function it can reach, and every one of them is
called from that line, in the order of whatever picks the key."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from xlagraph.diagnose.recognizers._statements import lines_where, loop_targets

__all__ = ["calls_through_table"]


def _names(node: ast.expr) -> Iterator[str]:
    """The function names a table's entry holds: `f` and `mod.f` (a lambda or a call is not one)."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr


def _tables(tree: ast.Module, name: str) -> set[str]:
    """The module-level names bound to a dict, list or tuple literal that holds `name`."""
    found: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        if isinstance(value, ast.Dict):
            entries: list[ast.expr] = value.values
        elif isinstance(value, (ast.List, ast.Tuple)):
            entries = value.elts
        else:
            continue
        if any(name in _names(e) for e in entries):
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def _literal_strings(node: ast.expr) -> set[str]:
    """The strings of a literal tuple, list or set of strings (`("ema_of_mean", "peak_abs")`)."""
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set()
    return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _getattr_name(func: ast.expr) -> ast.expr | None:
    """The attribute name expression of `getattr(obj, NAME)` called as a function, else None."""
    if (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) >= 2
    ):
        return func.args[1]
    return None


def _lines(tree: ast.Module, name: str) -> Iterator[int]:
    tables = _tables(tree, name)
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            func = n.func
            attr = _getattr_name(func)
            if (
                isinstance(func, ast.Subscript)
                and isinstance(func.value, ast.Name)
                and func.value.id in tables
            ) or (isinstance(attr, ast.Constant) and attr.value == name):
                yield func.end_lineno or n.lineno
        # a loop variable over literal names that include `name`: `for n in ("a", "b"): getattr(m, n)()`
        if isinstance(n, (ast.For, ast.AsyncFor)) and name in _literal_strings(n.iter):
            variables = loop_targets(n)
            for c in (c for stmt in n.body for c in ast.walk(stmt) if isinstance(c, ast.Call)):
                attr = _getattr_name(c.func)
                if isinstance(attr, ast.Name) and attr.id in variables:
                    yield c.func.end_lineno or c.lineno


def calls_through_table(name: str, files: Iterable[str], limit: int = 3) -> list[str]:
    """`file:line` of the calls in `files` that reach the function `name` through a module-level
    table of functions that holds it, or through `getattr` with its name spelled out."""
    return lines_where(files, lambda tree: _lines(tree, name), limit)
