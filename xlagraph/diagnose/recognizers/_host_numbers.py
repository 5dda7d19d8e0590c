"""Where the user computes a Python number a line reads: the assignment before it, the helper
that returns it (`start * max(0.0, 1 - t / n)`), the callers that pass it, the loop that carries it
(`_statements` gives the statements around a line; this follows one number through them).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, replace

from xlagraph.diagnose.recognizers._set_before import set_before
from xlagraph.diagnose.recognizers._statements import (
    LOOPS,
    SCOPES,
    Function,
    call_name,
    child_blocks,
    enclosing,
    enclosing_at,
    loads,
    on_self,
    reads_on_host,
    stores,
    syntax_tree,
)
from xlagraph.diagnose.recognizers._wrappers import wrappers

__all__ = [
    "UserDefs",
    "argument",
    "assignment_in",
    "calls_to",
    "definitions",
    "host_number",
    "number_of",
    "passed_by_callers",
    "python_number",
    "user_defs",
]


_NUMERIC = frozenset({"max", "min", "float", "int", "round", "abs", "pow"})
_NUMERIC_MODULES = frozenset({"math"})


def _receiver(node: ast.expr) -> str:
    """`sched` or `self.sched`: an object a call can be made on; `` for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    return f"self.{node.attr}" if on_self(node) else ""  # type: ignore[attr-defined]


@dataclass(frozen=True)
class UserDefs:
    """The user's functions of one file by name, and the names bound to an instance of one of
    its classes (`anneal = SmoothingAnneal(0.3, 5)`, `self.sched = Warmup(...)`), so that
    `anneal(step)` is that class's `__call__` and `self.sched.value(step)` its `value`; in a
    method of class `own`, `self.batch_size(step)` is that class's `batch_size`."""

    functions: dict[str, Function]
    instances: dict[str, ast.ClassDef]
    own: ast.ClassDef | None = None

    def callee(self, func: ast.expr) -> Function | None:
        if isinstance(func, ast.Name) and func.id in self.functions:
            return self.functions[func.id]
        method = "__call__"
        called = func
        if isinstance(func, ast.Attribute) and not on_self(func):
            func, method = func.value, func.attr
        owner = self.instances.get(_receiver(func))
        if owner is None and self.own is not None and on_self(called):
            owner, method = self.own, called.attr  # type: ignore[attr-defined]
        found = [n for n in owner.body if isinstance(n, Function) and n.name == method] if owner else []
        return found[0] if found else None


def user_defs(tree: ast.Module) -> UserDefs:
    functions: dict[str, Function] = {}
    classes: dict[str, ast.ClassDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, Function):
            functions.setdefault(node.name, node)
        elif isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, node)
    made: dict[str, set[str]] = {}  # receiver -> the classes assigned to it
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _receiver(node.targets[0]):
            cls = node.value.func if isinstance(node.value, ast.Call) else None
            name = cls.id if isinstance(cls, ast.Name) else ""
            made.setdefault(_receiver(node.targets[0]), set()).add(name)
    # A name bound to instances of one user class only (anything else assigned to it: unknown).
    only = {k: next(iter(v)) for k, v in made.items() if len(v) == 1}
    return UserDefs(functions, {k: classes[c] for k, c in only.items() if c in classes})


def definitions(files: Iterable[str]) -> dict[str, tuple[str, Function]]:
    """The user's functions of `files` by name (the first defined of each name), with their file."""
    found: dict[str, tuple[str, Function]] = {}
    for file in dict.fromkeys(files):
        tree = syntax_tree(file)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, Function):
                found.setdefault(node.name, (file, node))
    return found


def assignment_in(body: list[ast.stmt], name: str, before: int) -> ast.stmt | None:
    """The last statement of `body` (nested blocks included) above line `before` that binds
    `name`."""
    last: ast.stmt | None = None
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        binds = isinstance(node, ast.stmt) and node.lineno < before and name in stores(node)
        if binds and (last is None or node.lineno > last.lineno):
            last = node  # type: ignore[assignment]
    return last


def host_number(value: ast.expr, defs: UserDefs, depth: int = 0) -> list[int] | None:
    """`value` computes a Python number on the host: it calls only numeric builtins, `math` and
    the user's own functions and methods of the user's objects that do the same (nothing of
    torch, no method of a tensor). The
    lines of those functions that compute what they return (`[]` for plain arithmetic); None
    when it is no such value."""
    lines: list[int] = []
    for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)):
        func = call.func
        if isinstance(func, ast.Name) and func.id in _NUMERIC:
            continue
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in _NUMERIC_MODULES
        ):
            continue
        callee = defs.callee(func)
        if callee is None or depth > 2:
            return None
        made = _returns_number(callee, defs, depth + 1)
        if made is None:
            return None
        lines += made
    return lines


def _returns_number(function: Function, defs: UserDefs, depth: int) -> list[int] | None:
    """The lines where `function` computes the Python number it returns (the `return`, or the
    assignment of the name it returns); None when it may return anything else."""
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return None
    lines: list[int] = []
    for ret in returns:
        value: ast.expr = ret.value  # type: ignore[assignment]
        line = ret.lineno
        if isinstance(value, ast.Name):
            bound = assignment_in(function.body, value.id, ret.lineno)
            if not isinstance(bound, ast.Assign):
                return None
            value, line = bound.value, bound.lineno
        inner = host_number(value, defs, depth)
        if inner is None:
            return None
        lines += [*inner, line]
    return lines


