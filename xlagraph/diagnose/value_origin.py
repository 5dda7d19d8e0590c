"""Where a value whose guard failed was computed: dynamo names the line inside the compiled function
that *reads* it; the fix belongs where the caller *computes* it (what is read for an argument, a
global, an attribute: docs/compiled.md, "Where the value was computed"). Read from the source
text the analysis has (`frames.source_line`: the capture's stored sources). A global's
module-level definition and an attribute's assignment in the methods that build the object
(`__init__`) made the value the first compile assumed: neither is the answer. For `training`: the
`.train(` / `.eval(` call reached last before the call in a loop around it (`_mode_set`), else
the file's first indented one. Nothing is guessed where the text does not say: no line. Where a
name's value was made is `recognizers._value_made`'s."""

from __future__ import annotations

import ast
import re

from xlagraph.diagnose.frames import source_line, source_lines, split_location
from xlagraph.diagnose.recognizers._passed_in import passed_argument, positional
from xlagraph.diagnose.recognizers._source import BUILDERS, enclosing_function
from xlagraph.diagnose.recognizers._statements import (
    LOOPS,
    Function,
    call_name,
    enclosing,
    function_around,
    syntax_tree,
    top_level_function,
)
from xlagraph.diagnose.recognizers._value_made import (
    MOVES,
    assigned_before,
    loop_source,
    made_at,
    past_moves,
    returns_of,
    statement,
)
from xlagraph.diagnose.recognizers._wrappers import wrappers

__all__ = ["compiled_call", "origin_of", "parameters", "rows_filtered"]

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
    if kind == "dict_key" and (m := _KEYED.fullmatch(subject)):
        return _key_stored(m["d"], m["k"][1:-1], code, call_site)
    if kind.startswith("global"):
        name = subject.split(".")[0].split("[")[0]
        return _indented_assignment(code, rf"\b{re.escape(name)}") if name.isidentifier() else ""
    if subject.isidentifier():
        return _argument(subject, code, call_site, tensor=kind.startswith("tensor"))
    if (m := re.fullmatch(r"args\[(\d+)\]", subject)) and kind.startswith("tensor"):
        return _positional(int(m[1]), call_site)
    attr = re.sub(r"\[.*?\]", "", subject).rsplit(".", 1)[-1]
    if kind == "sequence_length" and "." in subject and attr.isidentifier():
        # a container the object keeps (`model.prototypes`): where an item is added to it
        grown = _indented_line(call_site, _grows(attr), skip=BUILDERS)
        if grown:
            return grown
    if subject.startswith("self.") and attr.isidentifier():
        if attr == "training":
            return _mode_set(call_site) or _indented_line(call_site, _MODE_SET)
        return _indented_assignment(call_site, rf"\.{re.escape(attr)}", skip=BUILDERS)
    return ""


def rows_filtered(location: str) -> str:
    """`file:line` where a tensor the statement at `location` reads was made by keeping the rows
    a mask selects (`return ids[keep], labels[keep]` with `keep = labels >= 0`): the batch size
    then follows the data, not the loader. The statement itself, else the assignment of each
    name it reads followed past moves and into a helper's `return` (`_value_made.made_at`); ``
    when none."""
    file, line = split_location(location)
    if not file or not line:
        return ""
    if _masks(file, line):
        return location
    tree = statement(file, line)
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}) if tree else []
    for name in names:
        at = assigned_before(file, line, name)
        made = made_at(file, at, name) if at else 0
        if made and _masks(file, made):
            return f"{file}:{made}"
        collated = next((r for r in _collate_returns(file, made) if _masks(file, r)), 0) if made else 0
        if collated:
            return f"{file}:{collated}"
    return ""


def _collate_returns(file: str, line: int) -> list[int]:
    """`loader = DataLoader(..., collate_fn=labelled_only)` at `line`, with `labelled_only` a
    top-level function of the file: the lines of its `return`s, which make every batch."""
    stmt = statement(file, line)
    value = stmt.value if isinstance(stmt, ast.Assign) else None
    if not isinstance(value, ast.Call):
        return []
    collate = next((k.value for k in value.keywords if k.arg == "collate_fn"), None)
    return returns_of(file, collate.id) if isinstance(collate, ast.Name) else []


