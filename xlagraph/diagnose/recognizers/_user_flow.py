"""Where the user's Python decides what a traced step's graph holds beyond the step's own code:
how many times a traced loop runs (its body unrolled once per iteration), which functions are
registered as hooks, the tensors put into lists that outlive the step or made from Python lists.
Read from the syntax tree of the stored source, as `_statements` reads it.
"""

from __future__ import annotations

import ast

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._host_numbers import (
    UserDefs,
    argument,
    assignment_in,
    calls_to,
    number_of,
    user_defs,
)
from xlagraph.diagnose.recognizers._statements import (
    SCOPES,
    Function,
    call_name,
    enclosing,
    enclosing_at,
    is_range,
    loads,
    on_self,
    own_nodes,
    reads_on_host,
    stores,
    syntax_tree,
)
from xlagraph.diagnose.recognizers._wrappers import wrappers

__all__ = ["hook_registrations", "kept_in_lists", "list_tensors", "registered_hooks", "trip_count"]


def trip_count(location: str, syncs: tuple[str, ...] = ()) -> list[str]:
    """Where the number of times the loop around `location` runs is decided, when a Python number
    decides it: `for _ in range(k)` with `k` computed on the host, or a loop over a list built
    `for _ in range(k)` (`xs = [... for _ in range(k)]`, here or by a caller that passes it:
    `for x, y in zip(xs, ys):` in a traced step). The lines that compute the number (a helper's
    `return`, its assignment), the list's, the call that passes it, then the loop's header;
    `[]` for any other loop, and for the training loop (around a sync line of `syncs`)."""
    file, _, chain = enclosing_at(location)
    tree = syntax_tree(file) if chain else None
    stops = {n for f, n in map(split_location, syncs) if f == file and n}
    for depth in range(len(chain) - 1, -1, -1):
        loop = chain[depth][0]
        if isinstance(loop, SCOPES) or tree is None:
            return []
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        if any(loop.lineno <= n <= (loop.end_lineno or loop.lineno) for n in stops):
            return []
        found = _count_of(tree, user_defs(tree), chain[: depth + 1], loop.iter, file, 0)
        return [*found, f"{file}:{loop.lineno}"] if found else []
    return []


def _count_of(
    tree: ast.Module,
    defs: UserDefs,
    chain: list[tuple[ast.stmt, list[ast.stmt]]],
    iterated: ast.expr,
    file: str,
    depth: int,
) -> list[str]:
    """The lines that decide how many items `iterated` yields at the end of `chain` (see
    `trip_count`); `[]` when no Python number does."""
    ranges = [n for n in ast.walk(iterated) if isinstance(n, ast.Call) and is_range(n)]
    if ranges:
        names = sorted({x for r in ranges for a in r.args for x in loads(a)})
        return number_of(tree, defs, chain, names, file, 0)[1] if names else []
    if depth > 1:
        return []
    callees = {id(n.func) for n in ast.walk(iterated) if isinstance(n, ast.Call)}
    sequences = [n.id for n in ast.walk(iterated) if isinstance(n, ast.Name) and id(n) not in callees]
    scope = next((s for s, _ in reversed(chain) if isinstance(s, Function)), None)
    body = scope.body if scope is not None else tree.body
    params = {a.arg for a in scope.args.posonlyargs + scope.args.args} if scope is not None else set()
    for name in dict.fromkeys(sequences):
        bound = assignment_in(body, name, chain[-1][0].lineno)
        if isinstance(bound, ast.Assign) and isinstance(bound.value, (ast.ListComp, ast.GeneratorExp)):
            inner = enclosing(file, bound.lineno)
            found = _count_of(tree, defs, inner, bound.value, file, depth) if inner else []
            if found:
                return [*found, f"{file}:{bound.lineno}"]
        if bound is not None or name not in params or scope is None:
            continue
        for call in calls_to(tree, scope)[:3]:  # a list the callers build and pass
            passed = argument(call, scope, name)
            outer = enclosing(file, call.lineno) if isinstance(passed, ast.Name) else []
            found = _count_of(tree, defs, outer, passed, file, depth + 1) if outer and passed else []
            if found:
                return [*found, f"{file}:{call.lineno}"]
    return []


