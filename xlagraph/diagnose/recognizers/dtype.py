"""`dtype`: an element type changed (autocast, `.half()`, float64 numpy batches). The raw
difference names the inputs and outputs; the computation in between, the same ops in another
element type (with or without `convert`s), is the same root reason and is folded in."""

from __future__ import annotations

from collections import Counter

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import merge

__all__ = ["RECOGNIZER"]

_FOLDED = (CauseKind.STRUCTURE, CauseKind.CONSTANT_VALUE, CauseKind.ATTRIBUTE, CauseKind.LAYOUT)


def _same_ops(evidence: Evidence, cause: Cause) -> bool:
    """Both sides of the region run the same ops, `convert`s aside."""
    left: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for canon, ins in evidence.instructions(cause):
        if ins.opcode != "convert":
            (left if canon is evidence.left else right)[ins.opcode] += 1
    return left == right


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    core = [i for i, c in enumerate(pending) if c.kind is CauseKind.DTYPE]
    if not core:
        return NOTHING
    folded = [
        i
        for i, c in enumerate(pending)
        if c.kind in _FOLDED and (c.kind is not CauseKind.STRUCTURE or _same_ops(evidence, c))
    ]
    if not folded:
        return NOTHING
    cause = merge(CauseKind.DTYPE, pending[core[0]].summary, [pending[i] for i in core + folded])
    return Recognized((cause,), frozenset(core + folded))


RECOGNIZER = Recognizer("dtype", _recognize)
