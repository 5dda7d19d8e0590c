"""Where the user's code switches precision, read from the statements around the user's frames of
the ops whose type changed: the `with torch.autocast(...)` that encloses them and the lines just
before it that set its arguments (`amp = step >= 3`), else a cast of a model or tensor in the loop
that runs them (`model.half()`, `.to(torch.bfloat16)`, `torch.set_default_dtype(...)`).

The ops under autocast carry the lines of the model's code (a layer's forward); the switch is an
enclosing statement of an outer frame of the same stack, which the syntax tree of the stored file
names exactly (a regex over the file would cite any `autocast(` it mentions).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.frames import split_location, user_frames
from xlagraph.diagnose.recognizers._host_numbers import passed_by_callers
from xlagraph.diagnose.recognizers._set_before import set_before
from xlagraph.diagnose.recognizers._statements import (
    LOOPS,
    Function,
    call_name,
    called_functions,
    enclosing,
    loads,
    syntax_tree,
)
from xlagraph.ir import Instruction

__all__ = ["switch_lines"]

_MAX_INSTRUCTIONS = 400  # a region's first ops have the same stacks as the rest
_LOW_NAMES = frozenset({"bfloat16", "float16", "half"})
_TYPE_NAMES = _LOW_NAMES | {"float32", "float64", "float", "double"}
# The statements whose body is "the code that ran": the innermost loop or function around a line.
_SCOPES = (*LOOPS, ast.FunctionDef, ast.AsyncFunctionDef)
_CALL_DEPTH = 2  # a loop's call into a callback list, and the callback's own helper


def _autocast(node: ast.expr) -> ast.Call | None:
    return node if isinstance(node, ast.Call) and "autocast" in call_name(node.func).lower() else None


def _is_cast(call: ast.Call) -> bool:
    """`x.half()`, `x.bfloat16()`, `x.to(torch.bfloat16)`, `x.to(dtype=...)`, `x.to(x, dtype)`,
    `torch.set_default_dtype(...)`: a cast to a named floating type (not `.float()` on a value,
    which every loss computation does)."""
    name = call_name(call.func)
    if name == "set_default_dtype":
        return True
    if name in _LOW_NAMES and not call.args and isinstance(call.func, ast.Attribute):
        return True
    if name != "to":
        return False
    args = [*call.args, *(k.value for k in call.keywords)]
    return any(k.arg == "dtype" for k in call.keywords) or any(
        (isinstance(a, ast.Attribute) and a.attr in _TYPE_NAMES)
        or (isinstance(a, ast.Name) and "dtype" in a.id)
        for a in args
    )


def _typed_names(scope: ast.stmt) -> dict[str, int]:
    """Names the scope sets to a floating type by a condition (`dt = torch.bfloat16 if
    cfg.bf16 else torch.float32`) -> the line of that assignment: what a `.to(dt)` casts to is
    decided there."""
    found: dict[str, int] = {}
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.IfExp)
            and any(_names_type(v) for v in (node.value.body, node.value.orelse))
        ):
            found.setdefault(node.targets[0].id, node.lineno)
    return found


def _names_type(node: ast.expr) -> bool:
    """`torch.bfloat16`, `torch.float32`, ...: a floating type named."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr in _TYPE_NAMES
        and isinstance(node.value, ast.Name)
        and node.value.id == "torch"
    )


def _sites(stacks: Iterable[tuple[CanonicalModule, Instruction]]) -> list[tuple[str, int]]:
    """(file, line) of every user frame of the instructions' stacks, first seen first."""
    seen: dict[tuple[str, int], None] = {}
    for n, (canon, ins) in enumerate(stacks):
        if n >= _MAX_INSTRUCTIONS:
            break
        for f in user_frames(canon.module.frames_of(ins)):
            if f.line > 0:
                seen.setdefault((f.file, f.line))
    return list(seen)


def _autocasts(file: str, chain: list[tuple[ast.stmt, list[ast.stmt]]], found: dict[str, None]) -> None:
    """The autocast `with` lines of `chain`, each followed by the lines that set its arguments."""
    for depth, (stmt, _) in enumerate(chain):
        if not isinstance(stmt, (ast.With, ast.AsyncWith)):
            continue
        calls = [c for item in stmt.items if (c := _autocast(item.context_expr))]
        if not calls:
            continue
        found.setdefault(f"{file}:{stmt.lineno}")
        names = {n for c in calls for a in _arguments(c) for n in loads(a)}
        for k in set_before(chain[: depth + 1], names):
            found.setdefault(f"{file}:{k}")
        # an argument of the step function (`enabled=use_amp`): where its callers set it
        found.update(dict.fromkeys(passed_by_callers(file, chain[: depth + 1], names)))
        for c in calls:
            _helper_autocast(file, c, found)


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _self_attributes(nodes: Iterable[ast.AST]) -> set[str]:
    """`x` of every `self.x` the nodes read."""
    return {
        n.attr
        for node in nodes
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }


