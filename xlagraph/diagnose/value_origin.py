"""Where a value whose guard failed was computed: dynamo names the line inside the compiled function
that *reads* it; the fix belongs where the caller *computes* it (`lr = cosine_lr(step)` before
`step_fn(..., lr)`, `TEMPERATURE = TEMPERATURE / 2` in the loop, `model.drop.p = 0.0`).

Read from the source text the analysis has (`frames.source_line`: the capture's stored sources):
- an argument (`L['lr']`, `L['x']`): its position in the compiled function's `def`, the expression
  the call site passes there, and where that name was last assigned (or bound by a `for`) before
  the call, in the caller's function (the module's own statements at module level);
- a global (`G['TEMPERATURE']`): an assignment to it in an indented block of its module (a loop or a
  function: not the module-level definition, which made the value the first compile assumed);
- a module attribute (`L['self'].scale`, `...training`): an assignment to `.scale` (for `training`,
  a `.train(` / `.eval(` call) in an indented block of the caller's file, outside the methods that
  build the object (`__init__`: the value the first compile assumed).
Nothing is guessed where the text does not say: no line.
"""

from __future__ import annotations

import ast
import re

from xlagraph.diagnose.frames import source_lines, split_location
from xlagraph.diagnose.recognizers._host_numbers import assignment_in
from xlagraph.diagnose.recognizers._source import BUILDERS, enclosing_function
from xlagraph.diagnose.recognizers._statements import (
    Function,
    call_name,
    enclosing,
    function_around,
    own_nodes,
    stores,
    syntax_tree,
)

__all__ = ["origin_of", "rows_filtered"]

_SCAN = 400  # lines scanned in a file: a training script's loop is near its call
# `target = ...`, `a, target = ...`, `target: T = ...`, `target += ...` (not `==`)
_ASSIGN = (
    r"^\s*(?:[\w.\[\]'\"]+\s*,\s*)*{target}\s*(?:,\s*[\w.\[\]'\"]+\s*)*(?::[^=]+)?"
    r"(?:[+\-*/%@&|^]|//|\*\*)?=(?!=)"
)


def origin_of(kind: str, subject: str, code: str, call_site: str) -> str:
    """`file:line` where the value behind a guard failure was computed, or ``. `kind` and `subject`
    are `guards.explain_guard`'s (`lr`, `TEMPERATURE`, `self.training`, `self._modules['drop'].p`),
    `code` the compiled function's `file:line`, `call_site` the user's line that called it."""
    subject = subject.strip()
    if kind.startswith("global"):
        name = subject.split(".")[0].split("[")[0]
        return _indented_assignment(code, rf"\b{re.escape(name)}") if name.isidentifier() else ""
    if subject.isidentifier():
        return _argument(subject, code, call_site, tensor=kind.startswith("tensor"))
    if (m := re.fullmatch(r"args\[(\d+)\]", subject)) and kind.startswith("tensor"):
        return _positional(int(m[1]), call_site)
    attr = re.sub(r"\[.*?\]", "", subject).rsplit(".", 1)[-1]
    if subject.startswith("self.") and attr.isidentifier():
        if attr == "training":
            return _indented_line(call_site, re.compile(r"\.(?:train|eval)\("))
        return _indented_assignment(call_site, rf"\.{re.escape(attr)}", skip=BUILDERS)
    return ""


def rows_filtered(location: str) -> str:
    """`file:line` where a tensor the statement at `location` reads was made by keeping the rows
    a mask selects (`return ids[keep], labels[keep]` with `keep = labels >= 0`): the batch size
    then follows the data, not the loader. The statement itself, else the assignment of each
    name it reads followed past moves and into a helper's `return` (`_made_at`); `` when none."""
    file, line = split_location(location)
    if not file or not line:
        return ""
    if _masks(file, line):
        return location
    tree = _statement(file, line)
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}) if tree else []
    for name in names:
        at = _assigned_before(file, line, name)
        made = _made_at(file, at, name) if at else 0
        if made and _masks(file, made):
            return f"{file}:{made}"
        collated = next((r for r in _collate_returns(file, made) if _masks(file, r)), 0) if made else 0
        if collated:
            return f"{file}:{collated}"
    return ""


def _collate_returns(file: str, line: int) -> list[int]:
    """`loader = DataLoader(..., collate_fn=labelled_only)` at `line`, with `labelled_only` a
    top-level function of the file: the lines of its `return`s, which make every batch."""
    stmt = _statement(file, line)
    value = stmt.value if isinstance(stmt, ast.Assign) else None
    if not isinstance(value, ast.Call):
        return []
    collate = next((k.value for k in value.keywords if k.arg == "collate_fn"), None)
    return _returns_of(file, collate.id) if isinstance(collate, ast.Name) else []


