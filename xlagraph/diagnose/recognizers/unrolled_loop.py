"""`conditional_work` of a traced Python loop that runs another number of times: gradient
accumulation's micro-batches 2 -> 4 inside a `torch_xla.compile`d step. Tracing unrolls the loop,
so the graph holds one copy of its body per iteration, and a new count is a graph with more (or
fewer) copies: new inputs shaped like inputs both graphs take (the extra micro-batches) and work
one graph does more of. Named at the line that decides the count, not at the body's ops.

Evidence: inputs added (or removed) that are all copies of the shapes of inputs the graph keeps,
a region that grows on that side, and a user line of it inside a `for` loop whose trip count a
Python number decides (`_statements.trip_count`). Runs before `state_init`, which would take new
inputs shaped like the weights' batch for copies of state.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location, split_location
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._source import source_text
from xlagraph.diagnose.recognizers._statements import enclosing
from xlagraph.diagnose.recognizers._user_flow import trip_count
from xlagraph.ir import strip_layout

__all__ = ["RECOGNIZER"]

_HINT = fix("conditional_work.trip_count")
# What another number of copies of the body changes besides the copies: the inputs after the new
# ones renumbered, a divisor (`/ len(xs)`) or a count baked, the ops that read the copies' sum.
_FOLLOWS = (
    CauseKind.PARAMETER_ADDED,
    CauseKind.PARAMETER_REMOVED,
    CauseKind.PARAMETER_PERMUTATION,
    CauseKind.OUTPUT_PERMUTATION,
    CauseKind.STRUCTURE,
    CauseKind.CONSTANT_VALUE,
)
# Ops a copy of a loop body adds at the least (a micro-batch's forward and backward are dozens).
_BODY_OPS = 5


def _copies(evidence: Evidence, cause: Cause, more: bool) -> bool:
    """Every input `cause` adds (`more`) or removes has the shape of an input the graph keeps."""
    side = evidence.right if more else evidence.left
    entry = side.entry
    names = set(cause.right if more else cause.left)
    if not names or not names <= set(entry.param_number):
        return False
    kept = {strip_layout(entry.instruction(p).shape) for p in entry.param_number if p not in names}
    return all(strip_layout(entry.instruction(p).shape) in kept for p in names)


def _within(cause: Cause, file: str, first: int, last: int) -> bool:
    """Every user line `cause` cites lies in lines `first`..`last` of `file` (none: library work)."""
    for loc in cause.sources:
        if not is_user_location(loc):
            continue
        f, n = split_location(loc)
        if f != file or not first <= n <= last:
            return False
    return True


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    for more, kind in ((True, CauseKind.PARAMETER_ADDED), (False, CauseKind.PARAMETER_REMOVED)):
        grown = [i for i, c in enumerate(pending) if c.kind is kind and _copies(evidence, c, more)]
        if not grown:
            continue
        body = [
            c
            for c in pending
            if c.kind is CauseKind.STRUCTURE
            and (len(c.right) - len(c.left) if more else len(c.left) - len(c.right)) >= _BODY_OPS
        ]
        ctx = evidence.context
        syncs = tuple(s for s in (ctx.call_site, ctx.baseline_call_site) if s)
        count = next(
            (t for c in body for s in c.sources if is_user_location(s) and (t := trip_count(s, syncs))), []
        )
        if count:
            return _named(evidence, pending, count, more)
    return NOTHING


def _named(evidence: Evidence, pending: tuple[Cause, ...], count: list[str], more: bool) -> Recognized:
    loop = count[-1]
    file, line = split_location(loop)
    # The function the loop is in (the traced step): what its ops differ by follows from the count.
    scope = [s for s, _ in enclosing(file, line) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    first, last = (scope[-1].lineno, scope[-1].end_lineno or line) if scope else (line, line)
    picked = [i for i, c in enumerate(pending) if c.kind in _FOLLOWS and _within(c, file, first, last)]
    causes = [pending[i] for i in picked]
    copied = CauseKind.PARAMETER_ADDED if more else CauseKind.PARAMETER_REMOVED
    inputs = sum(len(c.right) + len(c.left) for c in causes if c.kind is copied)
    ops = sum(len(c.right) - len(c.left) for c in causes if c.kind is CauseKind.STRUCTURE)
    header = source_text(loop).split("#", 1)[0].strip()
    number = source_text(count[0]).split("#", 1)[0].strip()
    summary = (
        f"the same work repeated {'more' if more else 'fewer'} times: B runs "
        f"{'more' if more else 'fewer'} copies of the body of `{header[:60]}` at {loop} ({abs(inputs)} "
        f"input(s) and {abs(ops)} instruction(s) {'more' if more else 'fewer'}): a Python loop in traced "
        "code is unrolled, one copy per iteration, and the number of iterations is a Python value, "
        f"`{number[:60]}` at {count[0]}; each count is a graph of its own "
        f"({sum(c.count for c in causes)} difference(s))"
    )
    merged = merge(CauseKind.CONDITIONAL_WORK, summary, causes, hint=_HINT)
    cause = replace(merged, sources=tuple(dict.fromkeys([*count, *merged.sources]))[:6])
    return Recognized((cause,), frozenset(picked))


RECOGNIZER = Recognizer("unrolled_loop", _recognize)
