"""Recognizers name one cause for several raw differences: merging causes, renaming one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from xlagraph.diagnose.causes import HINTS, Cause, CauseKind
from xlagraph.diagnose.evidence import Evidence, Recognized
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._group_values import number_origin
from xlagraph.ir import strip_layout

__all__ = [
    "TAPS",
    "WARM_UP_STEPS",
    "added_at_warm_up",
    "added_part",
    "fold_into",
    "merge",
    "one_sided",
    "renamed",
    "scalar_inputs",
    "union",
    "with_number_origin",
]


# Extra or missing outputs read values the step computes anyway (a kept-alive activation after a
# dropout): where they come from says nothing about work done on some steps only.
TAPS = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)


def one_sided(cause: Cause) -> bool:
    """Work one graph does and the other does not: many instructions on one side, few on the other."""
    big, small = sorted((len(cause.left), len(cause.right)), reverse=True)
    return big >= 5 and big >= 3 * max(1, small)


def scalar_inputs(evidence: Evidence, cause: Cause) -> bool:
    """Inputs added or dropped that are all scalars: the factors of some work (a max norm)."""
    if cause.kind not in (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED):
        return False
    found = evidence.instructions(cause)
    return bool(found) and all(strip_layout(ins.shape).endswith("[]") for _, ins in found)


# Steps in which new inputs are expected: optimizer state, tensors made before the loop, buffers.
WARM_UP_STEPS = 3


def added_at_warm_up(evidence: Evidence, pending: tuple[Cause, ...]) -> list[int]:
    """The pending `parameter_added` causes of a warm-up compile (an early step, or the first
    graph of the run, or a step soon after the first graph of its call site: a phase that starts
    late, such as fine-tuning after pretraining): what the warm-up recognizers may claim."""
    ctx = evidence.context
    phase_start = ctx.first_at_site and 0 <= ctx.step - ctx.baseline_step < WARM_UP_STEPS
    if ctx.step >= WARM_UP_STEPS and not ctx.first_graph and not phase_start:
        return []
    return [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_ADDED]


def union(items: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for group in items for x in group))


def merge(kind: CauseKind, summary: str, causes: list[Cause], hint: str = "", **kw) -> Cause:  # type: ignore[no-untyped-def]
    """One cause of `kind` that takes over the instructions, changes and lines of `causes`."""
    first = causes[0] if causes else None
    fields = {
        "left": union(c.left for c in causes),
        "right": union(c.right for c in causes),
        "changes": tuple(ch for c in causes for ch in c.changes),
        "mapping": tuple(m for c in causes for m in c.mapping),
        "sources": union(c.sources for c in causes)[:6],
        "library": union(c.library for c in causes)[:6],
        "computation": first.computation if first else "",
        "count": sum(c.count for c in causes) or 1,
    }
    fields.update(kw)
    return Cause(kind, summary, hint or HINTS[kind], **fields)


def fold_into(pending: tuple[Cause, ...], root: int, echoes: list[int], what: str) -> Recognized:
    """`pending[root]`, kind, hint and case kept, with `echoes` (changes that follow from it)
    folded in and said: `<its summary>; <what>`."""
    cause = pending[root]
    echoed = [cause, *(pending[j] for j in echoes)]
    merged = merge(cause.kind, f"{cause.summary}; {what}", echoed, hint=cause.hint, case=cause.case)
    return Recognized((merged,), frozenset([root, *echoes]))


def renamed(cause: Cause, kind: CauseKind, summary: str, hint: str = "", **kw) -> Cause:  # type: ignore[no-untyped-def]
    return replace(cause, kind=kind, summary=summary, hint=hint or HINTS[kind], **kw)


def added_part(cause: Cause, keep: Callable[[str], bool]) -> Cause | None:
    """The part of an added-inputs cause about the inputs `keep` accepts, or None."""
    names = tuple(n for n in cause.right if keep(n))
    if not names:
        return None
    if len(names) == len(cause.right):
        return cause
    changes = tuple(ch for ch in cause.changes if keep(ch.right))
    listed = ", ".join(f"input {ch.new}" for ch in changes if ch.new)
    return replace(
        cause, right=names, changes=changes, summary=f"B takes {len(names)} input(s) more ({listed})"
    )


def with_number_origin(cause: Cause) -> Cause:
    """Where the Python number a user's line of the cause reads is computed (a helper's return,
    the assignment that calls it, through a function's parameter to its callers, the loop's
    assignment that changes it under its `if`; for `opt.step()`, a schedule's value written into
    the optimizer's param groups), named in the summary and placed first."""
    for loc in cause.sources[:2]:
        if not is_user_location(loc):
            continue  # the user's numbers only
        name, lines = number_origin(loc)
        if lines:
            return replace(
                cause,
                summary=f"{cause.summary}; `{name}` is computed at {lines[-1]}",
                sources=tuple(dict.fromkeys([*lines, *cause.sources]))[:6],
            )
    return cause
