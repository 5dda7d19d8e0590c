"""Where the program stores a tensor that a graph kept as an extra output.

Capture names what kept each live tensor alive (`self.metrics['logits']`, `history[3]`: a
`Holder`). Storing a tensor creates no op, so no dump records that line; it is found here in
the stored source: the statements that assign or mutate the holder's name (`self.metrics =
...`, `history.append(...)`, `cache[k] = ...`), read with `ast` so that a statement over
several lines counts once. Of those, the ones inside a function the tensor was made under
(its creation frames) are the answer; else the ones outside `__init__` that store more than an
empty container, where there are at most two. Anything less certain cites nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from xlagraph.diagnose.recognizers._statements import call_name, syntax_tree
from xlagraph.ir import Frame
from xlagraph.runlog import Holder

__all__ = ["replacing_lines", "storing_lines"]

_MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "appendleft"})
_EMPTY_CALLS = frozenset({"dict", "list", "set", "OrderedDict", "defaultdict", "deque"})
# (line, enclosing function name, its first and last line, stores only an empty container)
_Site = tuple[int, str, int, int, bool]


def storing_lines(holder: Holder, created: tuple[Frame, ...]) -> tuple[str, ...]:
    """`file:line` of the statements that store the tensor where `holder` found it; `created`:
    the user frames that made it, innermost first."""
    file = holder.owner_file if holder.kind == "attribute" and holder.owner_file else holder.file
    tree = syntax_tree(file)
    if tree is None:
        return ()
    sites = list(_sites(tree, holder))
    if holder.kind == "local":  # a local lives in its own function
        sites = [s for s in sites if s[1] == holder.function and s[2] <= holder.line <= s[3]]
    inside = [
        s
        for s in sites
        if not s[4] and any(f.file == file and f.function == s[1] and s[2] <= f.line <= s[3] for f in created)
    ]
    chosen = inside or [s for s in sites if not s[4] and s[1] != "__init__"]
    if not chosen or len(chosen) > 2:
        return ()
    return tuple(f"{file}:{s[0]}" for s in sorted(chosen))


def replacing_lines(holder: Holder) -> tuple[str, ...]:
    """Where the user's code puts a new object on the attribute path that holds a weight
    (`model.head = new.to(device)` for `model.head.weight`, `setattr(model, "head", ...)`):
    the statements of the holder's file, outside `__init__` (which builds the first one), that
    assign one of the path's attributes, and the calls of the function they sit in (`widen_head(
    model, ...)` in the loop). At most two such statements, else nothing: a weight resized by
    library code (`resize_token_embeddings`) has no line of the user's that replaces it."""
    attrs = {part.partition("[")[0] for part in holder.path.split(".")[1:]} - {""}
    tree = syntax_tree(holder.file) if holder.kind == "attribute" and attrs else None
    if tree is None:
        return ()
    sites: list[tuple[int, str]] = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        if fn.name == "__init__":
            continue
        for node in ast.walk(fn):
            if _replaces(node, attrs):
                sites.append((node.lineno, fn.name))
    if not sites or len(sites) > 2:
        return ()
    names = {name for _, name in sites}
    calls = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
    ]
    found = [*sorted(n for n, _ in sites), *sorted(calls)[:2]]
    return tuple(f"{holder.file}:{n}" for n in dict.fromkeys(found))


def _replaces(node: ast.AST, attrs: set[str]) -> bool:
    """`x.head = ...` or `setattr(x, "head", ...)` for an attribute name of `attrs`."""
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Attribute) and t.attr in attrs for t in node.targets)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        return (
            isinstance(call.func, ast.Name)
            and call.func.id == "setattr"
            and len(call.args) == 3
            and isinstance(call.args[1], ast.Constant)
            and call.args[1].value in attrs
        )
    return False


def _sites(tree: ast.Module, holder: Holder) -> Iterator[_Site]:
    """Every statement that stores into `holder`'s name, with its enclosing function."""

    def walk(node: ast.AST, fn: tuple[str, int, int]) -> Iterator[_Site]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from walk(child, (child.name, child.lineno, child.end_lineno or child.lineno))
                continue
            target = _stored(child, holder)
            if target is not None:
                yield (child.lineno, fn[0], fn[1], fn[2], target)
            yield from walk(child, fn)

    yield from walk(tree, ("<module>", 1, 1 << 30))


def _stored(node: ast.AST, holder: Holder) -> bool | None:
    """None when `node` does not store into the holder's name; else whether all it stores is an
    empty container (`self.metrics = {}`: made, not filled)."""
    if isinstance(node, ast.Assign):
        if any(_names(t, holder) for t in node.targets):
            return _empty(node.value)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        if _names(node.target, holder):
            return node.value is None or (isinstance(node, ast.AnnAssign) and _empty(node.value))
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and func.attr in _MUTATORS and _refers(func.value, holder):
            return False
    return None


def _names(target: ast.AST, holder: Holder) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_names(t, holder) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _names(target.value, holder)
    return _refers(target, holder)


def _refers(node: ast.AST, holder: Holder) -> bool:
    """Whether `node` is the holder's name, or an item or attribute of it (`cache[k]`)."""
    while True:
        if holder.kind == "attribute" and isinstance(node, ast.Attribute) and node.attr == holder.name:
            return True
        if holder.kind != "attribute" and isinstance(node, ast.Name):
            return node.id == holder.name
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
            continue
        return False


def _empty(value: ast.AST) -> bool:
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.Tuple)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    if isinstance(value, ast.Call) and not value.args and not value.keywords:
        return call_name(value.func) in _EMPTY_CALLS
    return False
