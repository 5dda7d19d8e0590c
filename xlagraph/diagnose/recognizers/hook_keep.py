"""Outputs kept alive by a forward hook of the user's: `self.kept[name] = output.detach()` in a hook
registered with `register_forward_hook`. A detach makes no op, so the kept tensor's instructions
carry the module's own library lines (`F.relu`) and cite no line of the user's: the line that keeps
the output decides whether it is an output, and the `if` around it on which steps (issue 37: the
line a user must change is where the value is kept, not torch's relu)."""

from __future__ import annotations

import ast
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._source import user_files
from xlagraph.diagnose.recognizers._statements import Function, call_name, syntax_tree
from xlagraph.diagnose.recognizers._user_flow import registered_hooks

__all__ = ["RECOGNIZER"]

_KEPT = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)


def _hooks(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The hook functions: those registered, and those defined inside a registered maker."""
    forward = [named for c, named in registered_hooks(tree) if call_name(c.func) == "register_forward_hook"]
    names = set().union(*forward)
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in ast.walk(tree):
        if isinstance(node, Function) and node.name in names:
            inner = [n for n in ast.walk(node) if isinstance(n, Function) and n is not node]
            found += inner or [node]
    return found


def _keeps(file: str, hook: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """`file:line` of each statement of the hook that stores its output argument on an attribute
    or in a container, each followed by the `if` of the hook around it."""
    if len(hook.args.args) < 3:  # (module, inputs, output), `self` first in a method
        return []
    output = hook.args.args[-1].arg
    found: list[str] = []

    def visit(stmts: list[ast.stmt], guard: ast.If | None) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                visit(stmt.body, stmt)
                visit(stmt.orelse, stmt)
            elif _stores(stmt, output):
                found.extend(f"{file}:{n}" for n in (stmt.lineno, guard.lineno if guard else 0) if n)

    visit(hook.body, None)
    return found


def _stores(stmt: ast.stmt, output: str) -> bool:
    """`x.a = f(output)`, `x[k] = f(output)`, `x.append(f(output))`."""
    reads = any(isinstance(n, ast.Name) and n.id == output for n in ast.walk(stmt))
    if isinstance(stmt, ast.Assign):
        return reads and any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in stmt.targets)
    return (
        reads
        and isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and call_name(stmt.value.func) in ("append", "extend", "setdefault")
    )


def _recognize(evidence: Evidence, causes: tuple[Cause, ...]) -> Recognized:
    # Outputs whose ops cite only a module's library code (the forward the hook watches).
    bare = [
        i
        for i, c in enumerate(causes)
        if c.kind in _KEPT
        and c.library
        and all("torch/nn/" in s.replace("\\", "/") for s in c.library)
        and not any(is_user_location(s) for s in c.sources)
    ]
    if not bare:
        return NOTHING
    lines: list[str] = []
    for file in user_files(evidence):
        tree = syntax_tree(file)
        lines += [k for hook in (_hooks(tree) if tree is not None else []) for k in _keeps(file, hook)]
    if not lines:
        return NOTHING
    # Every cause given back in its place: the order of a recompile's causes is what it says first.
    found = tuple(
        replace(c, sources=tuple(dict.fromkeys([*lines[:4], *c.sources]))) if i in bare else c
        for i, c in enumerate(causes)
    )
    return Recognized(found, frozenset(range(len(causes))))


RECOGNIZER = Recognizer("hook_keep", _recognize)
