"""What a traced function returns on some calls only: the lines, inside the function a call site
runs through `torch_xla.compile` (`step_fn = torch_xla.compile(train_step)`, `@torch_xla.compile`),
that add to its result under an `if` (`if want_probs: return loss, probs`, `outs["region"] = ...`
under `if log_region:`). Its outputs are what it returns, so such an `if` changes the graph's outputs;
read from the stored file's syntax tree."""

from __future__ import annotations

import ast
from typing import NamedTuple

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._host_numbers import user_defs
from xlagraph.diagnose.recognizers._set_before import set_before
from xlagraph.diagnose.recognizers._statements import (
    SCOPES,
    Function,
    call_name,
    called_functions,
    child_blocks,
    enclosing,
    loads,
    own_nodes,
    syntax_tree,
)
from xlagraph.diagnose.recognizers._wrappers import compiles, wrappers

__all__ = ["TRACED", "PerItem", "returned_per_item", "returned_under_if"]

# Syncs of a function `torch_xla.compile` traces whole (`report.trigger_of`'s label): its outputs are
# what it returns. (torch.compile's graphs are compared with others the bridge made: left out.)
TRACED = ("torch_xla.compile",)

# Methods that add to a container in place (`outs.append(x)`, `outs.update(extra=x)`).
_ADDS = frozenset({"append", "extend", "update", "setdefault", "insert"})


def _traced(tree: ast.Module, name: str) -> Function | None:
    """The function a call of `name` traces: one bound to `name` by `torch_xla.compile(f)` (also
    `self.step_fn = torch_xla.compile(self._step)`), or one decorated by it."""
    functions = user_defs(tree).functions
    bound = next((w for w in wrappers(tree) if w.alias == name and compiles(w.call.func)), None)
    if bound is not None:
        return functions.get(bound.wraps)
    found = functions.get(name)
    if found is not None and any(compiles(d) for d in found.decorator_list):
        return found
    return None


def _returned(function: Function) -> set[str]:
    """The names the function returns, whole or as an element of a returned tuple or list."""
    names: set[str] = set()
    for node in own_nodes(function):
        if isinstance(node, ast.Return) and node.value is not None:
            values = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) else [node.value]
            names |= {v.id for v in values if isinstance(v, ast.Name)}
    return names


def _optional(function: Function) -> set[str]:
    """Names the function sets to None somewhere (`val_loss = None`): a result filled on some calls."""
    return {
        t.id
        for n in own_nodes(function)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is None
        for t in n.targets
        if isinstance(t, ast.Name)
    }


def _adds(stmt: ast.stmt, returned: set[str], optional: set[str]) -> bool:
    """`stmt` returns, puts a value into a container the function returns, or sets a returned name
    that is None otherwise (a reassigned loss changes a value, it adds no output)."""
    if isinstance(stmt, ast.Return):
        return True
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return any(
            (isinstance(t, ast.Name) and t.id in returned & optional)
            or (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in returned)
            for t in targets
        )
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _ADDS
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id in returned
    )


def _guarded_adds(block: list[ast.stmt], returned: set[str], optional: set[str], guarded: bool) -> list[int]:
    """Lines of `block` (the function's body, or a block inside it) that add to its result inside
    some `if`; nested functions and classes are other scopes."""
    lines: list[int] = []
    for stmt in block:
        if isinstance(stmt, SCOPES):
            continue
        if guarded and _adds(stmt, returned, optional):
            lines.append(stmt.lineno)
        inner = guarded or isinstance(stmt, ast.If)
        for block in child_blocks(stmt):
            lines += _guarded_adds(block, returned, optional, inner)
    return lines


def _local_names(function: Function) -> set[str]:
    """Names bound in `function` (its parameters, its assignments and loop targets), unless
    declared `global` or `nonlocal`: a store into any other name outlives the call."""
    args = function.args
    bound = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    declared: set[str] = set()
    for n in own_nodes(function):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            bound.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            declared.update(n.names)
    return bound - declared


