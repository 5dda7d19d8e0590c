"""The other graphs of a retrace whose graphs at the guard's line were named: the same change.

`branch_guard_graphs` names the graphs of a retrace that cite the guard's line: a Python int
dynamo guards (a module's `self.heads`, a global `k`) read as sizes, an `attribute`. The same
retrace compiles the step's lazy graph (the rest of the backward and the update, built for the
forward's new sizes), which cites other lines: its diff is read against whichever earlier graph of
its call site differs least (the first step's, before the optimizer's state), so it reads as
inputs added or removed or work done on some steps. None of that is a change of its own: the
retrace's cause, its lines and its fix, the diff's own kinds kept readable in the note.

The same for a list of tensors that grew (shrank), named `parameter_added` (`parameter_removed`)
where the list is made: the retrace's other graphs of that step hold the new item's work, the
output of the module that made it (pending when the bridge's first call of the new trace synced
everything) and that module's gradients and updates (it trains from this step on), which read as
outputs and inputs added; not a tensor kept alive, the list's change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.branches import INT_GUARDS
from xlagraph.diagnose.dynamo_join.retrace import Retrace, with_one_cause
from xlagraph.diagnose.recompile import Recompile

__all__ = ["follow_retrace"]

# What a graph built at other sizes reads as against a baseline paired by fewest differences.
_SIZED = frozenset(
    {
        CauseKind.PARAMETER_SHAPE,
        CauseKind.PARAMETER_ADDED,
        CauseKind.PARAMETER_REMOVED,
        CauseKind.CONDITIONAL_WORK,
        CauseKind.CONSTANT_VALUE,
        CauseKind.STRUCTURE,
    }
)
_SAID = {
    CauseKind.ATTRIBUTE: "the retrace's other graph of this step, built for the forward's new sizes",
    CauseKind.PARAMETER_ADDED: (
        "the retrace's other graph of this step, with the new item's work (the output of the code "
        "that made it, that code's gradients and updates)"
    ),
    CauseKind.PARAMETER_REMOVED: (
        "the retrace's other graph of this step, without the dropped item's work (the output of the "
        "code that made it, that code's gradients and updates)"
    ),
}
# What the step's other graphs read as where a list of tensors grew (shrank): its item's work.
_LISTED = {
    CauseKind.PARAMETER_ADDED: frozenset({CauseKind.OUTPUT_ADDED, CauseKind.PARAMETER_ADDED}),
    CauseKind.PARAMETER_REMOVED: frozenset({CauseKind.OUTPUT_REMOVED, CauseKind.PARAMETER_REMOVED}),
}


def _named(r: Recompile, retrace: Retrace | None) -> tuple[Cause, frozenset[CauseKind]] | None:
    """`r`'s cause that `branch_guard_graphs` named for the retrace, and the kinds the retrace's
    other graphs may read as; None where it named none of these."""
    if retrace is None or retrace.expected:
        return None
    guard = retrace.guard
    for c in r.causes:
        if c.info or guard.at not in c.sources:
            continue
        if guard.kind in INT_GUARDS and c.kind is CauseKind.ATTRIBUTE and c.fix_id == "attribute.size":
            return c, _SIZED
        if guard.kind == "sequence_length" and retrace.inputs_added and c.kind in _LISTED:
            return c, _LISTED[c.kind]
    return None


def follow_retrace(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """Each graph of such a retrace, on its step, whose live causes are all of the kinds it may
    read as, told by the cause the retrace's graphs at the guard's line were named."""
    named: dict[tuple[str, int], tuple[Cause, frozenset[CauseKind]]] = {}
    for r in recompiles:
        if (found := _named(r, retraces.get(r.dynamo))) is not None:
            named.setdefault((r.dynamo, r.step), found)
    if not named:
        return tuple(recompiles)
    out = []
    for r in recompiles:
        cause, kinds = named.get((r.dynamo, r.step), (None, frozenset()))
        live = [c for c in r.causes if not c.info]
        if cause is None or not live or not all(c.kind in kinds for c in live) or cause in live:
            out.append(r)
            continue
        said = replace(cause, summary=f"{_SAID[cause.kind]}: {cause.summary}")
        causes = (said, *(c for c in r.causes if c.info))
        out.append(with_one_cause(r, causes, cause.sources, tuple(dict.fromkeys(cause.sources + r.lines))))
    return tuple(out)