def _helper_autocast(file: str, call: ast.Call, found: dict[str, None]) -> None:
    """`with policy.autocast():` runs the user's own function, defined once in the same file,
    that builds the autocast (`return torch.autocast("xla", enabled=use_bf16)`): the switch is
    there, with the lines above it that set its arguments and, for a method, the assignments in
    the class's other methods (not `__init__`) to the attributes they read
    (`self.compute_dtype = torch.bfloat16` in a scheduler-like `step()`)."""
    tree = syntax_tree(file)
    name = call_name(call.func)
    defs = [
        n for n in (ast.walk(tree) if tree is not None else ()) if isinstance(n, Function) and n.name == name
    ]
    if len(defs) != 1:  # not the user's, or ambiguous
        return
    helper = defs[0]
    read: list[ast.AST] = []
    for c in [n for n in ast.walk(helper) if isinstance(n, ast.Call) and _autocast(n)][:2]:
        found.setdefault(f"{file}:{c.lineno}")
        setters = set_before(enclosing(file, c.lineno), {n for a in _arguments(c) for n in loads(a)})
        found.update((f"{file}:{k}", None) for k in setters)
        read += _arguments(c)
        read += [s for s in ast.walk(helper) if isinstance(s, ast.stmt) and s.lineno in setters]
    attrs = _self_attributes(read)
    chain = enclosing(file, helper.lineno)
    owner = next((s for s, _ in reversed(chain) if isinstance(s, ast.ClassDef)), None)
    if owner is None or not attrs:
        return
    for method in owner.body:
        if not isinstance(method, Function) or method.name in (name, "__init__"):
            continue
        for node in ast.walk(method):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _self_attributes(targets) & attrs:
                    found.setdefault(f"{file}:{node.lineno}")


def switch_lines(
    stacks: Iterable[tuple[CanonicalModule, Instruction]], syncs: Iterable[str] = ()
) -> list[str]:
    """`file:line` of the statements that switch precision for the instructions: an autocast
    `with` around their user frames, else one in the loop (or function) around those frames or
    around the sync lines `syncs` (dumps often keep only a stack's innermost frame, inside the
    model, while the `with` wraps the call in the training loop), each followed by the lines
    that set its arguments; where there is none, the casts in those loops. `[]` when the code
    shows none."""
    sites = _sites(stacks)
    synced = [(f, n) for f, n in map(split_location, syncs) if f and n]
    sites += [s for s in synced if s not in sites]
    found: dict[str, None] = {}
    scopes: dict[tuple[str, int], ast.stmt] = {}
    for file, line in sites:
        chain = enclosing(file, line)
        _autocasts(file, chain, found)
        # The innermost loop or function around an op; around a sync, every loop out to its
        # function: a cast between epochs sits in the epoch loop, outside the loop of steps.
        around = [s for s, _ in reversed(chain) if isinstance(s, _SCOPES)]
        if (file, line) in synced:
            functions = [k for k, s in enumerate(around) if isinstance(s, Function)]
            around = around[: functions[0] + 1] if functions else around
        for scope in around if (file, line) in synced else around[:1]:
            scopes.setdefault((file, scope.lineno), scope)
    for (file, _), scope in scopes.items() if not found else ():
        for node in ast.walk(scope):
            if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                _autocast(i.context_expr) for i in node.items
            ):
                _autocasts(file, enclosing(file, node.body[0].lineno), found)
    if found:
        return list(found)[:4]
    for (file, _), scope in scopes.items():
        typed = _typed_names(scope)
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call):
                continue
            # a cast to a name the scope sets to a type: the line that decides the type first
            deciding = [
                typed[a.id]
                for a in node.args
                if call_name(node.func) == "to" and isinstance(a, ast.Name) and a.id in typed
            ]
            if deciding:
                found.setdefault(f"{file}:{deciding[0]}")
            if deciding or _is_cast(node):
                found.setdefault(f"{file}:{node.lineno}")
    for (file, _), scope in scopes.items() if not found else ():
        if isinstance(scope, LOOPS):
            for call in _called_casts(file, scope):
                found.setdefault(f"{file}:{call.lineno}")
    return list(found)[:3]


def _called_casts(file: str, loop: ast.stmt) -> list[ast.Call]:
    """The casts in the user's functions the loop calls by name (`cb.on_step_start(self, step)`
    runs a callback's `trainer.model.encoder.to(torch.bfloat16)` between steps), followed
    `_CALL_DEPTH` calls deep within the same stored file: the loop's own body shows no cast."""
    tree = syntax_tree(file)
    if tree is None:
        return []
    defs: dict[str, list[ast.stmt]] = {}
    for n in ast.walk(tree):
        if isinstance(n, Function) and not n.name.startswith("__"):
            defs.setdefault(n.name, []).append(n)
    reached = called_functions(loop, defs, _CALL_DEPTH, lambda d: d)
    casts = [n for body in reached for n in ast.walk(body) if isinstance(n, ast.Call) and _is_cast(n)]
    return sorted(dict.fromkeys(casts), key=lambda c: c.lineno)
