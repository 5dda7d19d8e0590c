"""Where the value a name holds at a line of the user's source was made, read from the source
text: the last assignment before the line in its function (or a `for` that binds it), followed
past moves (`ids = ids.to(device)`), into a helper of the file that returns it, a method that
joins slices of rows, and from a loop variable to the loader or generator it iterates.
"""

from __future__ import annotations

import ast

from xlagraph.diagnose.recognizers._host_numbers import assignment_in
from xlagraph.diagnose.recognizers._statements import (
    Function,
    call_name,
    enclosing,
    function_around,
    method_of,
    own_nodes,
    stores,
    syntax_tree,
    top_level_class,
    top_level_function,
)

__all__ = ["MOVES", "assigned_before", "loop_source", "made_at", "past_moves", "returns_of", "statement"]


def statement(file: str, line: int) -> ast.stmt | None:
    """The simple statement that starts at `file:line` (not a block's header: `for`, `if`, `with`)."""
    chain = enclosing(file, line)
    stmt = chain[-1][0] if chain else None
    return stmt if stmt is not None and stmt.lineno == line and not hasattr(stmt, "body") else None


MOVES = frozenset({"to", "cuda", "contiguous", "detach", "clone"})


def made_at(file: str, line: int, name: str, depth: int = 0) -> int:
    """Where the value `name` gets at `line` is made: past moves of the same name (`ids =
    ids.to(device)`) to the assignment before them, and into a helper of the file that returns
    it (`ids, labels = labelled_rows(ids, labels)`: its `return ids[keep], ...`); else `line`."""
    stmt = statement(file, line)
    if stmt is None:
        return loop_source(file, line, name)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or depth > 3:
        return line
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        value = next((v for t, v in zip(target.elts, value.elts, strict=True) if _is(t, name)), value)
    if not isinstance(value, ast.Call):
        return line
    f = value.func
    if isinstance(f, ast.Attribute) and f.attr in MOVES and _is(f.value, name):
        earlier = assigned_before(file, line, name)
        return made_at(file, earlier, name, depth + 1) if earlier else line
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        place = _place(target, name)
        return _method_rows(file, f.value.id, f.attr, place, line) if place is not None else line
    returns = returns_of(file, f.id) if isinstance(f, ast.Name) else []
    return returns[-1] if returns else line


def _method_rows(file: str, receiver: str, method: str, place: int, line: int) -> int:
    """`xb, yb = sampler.batch(i)` with `sampler = Sampler(...)`, a class of the file: what the
    method returns at `name`'s place, when it joins slices of rows (`x = torch.cat([pos, neg])`
    with `pos = self.pos[i * k:(i + 1) * k]`): the first slice, which decides how many rows a
    batch gets (a slice past the end of what is left gives fewer). Else `line`."""
    tree = syntax_tree(file)
    made = assigned_before(file, line, receiver)
    bound = statement(file, made) if made else None
    value = bound.value if isinstance(bound, ast.Assign) else None
    cls = call_name(value.func) if isinstance(value, ast.Call) else ""
    fn = method_of(top_level_class(tree, cls), method)
    returned = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value] if fn else []
    if fn is None or len(returned) != 1:
        return line
    joined = _assigned_node(fn, _element(returned[0].value, place), returned[0].lineno)
    parts = getattr(joined, "value", None)
    if not (isinstance(parts, ast.Call) and call_name(parts.func) in _JOINS and parts.args):
        return line
    pieces = parts.args[0].elts if isinstance(parts.args[0], ast.List | ast.Tuple) else []
    for piece in pieces:
        sliced = _assigned_node(fn, piece, parts.lineno)
        if isinstance(value := getattr(sliced, "value", None), ast.Subscript) and _slices(value.slice):
            return sliced.lineno
    return line


_JOINS = frozenset({"cat", "concat", "concatenate", "stack", "vstack"})


def _slices(node: ast.expr) -> bool:
    """A slice with a computed bound (`[i * k:(i + 1) * k]`), not a constant one (`[:-1]`)."""
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return any(
        isinstance(p, ast.Slice)
        and any(b is not None and not isinstance(b, ast.Constant | ast.UnaryOp) for b in (p.lower, p.upper))
        for p in parts
    )


