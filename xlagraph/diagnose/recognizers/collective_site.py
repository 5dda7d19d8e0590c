"""Where the user's code issued the collectives of a cause whose ops' metadata cites library code
alone (torch_xla's `xla_model.py`): the lines of the live tensors the capture saw made there,
their callers, then the loop that orders the calls (`_deciding_loop.issuing_lines`), before the
library lines. Ranks hang in collectives and steps recompile on their order: where they are
issued is the line to read. The kind is not changed."""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._deciding_loop import issuing_lines, sync_lines

__all__ = ["RECOGNIZER", "issued_at"]


def issued_at(cause: Cause, lines: tuple[str, ...]) -> Cause:
    """`cause` citing `lines` (where its collectives were issued) first."""
    return replace(cause, sources=(*lines, *cause.sources)) if lines else cause


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    ctx = evidence.context
    if not ctx.tensors:
        return NOTHING  # a diff of two dumps: no run to read
    out = tuple(
        issued_at(c, issuing_lines(c.sources, ctx.tensors, sync_lines(ctx)))
        if c.kind is CauseKind.COLLECTIVE and not any(map(is_user_location, c.sources))
        else c
        for c in pending
    )
    if all(a is b for a, b in zip(out, pending, strict=True)):
        return NOTHING
    return Recognized(out, frozenset(range(len(pending))))


RECOGNIZER = Recognizer("collective_site", _recognize)