def hook_registrations(user: list[str]) -> list[str]:
    """The lines that register as a hook the function a cited line is in, or the function that
    makes it (`module.register_forward_hook(self._hook(name))`, `_hook` returning the closure):
    hooks run in the order they were registered, so re-registering one moves its tensors last, and
    one registered mid-run adds its work from that step on."""
    found: dict[str, None] = {}
    for loc in user:
        file, _, chain = enclosing_at(loc)
        functions = [s.name for s, _ in chain if isinstance(s, Function)]
        names = set(functions[-2:])
        tree = syntax_tree(file) if names else None
        lines = sorted({c.lineno for c, named in registered_hooks(tree) if named & names}) if tree else []
        found.update((f"{file}:{n}", None) for n in lines)
    return list(found)[:2]


def registered_hooks(tree: ast.Module) -> list[tuple[ast.Call, set[str]]]:
    """Each `m.register_forward_hook(...)` (any `register_*hook`) call with the names its arguments
    mention (`self._hook(name)`: `self`, `_hook`, `name`): the functions it may register."""
    found: list[tuple[ast.Call, set[str]]] = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = call_name(call.func)
        if name.startswith("register_") and name.endswith("hook"):
            args = [n for a in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(a)]
            found.append((call, {getattr(n, "id", None) or getattr(n, "attr", "") for n in args} - {""}))
    return found


# Calls that put a tensor into a container.
_KEEPS = frozenset({"append", "extend", "insert", "add"})


def kept_in_lists(location: str) -> list[str]:
    """Where the name the statement at `location` binds (`features = self.encoder(x)`) is put
    into a container that outlives the function doing it (`keep.append(features.detach())`, where
    `keep` is a parameter, `self.`'s attribute or a module-level name): what keeps that tensor
    alive past the step. A host copy (`.item()`, `.cpu()`) keeps nothing. At most two lines."""
    file, _, chain = enclosing_at(location)
    tree = syntax_tree(file) if chain else None
    names = stores(chain[-1][0]) if chain else set()
    if tree is None or not names:
        return []
    found: list[int] = []
    for function in (n for n in ast.walk(tree) if isinstance(n, Function)):
        local = {x for s in ast.walk(function) if isinstance(s, ast.stmt) for x in stores(s)}
        params = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}
        for node in own_nodes(function):
            call = node.value if isinstance(node, ast.Expr) else None
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                continue
            held = call.func.value
            outlives = on_self(held) or (
                isinstance(held, ast.Name) and (held.id in params or held.id not in local)
            )
            if (
                call.func.attr in _KEEPS
                and outlives
                and any(loads(a) & names and not reads_on_host(a) for a in call.args)
            ):
                found.append(node.lineno)
    return [f"{file}:{n}" for n in sorted(set(found))[:2]]


# `torch.tensor([...])`: a tensor whose length is a Python list's.
_FROM_LIST = frozenset({"tensor", "as_tensor", "FloatTensor", "LongTensor", "Tensor"})


def _from_list(node: ast.expr, defs: UserDefs, body: list[ast.stmt], depth: int = 0) -> list[int]:
    """The lines where `node`, an argument of a call, is made from a Python list: the call itself
    (`torch.tensor([...])`), the `return` of a user function it calls, or the assignment of the
    name it is (followed once)."""
    if isinstance(node, ast.Call):
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in _FROM_LIST
            and isinstance(func.value, ast.Name)
            and func.value.id == "torch"
            and node.args
            and isinstance(node.args[0], (ast.List, ast.ListComp, ast.Name))
        ):
            return [*_list_made(node.args[0], defs, body), node.lineno]
        if isinstance(func, ast.Attribute) and func.attr == "to" and depth < 2:  # `rows.to(device)`
            return _from_list(func.value, defs, body, depth + 1)
        callee = defs.functions.get(func.id) if isinstance(func, ast.Name) and depth < 2 else None
        if callee is None:
            return []
        returns = [n for n in ast.walk(callee) if isinstance(n, ast.Return) and n.value is not None]
        return [n for r in returns for n in _from_list(r.value, defs, callee.body, depth + 1)]  # type: ignore[arg-type]
    if isinstance(node, ast.Name) and depth < 2:
        bound = assignment_in(body, node.id, getattr(node, "lineno", 0))
        if isinstance(bound, ast.Assign):
            return _from_list(bound.value, defs, body, depth + 1)
    return []