def past_moves(file: str, line: int, name: str) -> int:
    """Past `name = name.to(device)` (under `if name is not None:`) to the assignment before."""
    for _ in range(4):
        stmt = statement(file, line)
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        f = value.func if isinstance(value, ast.Call) else None
        if not (isinstance(f, ast.Attribute) and f.attr in MOVES and _is(f.value, name)):
            return line
        earlier = assigned_before(file, line, name)
        if not earlier:
            return line
        line = earlier
    return line


def loop_source(file: str, line: int, name: str) -> int:
    """A loop variable over a loader the function made (`for x, y in loader:`): the line that
    makes the loader (its batch size, its sampler). One (`for step, (ids, tags, mask) in
    enumerate(batches()):`) over a generator
    of the file that yields what a function of the file returns (`yield collate(rows)`): the
    line where that function assigns what it returns at `name`'s place (`mask = ... if padded
    else None`), which decides the value; else `line`."""
    tree = syntax_tree(file)
    if tree is None:
        return line
    loop = next((n for n in ast.walk(tree) if isinstance(n, ast.For) and n.lineno == line), None)
    if loop is None:
        return line
    target, iterated = loop.target, loop.iter
    if (
        isinstance(iterated, ast.Call)
        and _is(iterated.func, "enumerate")
        and iterated.args
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
    ):
        target, iterated = target.elts[1], iterated.args[0]
    place = _place(target, name)
    if place is not None and isinstance(iterated, ast.Name):  # `for x, y in loader:`: the loader's line
        return assigned_before(file, line, iterated.id) or line
    if place is None or not isinstance(iterated, ast.Call) or not isinstance(iterated.func, ast.Name):
        return line
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    generator = functions.get(iterated.func.id) or _iterator_of(tree, iterated.func.id)
    nodes = list(ast.walk(generator)) if generator else []
    yields = [n.value for n in nodes if isinstance(n, ast.Yield) and n.value]
    for value in yields:
        owner = generator
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in functions:
            owner = functions[value.func.id]
            returned = [n for n in ast.walk(owner) if isinstance(n, ast.Return) and n.value]
            value = returned[-1].value if returned else value
        element = _element(value, place)
        made = _assigned_node(owner, element, value.lineno) if owner else None
        if made is not None:
            return made.lineno
        if isinstance(element, ast.Call) and owner is generator:
            # made in the yield itself (`yield torch.from_numpy(ids), ...`): the line the tensor is
            # made, its dtype and size those of the data it wraps
            return value.lineno
    return line


def _iterator_of(tree: ast.Module, name: str) -> Function | None:
    """The `__iter__` of the file's class `name` (`for x, y in ShardReader():`), a generator."""
    return method_of(top_level_class(tree, name), "__iter__")


def _place(target: ast.expr, name: str) -> int | None:
    """`name`'s index in a tuple target, -1 for the whole target, None when absent."""
    if _is(target, name):
        return -1
    if isinstance(target, ast.Tuple):
        return next((k for k, t in enumerate(target.elts) if _is(t, name)), None)
    return None


def _element(value: ast.expr, place: int) -> ast.expr | None:
    if place < 0:
        return value
    if isinstance(value, ast.Tuple) and place < len(value.elts):
        return value.elts[place]
    return None


def _assigned_node(function: Function, value: ast.expr | None, before: int) -> ast.stmt | None:
    """The last statement of `function` before line `before` that binds the name `value` is."""
    return assignment_in(function.body, value.id, before) if isinstance(value, ast.Name) else None


def _is(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def returns_of(file: str, function: str) -> list[int]:
    """The lines of the `return`s (with a value) in the body, not its nested blocks, of the file's
    top-level function `function`."""
    fn = top_level_function(file, function)
    return [s.lineno for s in fn.body if isinstance(s, ast.Return) and s.value] if fn else []


def assigned_before(file: str, line: int, name: str) -> int:
    """The last line before `line` that assigns `name` (or a `for` that binds it), in the function
    around `line` (among the module's own statements at module level)."""
    tree = syntax_tree(file)
    nodes = own_nodes(function_around(file, line) or tree) if tree else []
    loops = [
        n.lineno
        for n in nodes
        if isinstance(n, (ast.For, ast.AsyncFor)) and any(_is(t, name) for t in ast.walk(n.target))
    ]
    assigned = [n.lineno for n in nodes if isinstance(n, ast.stmt) and name in stores(n)]
    return max((k for k in loops + assigned if k < line), default=0)
