"""What no recognizer explained stays `structure`, said plainly: the computation, the op types,
the user's line, and that the pattern is not one xlagraph knows."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import renamed
from xlagraph.source_paths import short_location

__all__ = ["RECOGNIZER"]


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    picked = [i for i, c in enumerate(pending) if c.kind is CauseKind.STRUCTURE]
    if not picked:
        return NOTHING
    out = []
    for i in picked:
        c = pending[i]
        where = (
            short_location(c.sources[0])
            if c.sources
            else evidence.context.call_site or "no user line recorded"
        )
        comp = c.computation or evidence.left.module.entry.name
        out.append(
            renamed(
                c,
                CauseKind.STRUCTURE,
                f"the computation {comp} differs in {c.summary}, at {where}; this is not a pattern "
                "xlagraph knows",
            )
        )
    return Recognized(tuple(out), frozenset(picked))


RECOGNIZER = Recognizer("unknown", _recognize)
