"""Where a value a line reads was made: the assignment above it, the `torch.tensor(...)` that
wrapped a Python number, the lines that fill a dict read by key or reorder a sequence."""

from __future__ import annotations

import ast
import re

from xlagraph.diagnose.frames import source_line, split_location
from xlagraph.diagnose.recognizers._host_numbers import user_defs
from xlagraph.diagnose.recognizers._source import DEF, NAME, source_text
from xlagraph.diagnose.recognizers._statements import function_around, own_nodes, stores, syntax_tree

__all__ = [
    "assigned_from",
    "assigned_in_function",
    "assignment_above",
    "dict_fills",
    "reorderings",
    "scalar_origin",
]


def _scope(location: str) -> tuple[str, int, list[ast.AST], set[str]]:
    """The file and line of `location`, the nodes of the function around it (the module's own at
    module level; never another function's), and the names its line spells."""
    file, line = split_location(location)
    tree = syntax_tree(file) if file and line else None
    if tree is None:
        return file, line, [], set()
    names = set(NAME.findall(source_text(location).split("#", 1)[0]))
    return file, line, own_nodes(function_around(file, line) or tree), names


def _assignments(
    nodes: list[ast.AST], names: set[str], pattern: re.Pattern[str] | None = None
) -> list[ast.stmt]:
    """The assignments among `nodes`, in line order, that bind one of `names` (to a value
    `pattern` finds, when given)."""
    found = [
        n
        for n in nodes
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and names & stores(n)
    ]
    found = [n for n in found if pattern is None or pattern.search(ast.unparse(n.value))]  # type: ignore[attr-defined]
    return sorted(found, key=lambda n: n.lineno)


def assigned_from(location: str, pattern: re.Pattern[str], span: int) -> str:
    """`file:line` of an assignment within `span` lines above `location`, in its function, whose
    targets include a name `location` reads and whose value matches `pattern` (`used, counts =
    torch.unique(...)`, `chunks = torch.split(h, lengths)` above the lines that use them); "" when
    there is none."""
    file, line, nodes, names = _scope(location)
    found = [n.lineno for n in _assignments(nodes, names, pattern) if line - span < n.lineno < line]
    return f"{file}:{found[-1]}" if found else ""


def assignment_above(location: str, span: int, names: set[str] | None = None) -> ast.stmt | None:
    """The nearest assignment within `span` lines above `location`, in its function, of one of
    `names` (by default the names its line reads), whatever its value."""
    _, line, nodes, read = _scope(location)
    found = [
        n for n in _assignments(nodes, read if names is None else names) if line - span < n.lineno < line
    ]
    return found[-1] if found else None


def assigned_in_function(location: str, pattern: re.Pattern[str]) -> str:
    """`file:line` of an assignment anywhere in the function around `location` (above it, or
    below it in a loop that carries the value into the next step: `weights = ...` at the end of
    an epoch) whose targets include a name `location` reads and whose value matches `pattern`;
    "" when there is none."""
    file, line, nodes, names = _scope(location)
    found = [n.lineno for n in _assignments(nodes, names, pattern) if n.lineno != line]
    return f"{file}:{found[0]}" if found else ""


_MAKES_TENSOR = re.compile(r"\btensor\s*\(|\bas_tensor\s*\(|\bfull\s*\(|\bscalar_tensor\s*\(")


def scalar_origin(location: str) -> list[str]:
    """Where the tensor a line uses was made, when it is a value the user wraps in a tensor each
    step (`beta = torch.tensor(step / 3)` above `loss = ... + beta * kl`, or a helper that
    returns `torch.tensor(...)`): that line and the assignment that called it. `[]` otherwise.
    Only the nearest assignment above, in the same function, of a name the line reads counts."""
    file = split_location(location)[0]
    made = assignment_above(location, 200)
    value = ast.unparse(made.value) if made else ""  # type: ignore[attr-defined]
    if made is None or _MAKES_TENSOR.search(value):
        return [f"{file}:{made.lineno}"] if made else []
    functions = user_defs(syntax_tree(file)).functions  # type: ignore[arg-type]
    for function in (functions[name] for name in NAME.findall(value) if name in functions):
        returns = [n for n in own_nodes(function) if isinstance(n, ast.Return) and n.value is not None]
        returns = [n for n in returns if _MAKES_TENSOR.search(ast.unparse(n.value))]  # type: ignore[arg-type]
        if returns:
            return [f"{file}:{min(n.lineno for n in returns)}", f"{file}:{made.lineno}"]
    return []


_SUBSCRIPTED = re.compile(r"\b([A-Za-z_]\w*)\s*\[")


def dict_fills(location: str) -> list[str]:
    """The lines of the same function that fill a container the line at `location` reads by key
    (`losses[task] = ...` for `total = losses["a"] + losses["b"]`): where the order of a dict of
    statistics is decided. `[]` when there are none."""
    file, line, nodes, _ = _scope(location)
    names = set(_SUBSCRIPTED.findall(source_text(location).split("#", 1)[0]))
    fills = {
        n.lineno
        for n in nodes
        if isinstance(n, ast.Assign)
        and line - 200 < n.lineno < line
        and any(
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names
            for t in n.targets
        )
    }
    return [f"{file}:{k}" for k in sorted(fills)[:3]]


# Statements that change an order: shuffles, reversals, sorts by a key (a value that may change),
# rotations (`x = x[1:] + x[:1]`).
_REORDERS = re.compile(
    r"\bshuffle\(|\.reverse\(\)|\[::-1\]|\breversed\(|\bsorted\(.*\bkey\s*=|\.sort\(.*\bkey\s*=|\brandperm\(|"
    r"\bpermutation\(|\brotate\(|^\s*(\w+)\s*=\s*\1\s*\[[^\]]*:[^\]]*\]\s*\+"
)


def reorderings(location: str) -> list[str]:
    """Lines of the function around `location` (it and its loop) that reorder a sequence: where
    an order that differs from step to step is decided (a task list rotated each step). Scans
    from the `def` above to the end of that function."""
    file, n = split_location(location)
    if not file or not n:
        return []
    start = n
    while start > max(0, n - 200) and not DEF.match(source_line(file, start)):
        start -= 1
    if not DEF.match(source_line(file, start)):
        return []
    out: list[str] = []
    for k in range(start + 1, start + 400):
        text = source_line(file, k)
        if text.strip() and not text[0].isspace():
            break  # the next top-level statement: the function ended
        code = text.split("#", 1)[0]
        if _REORDERS.search(code):
            out.append(f"{file}:{k}")
    return out[:3]
