"""The user's line of work done every k steps: the `if step % k == 0:` block, not the helper.

HLO metadata keeps only the innermost frame, so an extra output computed in a helper of the
user's (`global_grad_norm(params)`) cites the helper's line. When that helper is called from an
`if ... % k:` block, the call is the line to change; it is cited first, the helper's line after.
"""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import periodic_caller

__all__ = ["RECOGNIZER"]

_KINDS = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED, CauseKind.CONDITIONAL_WORK, CauseKind.STRUCTURE)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    for i, c in enumerate(pending):
        if c.kind not in _KINDS or not c.sources:
            continue
        sites = [s for loc in c.sources if (s := periodic_caller(loc))]
        if not sites or sites[0] == c.sources[0]:
            continue
        out.append(replace(c, sources=tuple(dict.fromkeys([sites[0], *c.sources]))[:6]))
        consumed.add(i)
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


RECOGNIZER = Recognizer("periodic_site", _recognize)