def _statement(file: str, line: int) -> ast.stmt | None:
    """The simple statement that starts at `file:line` (not a block's header: `for`, `if`, `with`)."""
    chain = enclosing(file, line)
    stmt = chain[-1][0] if chain else None
    return stmt if stmt is not None and stmt.lineno == line and not hasattr(stmt, "body") else None


def _masks(file: str, line: int) -> bool:
    """The statement at `file:line` indexes a tensor by a boolean mask: a comparison (or `~`,
    `&`, `|` of them) in the brackets, or a name assigned one above it in its block."""
    tree = _statement(file, line)
    for sub in (n for n in ast.walk(tree) if isinstance(n, ast.Subscript)) if tree else ():
        mask = sub.slice
        if isinstance(mask, ast.Name) and (at := _assigned_before(file, line, mask.id)):
            bound = _statement(file, at)
            mask = bound.value if isinstance(bound, ast.Assign) else mask
        if _is_mask(mask):
            return True
    return False


def _is_mask(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return _is_mask(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
        return _is_mask(node.left) or _is_mask(node.right)
    return False


def _argument(name: str, code: str, call_site: str, tensor: bool = False) -> str:
    """The line before `call_site` that assigns what it passes as `name`; for a tensor, where its
    size was made (`_made_at`): a scalar's line is its assignment (`lr = cosine_lr(step)`)."""
    file, line = split_location(call_site)
    params = _params(*split_location(code))
    call = _call_at(file, line, params)
    if call is None or params is None:
        return ""
    expr = next((k.value for k in call.keywords if k.arg == name), None)
    if expr is None and name in params and params.index(name) < len(call.args):
        expr = call.args[params.index(name)]
    if not isinstance(expr, ast.Name):
        return ""
    found = _assigned_before(file, line, expr.id)
    if tensor and found:
        found = _made_at(file, found, expr.id)
    elif found:  # a None-ness is decided where the value is made, not where it is moved
        found = _loop_source(file, _past_moves(file, found, expr.id), expr.id)
    return f"{file}:{found}" if found else ""


def _positional(index: int, call_site: str) -> str:
    """Where the tensor passed at position `index` of the compiled callable's call at
    `call_site` was made: dynamo names an argument `args[0]` where the compiled function takes
    `*args` (`torch.compile(nn.Sequential(...))`), so the call is the one to a name bound by
    `torch.compile(...)` in the file, not the outermost (`F.cross_entropy(compiled(x), y)`)."""
    file, line = split_location(call_site)
    tree = _statement(file, line) if file else None
    compiled = _compiled_names(file) if tree else set()
    call = (
        next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and call_name(n.func) in compiled), None)
        if tree
        else None
    )
    expr = call.args[index] if call is not None and index < len(call.args) else None
    if not isinstance(expr, ast.Name):
        return ""
    found = _assigned_before(file, line, expr.id)
    return f"{file}:{_made_at(file, found, expr.id)}" if found else ""


def _compiled_names(file: str) -> set[str]:
    """The names (or `self.` attributes) the file binds to `torch.compile(...)`'s result."""
    tree = syntax_tree(file)
    return {
        call_name(t)
        for n in (ast.walk(tree) if tree else ())
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and call_name(n.value.func) == "compile"
        for t in n.targets
    } - {""}


_MOVES = frozenset({"to", "cuda", "contiguous", "detach", "clone"})


def _made_at(file: str, line: int, name: str, depth: int = 0) -> int:
    """Where the value `name` gets at `line` is made: past moves of the same name (`ids =
    ids.to(device)`) to the assignment before them, and into a helper of the file that returns
    it (`ids, labels = labelled_rows(ids, labels)`: its `return ids[keep], ...`); else `line`."""
    stmt = _statement(file, line)
    if stmt is None:
        return _loop_source(file, line, name)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or depth > 3:
        return line
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        value = next((v for t, v in zip(target.elts, value.elts, strict=True) if _is(t, name)), value)
    if not isinstance(value, ast.Call):
        return line
    f = value.func
    if isinstance(f, ast.Attribute) and f.attr in _MOVES and _is(f.value, name):
        earlier = _assigned_before(file, line, name)
        return _made_at(file, earlier, name, depth + 1) if earlier else line
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        place = _place(target, name)
        return _method_rows(file, f.value.id, f.attr, place, line) if place is not None else line
    returns = _returns_of(file, f.id) if isinstance(f, ast.Name) else []
    return returns[-1] if returns else line