def _root(node: ast.expr) -> ast.expr:
    """The object a chain of attributes and subscripts starts from (`self` of `self.log[k]`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _outlives(target: ast.expr, local: set[str]) -> bool:
    """`target` is state kept past the call: an attribute or item of a module-level name or of
    `self` (`snapshots.append`'s `snapshots`, `self.kept[k]`), not of a local."""
    root = _root(target)
    if not isinstance(root, ast.Name) or target is root:
        return False
    return root.id == "self" or root.id not in local


def _stores(stmt: ast.stmt, local: set[str]) -> bool:
    """`stmt` puts a value into state outliving the call: an append (`_ADDS`), an item or an
    attribute set on it."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return any(isinstance(t, (ast.Subscript, ast.Attribute)) and _outlives(t, local) for t in targets)
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _ADDS
        and _outlives(call.func, local)
    )


def _stored_under_argument(function: Function) -> list[int]:
    """Lines inside an `if` on one of the function's parameters (`if snapshot:`) that store a
    value into state outliving the call (`snapshots.append(z.detach())`): the graph outputs the
    tensor on the calls that pass a true value only, as if it returned more."""
    args = function.args
    parameters = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self"}
    local = _local_names(function)
    lines: list[int] = []
    for guard in own_nodes(function):
        if not isinstance(guard, ast.If):
            continue
        if not {n.id for n in ast.walk(guard.test) if isinstance(n, ast.Name)} & parameters:
            continue
        body, orelse = (_stored(b, local) for b in (guard.body, guard.orelse))
        # a store both branches make (`if peak_first:` swapping two updates) is there on every call
        lines += [
            n
            for here, there in ((body, orelse), (orelse, body))
            for t, n in here
            if t not in {u for u, _ in there}
        ]
    return sorted(set(lines))


def _stored(block: list[ast.stmt], local: set[str]) -> list[tuple[str, int]]:
    """The stores into state outliving the call in `block` and the blocks inside it: what each
    stores into (`snapshots`, `stats[name]`) and its line."""
    found: list[tuple[str, int]] = []
    for stmt in (n for s in block for n in ast.walk(s) if isinstance(n, ast.stmt)):
        if _stores(stmt, local):
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
            if target is None:  # an append: the container
                target = stmt.value.func.value  # type: ignore[attr-defined]
            found.append((ast.unparse(target), stmt.lineno))
    return found


def returned_under_if(call_site: str) -> list[str]:
    """`file:line` of each statement, in the function the call at `call_site` traces through
    `torch_xla.compile`, that adds to what it returns only inside an `if` (a second `return` with
    more, an item set in a returned dict); [] when the call traces no function of that file or
    none adds under an `if`."""
    file, line = split_location(call_site)
    tree = syntax_tree(file) if file and line else None
    if tree is None:
        return []
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    for call in calls:
        function = _traced(tree, call_name(call.func))
        if function is None:
            continue
        returns = [n for n in own_nodes(function) if isinstance(n, ast.Return)]
        # A single `return` at the end under no `if` adds nothing on some calls only, unless the
        # names it returns are filled under one.
        found = _guarded_adds(function.body, _returned(function), _optional(function), False)
        if len(returns) == 1 and returns[0].lineno in found:
            found.remove(returns[0].lineno)
        # stores into state kept past the call under an `if` on an argument add outputs as well
        found += _stored_under_argument(function)
        if found:
            return [f"{file}:{n}" for n in dict.fromkeys(found)]
    return []


_COMPREHENSIONS = (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)


class PerItem(NamedTuple):
    """What a traced function returns one tensor per item of an argument for: `lines`, the
    statements that build the returned container (`panels = {n: panel(n, x) for n in due}`), then
    the caller's lines that set the argument (`due = [...]`); `work`, the lines of that container's
    element expression and of the user's functions it calls (`panel`'s body): the work done for
    those outputs only."""

    lines: tuple[str, ...]
    work: frozenset[str]


def _per_item(function: Function) -> list[tuple[ast.stmt, ast.expr, set[str]]]:
    """The statements that bind a returned name to a comprehension (or return one) iterating over
    an expression of the function's parameters: each with the comprehension's element expression
    and the parameters it iterates over."""
    args = function.args
    parameters = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self"}
    returned = _returned(function)
    found = []
    for stmt in (n for n in own_nodes(function) if isinstance(n, (ast.Assign, ast.Return))):
        value = stmt.value
        named = isinstance(stmt, ast.Return) or any(
            isinstance(t, ast.Name) and t.id in returned
            for t in stmt.targets  # type: ignore[union-attr]
        )
        if not named or not isinstance(value, _COMPREHENSIONS):
            continue
        over = set().union(*(loads(g.iter) for g in value.generators)) & parameters
        element = value.value if isinstance(value, ast.DictComp) else value.elt
        if over:
            found.append((stmt, element, over))
    return found


def returned_per_item(call_site: str) -> PerItem | None:
    """`PerItem` of the function the call at `call_site` traces through `torch_xla.compile`, where
    it returns a container with one entry per item of an argument (the panels due on this call):
    which outputs the graph has follows that argument. None where it returns no such container."""
    file, line = split_location(call_site)
    tree = syntax_tree(file) if file and line else None
    if tree is None:
        return None
    defs = user_defs(tree).functions
    chain = enclosing(file, line)
    for call in (
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and n.lineno <= line <= (n.end_lineno or n.lineno)
    ):
        function = _traced(tree, call_name(call.func))
        built = _per_item(function) if function is not None else []
        if function is None or not built:
            continue
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        passed = dict(zip(params, call.args, strict=False)) | {k.arg: k.value for k in call.keywords if k.arg}
        names = set().union(*(loads(passed[p]) for _, _, over in built for p in over if p in passed))
        set_at = set_before(chain, names) if chain and names else []
        work = {f"{file}:{stmt.lineno}" for stmt, _, _ in built}
        for helper in called_functions(
            ast.Module([ast.Expr(e) for _, e, _ in built], []),
            {k: [v] for k, v in defs.items()},
            2,
            lambda d: d,
        ):
            work |= {f"{file}:{n}" for n in range(helper.lineno, (helper.end_lineno or helper.lineno) + 1)}
        lines = [f"{file}:{stmt.lineno}" for stmt, _, _ in built] + [f"{file}:{n}" for n in set_at]
        return PerItem(tuple(dict.fromkeys(lines)), frozenset(work))
    return None
