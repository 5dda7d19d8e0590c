"""A collective cause whose ops' metadata cites library code alone (torch_xla's `xla_model.py`)
cites first where the user's code issued the collectives (`_deciding_loop.issuing_lines`): ranks
hang in collectives and steps recompile on their order. The kind is not changed."""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Context, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._deciding_loop import issuing_lines, sync_lines

__all__ = ["RECOGNIZER"]


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    ctx = evidence.context
    if not (ctx.tensors or ctx.baseline_tensors):
        return NOTHING  # a diff of two dumps: no run to read
    out = [
        replace(c, sources=(*lines, *c.sources))
        if c.kind is CauseKind.COLLECTIVE
        and not any(map(is_user_location, c.sources))
        and (lines := _issued(c, ctx))
        else c
        for c in pending
    ]
    if all(a is b for a, b in zip(out, pending, strict=True)):
        return NOTHING
    return Recognized(tuple(out), frozenset(range(len(pending))))


def _issued(cause: Cause, ctx: Context) -> tuple[str, ...]:
    """Read from the new graph's live tensors, else the baseline's: of two ranks, the one whose
    graph made the collectives on the cited lines may be either (rank 0's logging graph holds no
    tensor; the others' step does)."""
    syncs = sync_lines(ctx)
    return issuing_lines(cause.sources, ctx.tensors, syncs) or issuing_lines(
        cause.sources, ctx.baseline_tensors, syncs
    )


RECOGNIZER = Recognizer("collective_site", _recognize)