def _method_rows(file: str, receiver: str, method: str, place: int, line: int) -> int:
    """`xb, yb = sampler.batch(i)` with `sampler = Sampler(...)`, a class of the file: what the
    method returns at `name`'s place, when it joins slices of rows (`x = torch.cat([pos, neg])`
    with `pos = self.pos[i * k:(i + 1) * k]`): the first slice, which decides how many rows a
    batch gets (a slice past the end of what is left gives fewer). Else `line`."""
    tree = syntax_tree(file)
    made = _assigned_before(file, line, receiver)
    bound = _statement(file, made) if made else None
    value = bound.value if isinstance(bound, ast.Assign) else None
    cls = call_name(value.func) if isinstance(value, ast.Call) else ""
    classes = [c for c in (tree.body if tree else []) if isinstance(c, ast.ClassDef) and c.name == cls]
    methods = [f for c in classes for f in c.body if isinstance(f, ast.FunctionDef) and f.name == method]
    fn = methods[0] if methods else None
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


def _past_moves(file: str, line: int, name: str) -> int:
    """Past `name = name.to(device)` (under `if name is not None:`) to the assignment before."""
    for _ in range(4):
        stmt = _statement(file, line)
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        f = value.func if isinstance(value, ast.Call) else None
        if not (isinstance(f, ast.Attribute) and f.attr in _MOVES and _is(f.value, name)):
            return line
        earlier = _assigned_before(file, line, name)
        if not earlier:
            return line
        line = earlier
    return line


def _loop_source(file: str, line: int, name: str) -> int:
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
        return _assigned_before(file, line, iterated.id) or line
    if place is None or not isinstance(iterated, ast.Call) or not isinstance(iterated.func, ast.Name):
        return line
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    generator = functions.get(iterated.func.id)
    nodes = list(ast.walk(generator)) if generator else []
    yields = [n.value for n in nodes if isinstance(n, ast.Yield) and n.value]
    for value in yields:
        owner = generator
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in functions:
            owner = functions[value.func.id]
            returned = [n for n in ast.walk(owner) if isinstance(n, ast.Return) and n.value]
            value = returned[-1].value if returned else value
        made = _assigned_node(owner, _element(value, place), value.lineno) if owner else None
        if made is not None:
            return made.lineno
    return line


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


def _returns_of(file: str, function: str) -> list[int]:
    """The lines of the `return`s (with a value) in the body, not its nested blocks, of the file's
    top-level function `function`."""
    tree = syntax_tree(file)
    fn = (
        next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == function), None)
        if tree
        else None
    )
    return [s.lineno for s in fn.body if isinstance(s, ast.Return) and s.value] if fn else []


def _params(file: str, line: int) -> list[str] | None:
    """The parameter names of the `def` at `file:line` (without `self`), None when unreadable.
    A decorated function's code starts at its first decorator: the `def` is below."""
    tree = syntax_tree(file)
    found = (
        [n for n in ast.walk(tree) if isinstance(n, Function) and line <= n.lineno < line + 8] if tree else []
    )
    if not found:
        return None
    fn = min(found, key=lambda n: n.lineno)
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    return names[1:] if names and names[0] in ("self", "cls") else names


def _call_at(file: str, line: int, params: list[str] | None = None) -> ast.Call | None:
    """The outermost call on the statement starting at `file:line` that takes no more positional
    arguments than `params` (`compiled(ids)` inside `F.cross_entropy(compiled(ids), labels)`, for
    `forward(ids)`)."""
    stmt = _statement(file, line)
    calls = (n for n in ast.walk(stmt) if isinstance(n, ast.Call)) if stmt else ()
    return next((n for n in calls if params is None or len(n.args) <= len(params)), None)


def _assigned_before(file: str, line: int, name: str) -> int:
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


def _indented_assignment(loc: str, target: str, skip: frozenset[str] = frozenset()) -> str:
    return _indented_line(loc, re.compile(_ASSIGN.format(target=r"[\w.\[\]'\"]*" + target)), skip)


def _indented_line(loc: str, pattern: re.Pattern[str], skip: frozenset[str] = frozenset()) -> str:
    """The first indented line of `loc`'s file matching `pattern` (a loop's or a function's, not
    the module-level definition), outside the functions named in `skip` (an attribute's value
    set in `__init__` is the one the first compile assumed, not the change)."""
    file, _ = split_location(loc)
    if not file:
        return ""
    for n, text in source_lines(file, _SCAN * 4):
        code = text.lstrip()
        if code != text and not code.startswith(("#", "def ", "class ")) and pattern.search(text):
            if skip and enclosing_function(file, n) in skip:
                continue
            return f"{file}:{n}"
    return ""
