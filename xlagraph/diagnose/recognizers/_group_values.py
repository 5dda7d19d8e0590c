"""Where a Python number an optimizer reads comes from: a schedule's value written into its param
groups (`for g in opt.param_groups: g["weight_decay"] = wd_at(step)`) is read by library code
inside `opt.step()`, so the graph cites only that call; the number is computed at the write."""

from __future__ import annotations

import ast

from xlagraph.diagnose.recognizers._host_numbers import host_number, number_of, python_number, user_defs
from xlagraph.diagnose.recognizers._statements import enclosing, enclosing_at, syntax_tree

__all__ = ["group_number", "number_origin"]


def _stepped(stmt: ast.stmt) -> str:
    """`opt` of a statement that calls `opt.step()` (or `self.opt.step()`), else ""."""
    for node in ast.walk(stmt):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "step"
            and not node.args
            and not node.keywords
        ):
            return ast.unparse(node.func.value)
    return ""


def _groups_of(node: ast.expr, optimizer: str, groups: set[str]) -> bool:
    """`node` is one of `optimizer`'s param groups: `opt.param_groups[i]`, or a name that a loop
    over `opt.param_groups` binds (`groups`)."""
    if isinstance(node, ast.Name):
        return node.id in groups
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "param_groups"
        and ast.unparse(node.value.value) == optimizer
    )


def group_number(location: str) -> tuple[str, list[str]]:
    """For a statement that steps an optimizer (`opt.step()`), a Python number written into its
    param groups (`group["weight_decay"] = weight_decay_at(step, ...)`) that the user computes on
    the host: the group entry and the lines that compute it (the helper's, then the write, or
    the assignment of the name written); `("", [])` when there is none."""
    file, _, chain = enclosing_at(location)
    tree = syntax_tree(file) if chain else None
    optimizer = _stepped(chain[-1][0]) if chain else ""
    if tree is None or not optimizer:
        return "", []
    groups = {
        loop.target.id
        for loop in ast.walk(tree)
        if isinstance(loop, (ast.For, ast.AsyncFor))
        and isinstance(loop.target, ast.Name)
        and ast.unparse(loop.iter) == f"{optimizer}.param_groups"
    }
    defs = user_defs(tree)
    writes = sorted(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Subscript)
            and _groups_of(n.targets[0].value, optimizer, groups)
        ),
        key=lambda n: n.lineno,
    )
    for write in writes:
        entry = ast.unparse(write.targets[0])
        # A value computed on the host by a call (a schedule's helper), as `with_number_origin`
        # asks of a name's assignment: plain arithmetic on arguments is no schedule of its own.
        made = host_number(write.value, defs)
        if made is not None and (made or any(isinstance(n, ast.Call) for n in ast.walk(write.value))):
            return entry, [f"{file}:{n}" for n in dict.fromkeys([*made, write.lineno])]
        if isinstance(write.value, ast.Name):
            name, lines = number_of(tree, defs, enclosing(file, write.lineno), [write.value.id], file, 0)
            if lines:
                return name, [*lines, f"{file}:{write.lineno}"]
    return "", []


def number_origin(location: str) -> tuple[str, list[str]]:
    """Where the user computes the Python number the statement at `location` hands to library
    code: a name it reads (`python_number`), else, for `opt.step()`, a value written into the
    optimizer's param groups (`group_number`)."""
    name, lines = python_number(location)
    return (name, lines) if lines else group_number(location)
