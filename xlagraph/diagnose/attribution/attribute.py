"""A recompile's causes attributed to the user's program: extra or missing outputs to live tensors
of the same shape, shape changes to the inputs, permutations to what moved, collective changes to
the buckets, each with the user's own source lines before library lines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from xlagraph.diagnose.attribution.lines import LineReader, calling_lines, split_lines
from xlagraph.diagnose.attribution.tensors import norm_shape, pick_tensors, replacing
from xlagraph.diagnose.causes import TWIN_OUTPUT, Cause, CauseKind
from xlagraph.diagnose.collectives import collectives
from xlagraph.diagnose.frames import location, source_line
from xlagraph.diagnose.recognizers._deciding_loop import MAX_CALLERS
from xlagraph.diagnose.recognizers._group_values import number_origin
from xlagraph.diagnose.recompile import Attribution, TensorRef
from xlagraph.diff import DiffResult
from xlagraph.ir import strip_layout
from xlagraph.runlog import GraphRecord

__all__ = ["AttributionContext", "Mark", "attribute"]

_MAX_ITEMS = 8


# Causes that are a Python number the user passes to library code (the recognizers follow it
# where the graph cites the user's line itself: `recognizers._causes.with_number_origin`).
_NUMBER_FIXES = frozenset({"conditional_work.switched_on", "constant_value.zero_one"})


def _output_positions(result: DiffResult, names: tuple[str, ...], right: bool) -> list[tuple[int, str]]:
    canon = result.right if right else result.left
    entry = canon.entry
    chosen = set(names)
    return [(j, norm_shape(entry.instruction(n).shape)) for j, n in enumerate(entry.outputs) if n in chosen]


def _bounded(items: list[str]) -> tuple[str, ...]:
    if len(items) <= _MAX_ITEMS:
        return tuple(items)
    return (*items[:_MAX_ITEMS], f"... and {len(items) - _MAX_ITEMS} more")


def _dtype_items(cause: Cause, sides: tuple[str, str]) -> list[str]:
    """A type change's own changes, then what follows from it counted: the ops that are converts
    in the other graph, and the outputs one graph returns beside their views (the other casts
    them). Each is the same tensor in the other precision, nothing to read one by one."""
    retyped = [c for c in cause.changes if c.what == "opcode" and "convert" in (c.old, c.new)]
    outputs = [c for c in cause.changes if c.what == "output"]
    twins = [c for c in cause.changes if c.what == TWIN_OUTPUT]
    rest = [c for c in cause.changes if c not in retyped and c not in outputs and c not in twins]
    items = [f"{c.what}: {c.old or '(none)'} -> {c.new or '(none)'}" for c in rest]
    if retyped:
        ops = Counter(c.new if c.old == "convert" else c.old for c in retyped)
        listed = ", ".join(f"{op} x{n}" for op, n in sorted(ops.items(), key=lambda x: (-x[1], x[0])))
        items.append(f"{len(retyped)} op(s) of one graph are converts in the other ({listed})")
    for found, what in (
        (outputs, "view bases"),
        (twins, "the same tensors as the other graph's, in the other precision"),
    ):
        a, b = [c for c in found if not c.new], [c for c in found if c.new]
        for side, gone in ((sides[0], a), (sides[1], b)):
            if gone:
                shapes = Counter(strip_layout((c.old or c.new).partition(": ")[2]) for c in gone)
                listed = ", ".join(f"{s} x{n}" if n > 1 else s for s, n in shapes.most_common(3))
                more = ", ..." if len(shapes) > 3 else ""
                items.append(f"{len(gone)} output(s) only {side} returns, {what} ({listed}{more})")
    return items


class Mark(Protocol):
    """A `mark_sharding` call the capture saw: its user line, the step it was first seen at."""

    @property
    def line(self) -> str: ...

    @property
    def step(self) -> int: ...


@dataclass(frozen=True)
class AttributionContext:
    result: DiffResult
    baseline: GraphRecord | None
    target: GraphRecord | None
    user_names: frozenset[str]
    site: str = ""
    read_line: LineReader = source_line
    # the capture's mark_sharding calls that made a sharding (`capture.shardings.find_marks`)
    marks_of: Callable[[str], Sequence[Mark]] | None = None
    step: int = -1
    sides: tuple[str, str] = ("A", "B")  # the report's letters of the diff's two graphs


def _reordered_items(result: DiffResult, cause: Cause) -> list[str]:
    """`baseline all-gather.42 (collective 3) is now all-gather.111 (collective 5)`: the moved
    collectives lead the cause's names, A's and B's in pairs (`raw_causes._reordered`)."""
    a_at = {c.name: (i, c.kind) for i, c in enumerate(collectives(result.left), 1)}
    b_at = {c.name: i for i, c in enumerate(collectives(result.right), 1)}
    pairs = [(a, b) for a, b in zip(cause.left, cause.right, strict=False) if a in a_at and b in b_at]
    return [
        f"baseline {a_at[a][1]} {a} (collective {a_at[a][0]}) is now {b} (collective {b_at[b]})"
        for a, b in pairs
    ]