def argument(call: ast.Call, function: Function, name: str) -> ast.expr | None:
    """What `call` passes to the parameter `name` of `function` (by keyword or position;
    a method's `self` is not passed)."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    if name in params and params.index(name) < len(call.args):
        return call.args[params.index(name)]
    return None


def calls_to(tree: ast.Module, function: Function) -> list[ast.Call]:
    """The calls of `function`, by its name or by a name bound to a wrapper of it that passes the
    arguments on (`step_fn = torch_xla.compile(train_step)`: the function its only positional
    argument; `functools.partial(f, x)` binds one and is not followed)."""
    names = {function.name}
    names |= {w.alias for w in wrappers(tree) if w.only_argument and w.wraps == function.name and w.alias}
    return sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call) and call_name(n.func) in names),
        key=lambda n: n.lineno,
    )


def python_number(location: str) -> tuple[str, list[str]]:
    """The Python number the statement at `location` reads, where the user computes it: a name
    it reads whose nearest assignment above (in its function) computes a number on the host
    (`ent_coef = entropy_coef(update, ...)`, a helper returning `start * max(0.0, 1 - t / n)`),
    followed through a parameter of its function to the argument its callers pass (`m` of
    `update_momentum(..., m=momentum_val)`). The name and the lines that compute it (the
    helper's, then the assignment); `("", [])` when there is none."""
    file, _, chain = enclosing_at(location)
    tree = syntax_tree(file) if chain else None
    if tree is None or not chain:
        return "", []
    defs = user_defs(tree)
    return number_of(tree, defs, chain, sorted(loads(chain[-1][0])), file, 0)


def number_of(
    tree: ast.Module,
    defs: UserDefs,
    chain: list[tuple[ast.stmt, list[ast.stmt]]],
    names: list[str],
    file: str,
    depth: int,
) -> tuple[str, list[str]]:
    here = chain[-1][0].lineno
    scope = next((s for s, _ in reversed(chain) if isinstance(s, Function)), None)
    body = scope.body if scope is not None else tree.body
    # `self.<method>(...)` calls a method of the class this function is one of.
    owner = next((s for s, _ in reversed(chain) if isinstance(s, ast.ClassDef)), None)
    defs = replace(defs, own=owner)
    for name in names:
        bound = assignment_in(body, name, here)
        if (
            isinstance(bound, ast.Assign)
            and len(bound.targets) == 1
            and isinstance(bound.targets[0], ast.Name)
        ):
            made = host_number(bound.value, defs)
            if made is not None and (made or any(isinstance(n, ast.Call) for n in ast.walk(bound.value))):
                return name, [f"{file}:{n}" for n in dict.fromkeys([*made, bound.lineno])]
            carried = _carried(chain, name, defs) if made == [] else []
            if carried:
                return name, [f"{file}:{n}" for n in carried]
            continue
        params = (
            {a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs}
            if scope
            else set()
        )
        if bound is not None or name not in params or depth > 1 or scope is None:
            continue
        for call in calls_to(tree, scope)[:3]:  # the callers pass the value
            passed = argument(call, scope, name)
            if passed is not None and not isinstance(passed, ast.Name):  # `f(x, anneal(step))`
                made = host_number(passed, defs)
                if made:
                    return name, [f"{file}:{n}" for n in dict.fromkeys([*made, call.lineno])]
            if not isinstance(passed, ast.Name):
                continue
            outer = enclosing(file, call.lineno)
            if outer:
                found = number_of(tree, defs, outer, [passed.id], file, depth + 1)
                if found[1]:
                    return found
    return "", []


def passed_by_callers(file: str, chain: list[tuple[ast.stmt, list[ast.stmt]]], names: set[str]) -> list[str]:
    """For each of `names` that is a parameter of the function `chain` sits in, where its callers
    (at most three) pass it: the call and the lines that set the argument before it
    (`use_amp = it >= warmup` then `train_step(x, y, use_amp)`, for `enabled=use_amp` inside
    `train_step`)."""
    tree = syntax_tree(file)
    scope = next((s for s, _ in reversed(chain) if isinstance(s, Function)), None)
    if tree is None or scope is None:
        return []
    params = {a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs}
    found: list[str] = []
    for call in calls_to(tree, scope)[:3]:
        for name in sorted(names & params):
            passed = argument(call, scope, name)
            if passed is None:
                continue
            outer = enclosing(file, call.lineno)
            setters = set_before(outer, set(loads(passed))) if outer else []
            found += [f"{file}:{n}" for n in [*setters, call.lineno]]
    return list(dict.fromkeys(found))


def _carried(chain: list[tuple[ast.stmt, list[ast.stmt]]], name: str, defs: UserDefs) -> list[int]:
    """A number set once to a literal before the loop (`smooth = 0.0`) and set again in the
    loop's body after the statement that reads it (`if loss.item() < t: smooth = 0.1`): the new
    value reaches the next step, so the loop's assignment is what changes it. The `if` headers
    above each such assignment in the loop, then the assignments; `[]` when there is none."""
    here = chain[-1][0].lineno
    loop = None
    for stmt, _ in reversed(chain):
        if isinstance(stmt, SCOPES):
            break  # the loop of this function only
        if isinstance(stmt, LOOPS):
            loop = stmt
            break
    if loop is None:
        return []
    found: list[int] = []
    ifs: list[int] = []

    def walk(block: list[ast.stmt], guards: list[int]) -> None:
        for stmt in block:
            if isinstance(stmt, SCOPES):
                continue
            if stmt.lineno > here and name in stores(stmt):
                value = getattr(stmt, "value", None)
                if value is not None and (host_number(value, defs) is not None or reads_on_host(value)):
                    ifs.extend(guards)
                    found.append(stmt.lineno)
            inner = [*guards, stmt.lineno] if isinstance(stmt, ast.If) else guards
            for b in child_blocks(stmt):
                walk(b, inner)

    walk(loop.body, [])
    return [*dict.fromkeys(ifs), *found] if found else []
