"""Where a Python value that is exactly 0 or ±1 on some steps is set (issue 37: "a Python value
that makes a term vanish or appear is named with its value and the line where it is computed").

`lam = 1.0` in the `else` of a mixup helper, read by `lam * x + (1 - lam) * x[perm]`: the line
that bakes the constant reads `lam`, but the step that changed is the one where the literal
assignment runs. Followed through a helper's tuple return (`x, lam = mixup(...)` above the loss)
and, where the literal sits under an `if` that tests a parameter, to the assignment of the
argument the caller passes (`alpha = ... else 0.0`)."""

from __future__ import annotations

import ast

from xlagraph.diagnose.recognizers._host_numbers import argument, assignment_in, calls_to, user_defs
from xlagraph.diagnose.recognizers._statements import (
    Function,
    enclosing,
    enclosing_at,
    function_around,
    loads,
    own_nodes,
    syntax_tree,
)

__all__ = ["special_value_origin"]

Chain = list[tuple[ast.stmt, list[ast.stmt]]]


def _literal(node: ast.expr) -> str:
    """The source of `node` when it is the number 0 or ±1 (`1.0`, `-1`), else ``."""
    inner = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) else node
    if (
        isinstance(inner, ast.Constant)
        and isinstance(inner.value, (int, float))
        and not isinstance(inner.value, bool)
        and abs(inner.value) in (0, 1)
    ):
        return ast.unparse(node)
    return ""


def _special_branch(value: ast.expr) -> str:
    """The 0/±1 literal `value` is, or one branch of its conditional expression is."""
    if isinstance(value, ast.IfExp):
        return _literal(value.body) or _literal(value.orelse)
    return _literal(value)


def _guard_origin(tree: ast.Module, file: str, line: int) -> list[int]:
    """For an assignment at `line` under an `if` whose test reads a parameter of its function:
    where each caller's argument for that parameter is assigned, if it is a 0/±1 branch
    (`alpha = args.alpha if warm else 0.0` passed to `mixup(x, y, alpha)`), else the call."""
    chain = enclosing(file, line)
    scope = function_around(file, line)
    if scope is None:
        return []
    params = {a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs}
    tested = {n for stmt, _ in chain if isinstance(stmt, ast.If) for n in loads(stmt.test)} & params
    found: list[int] = []
    for call in calls_to(tree, scope)[:3]:
        for name in sorted(tested):
            passed = argument(call, scope, name)
            if not isinstance(passed, ast.Name):
                continue
            caller = function_around(file, call.lineno)
            bound = assignment_in(caller.body if caller else tree.body, passed.id, call.lineno)
            if isinstance(bound, ast.Assign) and _special_branch(bound.value):
                found.append(bound.lineno)
    return found


def _returned(function: Function, index: int | None) -> list[tuple[int, str]]:
    """(line, name) of what `function` returns (the `index`th element of a returned tuple)."""
    out: list[tuple[int, str]] = []
    for ret in (n for n in own_nodes(function) if isinstance(n, ast.Return) and n.value is not None):
        value = ret.value
        if index is not None:
            if not isinstance(value, ast.Tuple) or index >= len(value.elts):
                continue
            value = value.elts[index]
        if isinstance(value, ast.Name):
            out.append((ret.lineno, value.id))
    return out


def _origin(
    tree: ast.Module, file: str, chain: Chain, names: list[str], depth: int
) -> tuple[str, str, list[int]]:
    here = chain[-1][0].lineno
    scope = function_around(file, here)
    nodes = own_nodes(scope) if scope is not None else list(ast.walk(tree))
    defs = user_defs(tree)
    accumulated = {
        n.target.id for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
    }
    for name in names:
        if name in accumulated:
            continue  # `total = 0.0` then `total += ...`: a start, not a value a step takes
        sets = [
            n
            for n in nodes
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id == name
            and _special_branch(n.value)
        ]
        if sets:
            first = sets[0]
            return (
                name,
                _special_branch(first.value),
                [first.lineno, *_guard_origin(tree, file, first.lineno)],
            )
        # `a, lam = helper(...)` or `lam = helper(...)`: what the helper returns in that place.
        bound = assignment_in(scope.body if scope else tree.body, name, here)
        if depth > 1 or not isinstance(bound, ast.Assign) or not isinstance(bound.value, ast.Call):
            continue
        target = bound.targets[0]
        index = None
        if isinstance(target, ast.Tuple):
            places = [k for k, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name]
            if not places:
                continue
            index = places[0]
        callee = defs.callee(bound.value.func)
        for line, inner in _returned(callee, index) if callee is not None else []:
            found = _origin(tree, file, enclosing(file, line), [inner], depth + 1)
            if found[2]:
                return name, found[1], [*found[2], bound.lineno]
    return "", "", []


def special_value_origin(location: str) -> tuple[str, str, list[str]]:
    """A name the statement at `location` reads that its function (or a helper whose return it
    unpacks) sets to a literal 0 or ±1: the name, the literal and the lines that set it (the
    assignment, the caller's assignment its `if` depends on, the unpacking); `("", "", [])`
    when there is none."""
    file, _, chain = enclosing_at(location)
    tree = syntax_tree(file) if chain else None
    if tree is None or not chain:
        return "", "", []
    name, literal, lines = _origin(tree, file, chain, sorted(loads(chain[-1][0])), 0)
    return name, literal, [f"{file}:{n}" for n in dict.fromkeys(lines)]