def attribute(index: int, cause: Cause, ctx: AttributionContext) -> Attribution:
    """What one cause points at in the user's program."""
    result = ctx.result
    lines, library_lines = split_lines(cause.sources, ctx.user_names)
    direct = bool(lines)  # the graph's own metadata cites the user's lines
    kind = cause.kind
    items: list[str] = []
    tensors: tuple[TensorRef, ...] = ()
    summary = cause.summary
    target_tensors = ctx.target.tensors if ctx.target else ()
    baseline_tensors = ctx.baseline.tensors if ctx.baseline else ()
    if kind is CauseKind.OUTPUT_ADDED:
        outputs = _output_positions(result, cause.right, right=True)
        items = [f"output {j}: {s}" for j, s in outputs]
        shapes = [s for _, s in outputs]
        added = len(result.right.entry.outputs) - len(result.left.entry.outputs)
        tensors = pick_tensors(target_tensors, shapes, lines, baseline_tensors, added)
        summary = f"{len(outputs)} extra output(s): the live tensor(s) kept alive only in this graph"
    elif kind is CauseKind.OUTPUT_REMOVED:
        outputs = _output_positions(result, cause.left, right=False)
        items = [f"baseline output {i}: {s}" for i, s in outputs]
        shapes = [s for _, s in outputs]
        removed = len(result.left.entry.outputs) - len(result.right.entry.outputs)
        tensors = pick_tensors(baseline_tensors, shapes, lines, target_tensors, removed)
        summary = f"{len(outputs)} output(s) of the baseline missing: tensor(s) alive then, not now"
    elif kind is CauseKind.PARAMETER_SHAPE:
        numbers = result.left.entry.param_number
        items = [
            f"output {c.new}"
            if c.what == "output"
            else f"input {numbers.get(c.left, '?')}: {c.old} -> {c.new}"
            for c in cause.changes
        ]
        if cause.changes:  # (a count of pieces changes no input: its own summary says what did)
            summary = f"{len(cause.changes)} input(s) changed shape"
        if cause.fix_id == "parameter_shape.resized_weights" and not lines:
            # the graph cites only `Module.to`: the user's line that put the new weights there
            lines = replacing(target_tensors, [c.new for c in cause.changes if c.what != "output"])
    elif kind in (CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION):
        what = "input" if kind is CauseKind.PARAMETER_PERMUTATION else "output"
        moved = [m for m in cause.mapping if m.left != m.right]
        items = [f"baseline {what} {m.left} is now {what} {m.right} ({m.shape})" for m in moved]
        if kind is CauseKind.OUTPUT_PERMUTATION:
            shapes = [m.shape for m in moved]
            tensors = pick_tensors(target_tensors, shapes, lines)
        summary = f"{len(moved)} {what}(s) moved: the tensors were created or updated in another order"
    elif kind is CauseKind.COLLECTIVE:
        left_names, right_names = set(cause.left), set(cause.right)
        before = [c for c in collectives(result.left) if c.name in left_names]
        after = [c for c in collectives(result.right) if c.name in right_names]
        if cause.fix_id == "collective.order":
            items = _reordered_items(result, cause)
            summary = f"{len(items)} collective(s) of the baseline issued in another order"
        else:
            items = [f"baseline {c.kind} {c.name} over {', '.join(c.operands) or '()'}" for c in before]
            items += [f"now {c.kind} {c.name} over {', '.join(c.operands) or '()'}" for c in after]
            summary = f"buckets: {len(before)} collective(s) of the baseline regrouped into {len(after)}"
    elif kind in (CauseKind.CONSTANT_VALUE, CauseKind.ATTRIBUTE):
        items = [
            f"{c.left}: {c.what} {c.old} -> {c.new}"
            if c.left
            else f"{c.what}: {c.old or '(none)'} -> {c.new}"
            for c in cause.changes
        ]
    elif kind is CauseKind.DTYPE:
        items = _dtype_items(cause, ctx.sides)
    else:  # the named patterns: what differs, as the changes say it
        items = [f"{c.what}: {c.old or '(none)'} -> {c.new or '(none)'}" for c in cause.changes]
    if kind is CauseKind.SHARDING and ctx.marks_of is not None:
        # The HLO's metadata points into xla_sharding.py or the model; the capture saw the call.
        # A changed sharding, or an annotation only one graph has (`mark_sharding` on an
        # activation from some step on): its custom-call carries the spec the call made.
        specs = [ch.new for ch in cause.changes if ch.what == "sharding"] + [
            ins.attribute("sharding", "") or ""
            for ins in (result.right.entry.computation.by_name.get(n) for n in cause.right)
            if ins is not None
            and ins.opcode == "custom-call"
            and ins.attribute("custom_call_target") == '"Sharding"'
        ]
        marked = [
            m.line
            for spec in specs
            if spec
            for m in ctx.marks_of(spec)
            if m.line and (ctx.step < 0 or m.step <= ctx.step)
        ]
        lines = tuple(dict.fromkeys((*marked[:2], *lines)))
    if not lines and library_lines and ctx.site:
        lines = calling_lines(library_lines, ctx.site, ctx.read_line)
    if not lines:  # the ops come from library code: the user's line that made the tensor
        lines = tuple(dict.fromkeys(t.line for t in tensors if t.line))[:2]
    if kind in (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED) and (
        len(tensors) == len(items)
        or all(t.match == "shape and line" for t in tensors)
        or (tensors and all(t.match in ("shape and line", "by elimination") for t in tensors))
    ):  # the only candidates (or exactly the tensors the other graph did not compute): where the
        # program keeps them decides whether they are outputs, first unless the graph cites the
        # user's lines itself (a tensor made under the `if`)
        stored = tuple(s for t in tensors for s in t.stored_at)
        lines = tuple(dict.fromkeys((*lines, *stored) if direct else (*stored, *lines)))
    # A tensor made inside the user's own helper: its callers are the user's lines too (the call
    # inside `if step % k == 0:` is what makes it appear on some steps only).
    callers = [location(f) for t in tensors if t.match == "shape and line" for f in t.frames[1:MAX_CALLERS]]
    lines = tuple(dict.fromkeys((*lines, *callers)))
    if cause.fix_id in _NUMBER_FIXES and not direct and lines:
        # the graph cites library code the user's line calls with a Python number: where the
        # script computes or changes that number is what to fix (`smooth = 0.1` under an `if`)
        lines = tuple(dict.fromkeys((*number_origin(lines[0])[1], *lines)))
    return Attribution(index, str(kind), summary, _bounded(items), tensors, lines, library_lines)
