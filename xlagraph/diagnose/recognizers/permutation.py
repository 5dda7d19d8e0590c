"""`parameter_permutation` / `output_permutation` as a root cause only when nothing else differs.

When the step computes something else too (extra outputs, new work), the lowering visits the
graph in another order and inputs and outputs are numbered anew: that reordering follows from the
other change and is folded into it (its mapping kept), not reported as a cause of its own."""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer

__all__ = ["RECOGNIZER"]

_ORDER = (CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    orders = [i for i, c in enumerate(pending) if c.kind in _ORDER]
    others = [i for i, c in enumerate(pending) if c.kind not in _ORDER and not c.info]
    if not orders or not others:
        return NOTHING
    host = pending[others[0]]
    moved = [pending[i] for i in orders]
    merged = replace(
        host,
        left=host.left + tuple(n for c in moved for n in c.left if n not in host.left),
        right=host.right + tuple(n for c in moved for n in c.right if n not in host.right),
        mapping=host.mapping + tuple(m for c in moved for m in c.mapping),
    )
    return Recognized((merged,), frozenset([others[0], *orders]))


RECOGNIZER = Recognizer("permutation", _recognize)
