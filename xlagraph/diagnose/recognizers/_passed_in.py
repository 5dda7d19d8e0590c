"""Where the caller decides a compiled function's argument (issue 37): a loop inside a function
`torch_xla.compile` traces (`@torch_xla.compile`, `step_fn = torch_xla.compile(train_step)`) that
iterates one of the function's parameters runs in the order of the value passed at each call, so
the lines that set that value before the call (`order = names if step % 2 == 0 else names[::-1]`)
decide the order, not the loop inside the trace."""

from __future__ import annotations

import ast

from xlagraph.diagnose.recognizers._set_before import set_before
from xlagraph.diagnose.recognizers._statements import Function, call_name, enclosing, syntax_tree
from xlagraph.diagnose.recognizers._wrappers import compiles, wrappers

__all__ = ["decided_by_callers", "passed_argument", "positional"]


def _aliases(tree: ast.Module, function: Function) -> set[str]:
    """The names a call of the traced `function` goes by: its own when decorated by
    `torch_xla.compile`, each alias bound to `torch_xla.compile(function)`."""
    names = {function.name} if any(compiles(d) for d in function.decorator_list) else set()
    return names | {
        w.alias for w in wrappers(tree) if w.alias and w.wraps == function.name and compiles(w.call.func)
    }


def positional(function: Function) -> list[str]:
    """The parameters of `function` a call passes by position; a method's `self` / `cls` is the
    receiver, passed apart."""
    names = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    return names[1:] if names and names[0] in ("self", "cls") else names


def passed_argument(call: ast.Call, function: Function, parameter: str) -> ast.expr | None:
    """The argument `call` passes for `parameter` of `function`, by keyword or position."""
    for k in call.keywords:
        if k.arg == parameter:
            return k.value
    params = positional(function)
    if parameter in params and params.index(parameter) < len(call.args):
        return call.args[params.index(parameter)]
    return None


def decided_by_callers(file: str, function: Function, iterated: set[str]) -> list[int]:
    """Lines, at the calls of the traced `function` in `file`, that set the arguments passed for
    the parameters among `iterated` (a name passed on: its assignments before the call, the `if`s
    that rebind it), then the call; [] when `function` is not traced or iterates no parameter."""
    parameters = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    wanted = iterated & parameters
    tree = syntax_tree(file) if wanted else None
    if tree is None:
        return []
    aliases = _aliases(tree, function)
    found: list[int] = []
    calls = (n for n in ast.walk(tree) if isinstance(n, ast.Call) and call_name(n.func) in aliases)
    for call in sorted(calls, key=lambda c: c.lineno):
        names = {
            n.id
            for p in sorted(wanted)
            if (arg := passed_argument(call, function, p)) is not None
            for n in ast.walk(arg)
            if isinstance(n, ast.Name)
        }
        lines = set_before(enclosing(file, call.lineno), names) if names else []
        if lines:
            found += [*lines, call.lineno]
    return found