def _list_made(node: ast.expr, defs: UserDefs, body: list[ast.stmt]) -> list[int]:
    """Where the list named `node` gets its length, when a user function returns it
    (`rows = noisy_positions(rng)` and its `return [i for i in ... if rng.random() < p]`): those
    `return` lines; `[]` for a list literal or anything else."""
    if not isinstance(node, ast.Name):
        return []
    bound = assignment_in(body, node.id, node.lineno)
    value = bound.value if isinstance(bound, ast.Assign) else None
    callee = (
        defs.functions.get(value.func.id)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        else None
    )
    returns = [n for n in own_nodes(callee) if isinstance(n, ast.Return)] if callee is not None else []
    return [r.lineno for r in returns if isinstance(r.value, (ast.List, ast.ListComp))]


def _sizes_read(function: Function, name: str) -> list[int]:
    """Lines of `function` that read the size of its parameter `name` (`x[:, : name.shape[0]]`,
    `len(name)`, `name.size(0)`)."""
    found = []
    for n in own_nodes(function):
        if isinstance(n, ast.Attribute) and n.attr in ("shape", "size") and isinstance(n.value, ast.Name):
            hit = n.value.id == name
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and n.args:
            hit = isinstance(n.args[0], ast.Name) and n.args[0].id == name
        else:
            continue
        if hit:
            found.append(n.lineno)  # type: ignore[attr-defined]
    return sorted(set(found))


def list_tensors(site: str) -> list[str]:
    """Tensors the call at `site` (a traced step's call) passes that are made from a Python list
    (`torch.tensor([w / total for w in inv])`, in a helper whose result it passes): their length
    is the list's. Those lines, then the lines of the called function that read that argument's
    size (`logits[:, : weights.shape[0]]`); `[]` where no argument is made so."""
    file, _, chain = enclosing_at(site)
    tree = syntax_tree(file) if chain else None
    if tree is None:
        return []
    defs = user_defs(tree)
    scope = next((s for s, _ in reversed(chain) if isinstance(s, Function)), None)
    body = scope.body if scope is not None else tree.body
    made: list[int] = []
    sized: list[int] = []
    for call in (n for n in ast.walk(chain[-1][0]) if isinstance(n, ast.Call)):
        callee = _wrapped(tree, defs, call_name(call.func)) if isinstance(call.func, ast.Name) else None
        params = [a.arg for a in callee.args.posonlyargs + callee.args.args] if callee else []
        for k, arg in enumerate(call.args):
            lines = _from_list(arg, defs, body)
            made += lines
            if lines and k < len(params):
                sized += _sizes_read(callee, params[k])  # type: ignore[arg-type]
    return [f"{file}:{n}" for n in dict.fromkeys([*made, *sized])]


def _wrapped(tree: ast.Module, defs: UserDefs, name: str) -> Function | None:
    """The user function `name` calls: itself, or the one a wrapper bound to it was made of
    (`step_fn = torch_xla.compile(train_step)`; a plain name its only positional argument)."""
    if name in defs.functions:
        return defs.functions[name]
    bound = next(
        (
            w
            for w in wrappers(tree)
            if w.alias == name and w.only_argument and isinstance(w.function, ast.Name)
        ),
        None,
    )
    return defs.functions.get(bound.wraps) if bound is not None else None
