"""One cause per root reason: raw differences of one kind that repeat (a constant changed in 60
places, the same region once per layer) become one cause with a count and a few examples."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import merge

__all__ = ["RECOGNIZER"]

_GROUPED = (CauseKind.CONSTANT_VALUE, CauseKind.STRUCTURE)
_EXAMPLES = 3


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    for kind in _GROUPED:
        same = [i for i, c in enumerate(pending) if c.kind is kind]
        if len(same) < 2:
            continue
        causes = [pending[i] for i in same]
        by_hint: dict[str, list[Cause]] = {}
        for c in causes:
            by_hint.setdefault(c.hint, []).append(c)
        for group in by_hint.values():
            n = sum(c.count for c in group)
            examples = "; ".join(c.summary for c in group[:_EXAMPLES])
            more = f"; and {len(group) - _EXAMPLES} more" if len(group) > _EXAMPLES else ""
            what = "constants changed" if kind is CauseKind.CONSTANT_VALUE else "regions differ"
            out.append(merge(kind, f"{n} {what}, e.g. {examples}{more}", group, hint=group[0].hint))
        consumed.update(same)
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


RECOGNIZER = Recognizer("grouping", _recognize)
