"""`layout`: the same shapes in another layout or memory space. XLA compiles these as different
programs, so two graphs that differ only there are never `identical`. When other differences
exist, a layout change of the same tensors follows from them (an output computed by another op
gets another layout) and is folded away.
"""

from __future__ import annotations

from dataclasses import replace

from xlagraph.canonical.model import CanonicalModule
from xlagraph.diagnose.causes import INPUT_LAYOUT, Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer

__all__ = ["RECOGNIZER"]

# Ops that only move data into another layout (XLA's copy, wrapped in a fusion once compiled).
_RELAYOUT = frozenset({"copy", "transpose", "bitcast", "parameter", "tuple", "get-tuple-element"})


def _relayout(canon: CanonicalModule, names: set[str]) -> bool:
    """Every named instruction only re-lays data out (a copy, or a fusion of copies)."""
    for comp in canon.computations.values():
        for name in names & set(comp.computation.by_name):
            ins = comp.computation.by_name[name]
            ops = (
                {ins.opcode}
                if ins.opcode != "fusion"
                else {
                    i.opcode
                    for c in ins.called
                    if c in canon.computations
                    for i in canon.computations[c].computation.instructions
                }
            )
            if not ops or ops - _RELAYOUT:
                return False
    return True


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    layout = [i for i, c in enumerate(pending) if c.kind is CauseKind.LAYOUT]
    if not layout or len(layout) == len(pending):
        return NOTHING
    # An entry input handed in another layout (a column-major array) is a cause of its own: the
    # copies XLA adds to re-lay it out, and the ops reading them, follow from it.
    inputs = [i for i in layout if pending[i].case == INPUT_LAYOUT]
    others = [i for i in range(len(pending)) if i not in layout]
    if inputs and all(
        pending[i].kind is CauseKind.STRUCTURE
        and _relayout(evidence.right, set(pending[i].right) - set(pending[i].left))
        and _relayout(evidence.left, set(pending[i].left) - set(pending[i].right))
        for i in others
    ):
        first = pending[inputs[0]]
        cause = replace(
            first,
            summary=first.summary + " (XLA re-lays it out with a copy)",
            left=tuple(dict.fromkeys(n for i in inputs + others for n in pending[i].left)),
            right=tuple(dict.fromkeys(n for i in inputs + others for n in pending[i].right)),
            count=sum(pending[i].count for i in inputs + others),
        )
        return Recognized((cause,), frozenset(range(len(pending))))
    return Recognized((), frozenset(layout))


RECOGNIZER = Recognizer("layout", _recognize)
