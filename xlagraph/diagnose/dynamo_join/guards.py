"""What dynamo's half decides of one compile: its guard failures in the user's words (where the
changed value was computed, the fix), whether it is expected (another mode's first compile), its
fix; `report/dynamo.py` only places them."""

from __future__ import annotations

from collections.abc import Sequence

from xlagraph.diagnose.dynamo_join.branches import branch_fix
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure
from xlagraph.diagnose.fixes import CACHE_LIMIT_FIX
from xlagraph.diagnose.frames import is_library, source_line, split_location
from xlagraph.diagnose.guard_lines import dtype_cast, dtype_made, grad_scope, requires_grad_set
from xlagraph.diagnose.guards import GuardChange, explain_guard, fix_for
from xlagraph.diagnose.value_origin import origin_of
from xlagraph.dynamolog import DynamoCompile
from xlagraph.ir import Frame

__all__ = ["call_site", "compile_fix", "compile_kind", "guard_failures", "is_expected", "user_line"]

_MODES = frozenset({"train_eval", "grad_mode"})  # one graph per mode: expected once each


def call_site(c: DynamoCompile) -> str:
    """The user's line that called the compiled frame (the first user frame of its call stack)."""
    return user_line(c.call_stack) or c.code


def user_line(stack: Sequence[Frame]) -> str:
    """`file:line` of the first user frame of `stack` (`<string>` and the like are library), or ""."""
    return next((f"{f.file}:{f.line}" for f in stack if not is_library(f)), "")


def guard_failures(c: DynamoCompile, files: Sequence[str] = ()) -> tuple[GuardFailure, ...]:
    """`files`: the compiled frames' files of the run, for a record that names none (the recompile
    limit's), so the cut path in a guard's note is found again all the same."""
    out = []
    for k, text in enumerate(c.guard_failures):
        g = explain_guard(text, c.file)
        for file in files if not c.file and g.file else ():
            if (g2 := explain_guard(text, file)).file == file:
                g = g2
                break
        # the first failure is what changed since the last compile: where was it computed?
        origin = _origin(g, c) if k == 0 and c.recompile else ""
        out.append(
            GuardFailure(
                kind=g.kind,
                phrase=g.phrase,
                text=g.text,
                at=f"{g.file}:{g.line}" if g.line else "",
                source=g.source,
                entry=g.entry,
                fix=branch_fix(g.kind, g.source, g.subject) or fix_for(g.kind),
                origin=origin,
                origin_source=source_line(*split_location(origin)).strip() if origin else "",
            )
        )
    return tuple(out)


def _origin(g: GuardChange, c: DynamoCompile) -> str:
    """Where the user computed the value the guard failed on; for a dtype, where the input was
    cast to its new one; for requires_grad, where it was switched; for the grad mode, the `with`
    around the call that sets it."""
    if g.kind == "tensor_dtype":
        made = origin_of(g.kind, g.subject, c.code, call_site(c))
        return dtype_cast(g.subject, g.after, c.code, call_site(c)) or (made and dtype_made(made, g.after))
    if g.kind == "tensor_requires_grad":
        return requires_grad_set(g.subject, c.code, call_site(c)) or origin_of(
            g.kind, g.subject, c.code, call_site(c)
        )
    if g.kind == "grad_mode":
        return grad_scope(call_site(c))
    return origin_of(g.kind, g.subject, c.code, call_site(c))


def compile_kind(c: DynamoCompile) -> str:
    """`first`, `recompile`, or `cache_limit` (dynamo gave up: the frame runs eagerly from here on)."""
    return "cache_limit" if c.hit_limit else "recompile" if c.recompile else "first"


def is_expected(c: DynamoCompile, guards: Sequence[GuardFailure], compiles: Sequence[DynamoCompile]) -> bool:
    """A first compile, or the first compile of another mode (train/eval, grad mode) of its frame."""
    first_kind = guards[0].kind if guards else ""
    return compile_kind(c) == "first" or (first_kind in _MODES and _first_of_mode(c, compiles))


def compile_fix(c: DynamoCompile, guards: Sequence[GuardFailure]) -> str:
    kind = compile_kind(c)
    if kind == "cache_limit":
        return CACHE_LIMIT_FIX
    if kind == "recompile":
        return guards[0].fix if guards else fix_for("")
    return ""


def _first_of_mode(c: DynamoCompile, compiles: Sequence[DynamoCompile]) -> bool:
    """A train/eval switch is expected the first time each mode is compiled for a frame."""
    seen = 0
    for d in compiles:
        first = d.guard_failures[0] if d.frame_id == c.frame_id and d.recompile and d.guard_failures else ""
        if first and explain_guard(first, d.file).kind in _MODES:
            seen += 1
        if d is c:
            break
    return seen <= 1
