"""A collective cause whose ops' metadata cites library code alone (torch_xla's `xla_model.py`)
cites first where the user's code issued the collectives (`_deciding_loop.issuing_lines`): ranks
hang in collectives and steps recompile on their order. The kind is not changed."""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._deciding_loop import issuing_lines, sync_lines

__all__ = ["RECOGNIZER"]


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    ctx = evidence.context
    if not ctx.tensors:
        return NOTHING  # a diff of two dumps: no run to read
    out = [
        replace(c, sources=(*lines, *c.sources))
        if c.kind is CauseKind.COLLECTIVE
        and not any(map(is_user_location, c.sources))
        and (lines := issuing_lines(c.sources, ctx.tensors, sync_lines(ctx)))
        else c
        for c in pending
    ]
    if all(a is b for a, b in zip(out, pending, strict=True)):
        return NOTHING
    return Recognized(tuple(out), frozenset(range(len(pending))))


RECOGNIZER = Recognizer("collective_site", _recognize)
