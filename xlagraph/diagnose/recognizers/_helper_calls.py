"""Where a helper of the user's own folder is told a size: `ids = token_batch(step, seq_len)`.

A batch made by a function in another module of the script's folder (`h40_common/data.py`'s
`torch.randint(0, vocab, (batch, seq_len))`) carries that module's line, or only the model's
lines that read it; neither decides the length. The script's call that passes the helper a
computed value it uses as a size does, and where that value comes from (a schedule the loop walks)
before it."""

from __future__ import annotations

import ast
import posixpath

from xlagraph.diagnose.frames import is_user_location, source_line, split_location
from xlagraph.diagnose.recognizers._statements import loads, syntax_tree

__all__ = ["helper_size_calls"]


def _helpers(file: str, tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The functions `file` imports by name from a module of its own folder
    (`from h40_common.data import token_batch`), by the name it calls them."""
    folder = posixpath.dirname(file)
    out: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        path = posixpath.join(folder, *node.module.split(".")) + ".py"
        module = syntax_tree(path)
        if module is None:
            continue
        defs = {d.name: d for d in module.body if isinstance(d, ast.FunctionDef)}
        out |= {a.asname or a.name: defs[a.name] for a in node.names if a.name in defs}
    return out


def _size_params(fn: ast.FunctionDef) -> set[str]:
    """The parameters `fn` passes as a tensor's sizes (`(batch, seq_len)` of a factory call)."""
    params = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
    sizes: set[str] = set()
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        args = [*call.args, *(k.value for k in call.keywords if k.arg in ("size", "shape"))]
        sizes |= {
            e.id
            for a in args
            if isinstance(a, (ast.Tuple, ast.List))
            for e in a.elts
            if isinstance(e, ast.Name)
        }
    return sizes & params


def _loop_source(tree: ast.Module, file: str, call: ast.Call, names: set[str]) -> list[str]:
    """`for _phase, (n, seq_len) in schedule.items():` around `call` binds a name it passes: the
    module-level assignment of what the loop walks (`schedule = {...}`), where the sizes are set."""
    out: list[str] = []
    for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):
        inside = loop.lineno < call.lineno <= (loop.end_lineno or loop.lineno)
        bound = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        if not inside or not bound & names:
            continue
        walked = {n.id for n in ast.walk(loop.iter) if isinstance(n, ast.Name)}
        made = [
            s.lineno
            for s in tree.body
            if isinstance(s, ast.Assign)
            and s.lineno < loop.lineno
            and {t.id for t in s.targets if isinstance(t, ast.Name)} & walked
        ]
        out += [f"{file}:{n}" for n in made[-1:]]
    return out


def helper_size_calls(site: str) -> list[str]:
    """The lines of `site`'s file that call a helper of the script's folder with a computed value
    the helper uses as a size (`token_batch(step, seq_len, device=device)`), each followed by where
    that value comes from; empty when there is none."""
    file, line = split_location(site)
    tree = syntax_tree(file) if file and line and is_user_location(site) else None
    if tree is None:
        return []
    helpers = _helpers(file, tree)
    out: list[str] = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        fn = helpers.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if fn is None:
            continue
        passed = [*zip((a.arg for a in fn.args.args), call.args, strict=False)]
        passed += [(k.arg, k.value) for k in call.keywords if k.arg]
        # a name or a lookup (`seq_len`, `phase["tokens"]`): a value the caller computes
        names = set().union(*(loads(v) for p, v in passed if p in _size_params(fn)))
        if names and source_line(file, call.lineno):
            out += [f"{file}:{call.lineno}", *_loop_source(tree, file, call, names)]
    return list(dict.fromkeys(out))
