"""`parameter_added` / `parameter_removed` with the work that reads the new input: the
instructions that use an input only one graph takes are part of that input's cause."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import merge
from xlagraph.match.bottom_up import users_of

__all__ = ["RECOGNIZER"]


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    for kind, side in ((CauseKind.PARAMETER_ADDED, "right"), (CauseKind.PARAMETER_REMOVED, "left")):
        params = [i for i, c in enumerate(pending) if c.kind is kind]
        if not params:
            continue
        comp = (evidence.right if side == "right" else evidence.left).entry
        users = users_of(comp)
        readers = {u for i in params for p in getattr(pending[i], side) for u in users.get(p, ())}
        regions = [
            i
            for i, c in enumerate(pending)
            if c.kind is CauseKind.STRUCTURE and i not in consumed and readers & set(getattr(c, side))
        ]
        if not regions:
            continue
        first = pending[params[0]]
        n = sum(len(getattr(pending[i], side)) for i in regions)
        only = "B" if side == "right" else "A"
        summary = f"{first.summary}, read by {n} instruction(s) that exist only in {only}"
        out.append(merge(kind, summary, [pending[i] for i in params + regions]))
        consumed.update(params + regions)
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


RECOGNIZER = Recognizer("new_input", _recognize)