def _masks(file: str, line: int) -> bool:
    """The statement at `file:line` indexes a tensor by a boolean mask: a comparison (or `~`,
    `&`, `|` of them) in the brackets, or a name assigned one above it in its block."""
    tree = statement(file, line)
    for sub in (n for n in ast.walk(tree) if isinstance(n, ast.Subscript)) if tree else ():
        mask = sub.slice
        if isinstance(mask, ast.Name) and (at := assigned_before(file, line, mask.id)):
            bound = statement(file, at)
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
    size was made (`_value_made.made_at`): a scalar's line is its assignment (`lr =
    cosine_lr(step)`). Passed as a call of a function of the file (`temperature_at(step)`): its
    last `return`, where the value is computed; passed moved (`ids.to(dev)`): the name moved."""
    file, line = split_location(call_site)
    expr = _passed(name, code, file, line)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        computed = returns_of(file, expr.func.id)
        return f"{file}:{computed[-1]}" if computed else ""
    if not isinstance(expr, ast.Name):
        return ""
    found = assigned_before(file, line, expr.id)
    if tensor and found:
        found = made_at(file, found, expr.id)
    elif found:  # a None-ness is decided where the value is made, not where it is moved
        found = loop_source(file, past_moves(file, found, expr.id), expr.id)
    return f"{file}:{found}" if found else ""


def _passed(name: str, code: str, file: str, line: int) -> ast.expr | None:
    """The expression the call at `file:line` passes for the compiled function's parameter `name`
    (`code` its `def`), past moves of a name (`ids.to(dev)` -> `ids`); None when not found."""
    fn = compiled_def(code)
    call = _call_at(file, line, code, positional(fn) if fn else None)
    expr = passed_argument(call, fn, name) if call is not None and fn is not None else None
    while (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in MOVES
        and isinstance(expr.func.value, ast.Name | ast.Call)
    ):
        expr = expr.func.value
    return expr


# `batch['w']`: a dict-key guard's subject (`guards.explain_guard`)
_KEYED = re.compile(r"(?P<d>[A-Za-z_]\w*)\[(?P<k>'[^']*'|\"[^\"]*\")\]")


def _key_stored(name: str, key: str, code: str, call_site: str) -> str:
    """Where the key a dict-key guard failed on is stored into the dict passed as `name`: a
    subscript store of that key (`batch["w"] = ...`) to the name the caller passes, in its function
    (the last before the call, else the first: a loop reaches it before the next call), or, passed
    as a call of a function of the file (`make_batch(cfg, step, dev)`), to a name that function
    returns. The line a user changes, beside the `if key in d:` that reads it; `` when none."""
    file, line = split_location(call_site)
    expr = _passed(name, code, file, line) if file else None
    scope: ast.AST | None = None
    names: set[str] = set()
    if isinstance(expr, ast.Name):
        scope, names = function_around(file, line) or syntax_tree(file), {expr.id}
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        scope = top_level_function(file, expr.func.id)
        returned = [n.value for n in ast.walk(scope) if isinstance(n, ast.Return)] if scope else []
        names = {r.id for r in returned if isinstance(r, ast.Name)}
    stored = sorted(
        n.lineno
        for n in (ast.walk(scope) if scope and names else ())
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Subscript)
        and isinstance(t.value, ast.Name)
        and t.value.id in names
        and isinstance(t.slice, ast.Constant)
        and t.slice.value == key
    )
    if not stored:
        return ""
    before = [n for n in stored if n <= line or not isinstance(expr, ast.Name)]
    return f"{file}:{before[-1] if before else stored[0]}"


def _positional(index: int, call_site: str) -> str:
    """Where the tensor passed at position `index` of the compiled callable's call at
    `call_site` was made: dynamo names an argument `args[0]` where the compiled function takes
    `*args` (`torch.compile(nn.Sequential(...))`), so the call is the one to a name bound by
    `torch.compile(...)` in the file, not the outermost (`F.cross_entropy(compiled(x), y)`)."""
    file, line = split_location(call_site)
    call = _call_of(file, line, _compiled_names(file)) if file else None
    expr = call.args[index] if call is not None and index < len(call.args) else None
    if not isinstance(expr, ast.Name):
        return ""
    found = assigned_before(file, line, expr.id)
    return f"{file}:{made_at(file, found, expr.id)}" if found else ""


def _compiled_names(file: str) -> set[str]:
    """The names (or `self.` attributes) the file binds to `torch.compile(...)`'s result."""
    tree = syntax_tree(file)
    bound = wrappers(tree) if tree else []
    return {w.alias for w in bound if w.alias and call_name(w.call.func) == "compile"}


def parameters(code: str) -> list[str] | None:
    """The parameter names of the compiled function whose code starts at `code` (without `self`),
    None when unreadable."""
    fn = compiled_def(code)
    return positional(fn) if fn else None


def compiled_def(code: str) -> Function | None:
    """The `def` of the compiled function whose code starts at `code` (`file:line`): a decorated
    function's code starts at its first decorator, the `def` is below."""
    file, line = split_location(code)
    tree = syntax_tree(file) if file else None
    found = (
        [n for n in ast.walk(tree) if isinstance(n, Function) and line <= n.lineno < line + 8] if tree else []
    )
    return min(found, key=lambda n: n.lineno) if found else None


def compiled_call(file: str, line: int, code: str) -> ast.Call | None:
    """The call of the compiled function on the statement starting at `file:line`, nested or not
    (`forward(x, tau)` inside `mse_loss(forward(x, tau), x)`): a call of a name the file binds to
    `torch.compile(...)` / `torch_xla.compile(...)`, the compiled `def`'s own name (a decorated
    function) first; None when the line calls neither (compiled elsewhere)."""
    fn = compiled_def(code)  # its own name first: a file may compile several
    return (_call_of(file, line, {fn.name}) if fn else None) or _call_of(file, line, _compiled_names(file))


def _call_of(file: str, line: int, names: set[str]) -> ast.Call | None:
    """The outermost call on the statement at `file:line` of one of `names`."""
    stmt = statement(file, line)
    calls = (n for n in ast.walk(stmt) if isinstance(n, ast.Call)) if stmt else ()
    return next((n for n in calls if call_name(n.func) in names), None)


def _call_at(file: str, line: int, code: str, params: list[str] | None) -> ast.Call | None:
    """The call of the compiled function (`code` its `def`) on the statement at `file:line`
    (`compiled_call`); else, not named as compiled, the outermost call that takes no more
    positional arguments than `params`. Not the innermost that fits: it would read `dev` as
    the first argument of `step(ids.to(dev))`."""
    stmt = statement(file, line)
    calls = (n for n in ast.walk(stmt) if isinstance(n, ast.Call)) if stmt else ()
    fits = (n for n in calls if params is None or len(n.args) <= len(params))
    return compiled_call(file, line, code) or next(fits, None)


_MODE_SET = re.compile(r"\.(?:train|eval)\(")


def _grows(attr: str) -> re.Pattern[str]:
    """A line that adds an item to the container `.attr`: `self.attr[k] = v`, `.attr.append(v)` ..."""
    return re.compile(
        rf"\.{re.escape(attr)}(?:\[[^\]]*\]\s*=(?!=)|\.(?:append|extend|insert|update|setdefault|add)\()"
    )


def _mode_set(call_site: str) -> str:
    """The `.train(`/`.eval(` call whose mode the recompiled call at `call_site` runs in: in the
    innermost loop around the call that sets a mode, the last such line before the call (the
    step follows it), else the loop's last (reached at the end of the iteration before). A mode
    set before the loop (`net = Net().to(dev).train()`) is the one the first compile assumed."""
    file, line = split_location(call_site)
    loops = [s for s, _ in enclosing(file, line) if isinstance(s, LOOPS)] if file and line else []
    for loop in reversed(loops):
        lines = range(loop.lineno, (loop.end_lineno or loop.lineno) + 1)
        sets = [n for n in lines if _MODE_SET.search(source_line(file, n).split("#", 1)[0])]
        if sets:
            return f"{file}:{max((n for n in sets if n < line), default=sets[-1])}"
    return ""


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
