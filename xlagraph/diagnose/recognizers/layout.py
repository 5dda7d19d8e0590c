"""`layout`: the same shapes in another layout or memory space. XLA compiles these as different
programs, so two graphs that differ only there are never `identical`. When other differences
exist, a layout change of the same tensors follows from them (an output computed by another op
gets another layout) and is folded away.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer

__all__ = ["RECOGNIZER"]


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    layout = [i for i, c in enumerate(pending) if c.kind is CauseKind.LAYOUT]
    if not layout or len(layout) == len(pending):
        return NOTHING
    return Recognized((), frozenset(layout))


RECOGNIZER = Recognizer("layout", _recognize)
