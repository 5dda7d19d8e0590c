"""`output_added` / `output_removed` in a graph of a function `torch_xla.compile` traces: its outputs
are what it returns, so an output that comes and goes is an `if` in that function adding to its
result (`if want_probs: return loss, probs`), not a tensor kept alive after the step. Cited at that
line, its `if` and the call, with the fix of returning the same outputs on every call."""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._periodic import enclosing_if
from xlagraph.diagnose.recognizers._source import source_text
from xlagraph.diagnose.recognizers._traced_returns import TRACED, returned_under_if

__all__ = ["RECOGNIZER"]

_HINT = fix("output_added.returned")


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    context = evidence.context
    if context.trigger not in TRACED or not context.call_site:
        return NOTHING
    outputs = [
        i for i, c in enumerate(pending) if c.kind in (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
    ]
    lines = returned_under_if(context.call_site) if outputs else []
    if not lines:
        return NOTHING
    guard = enclosing_if(lines[0])
    test = source_text(guard).split("#", 1)[0].strip() if guard else ""
    where = f": the compiled function adds to what it returns only inside `{test[:80]}` at {guard}"
    where = where if test else ""
    causes = tuple(
        replace(
            pending[i],
            summary=f"{pending[i].summary}{where}",
            sources=tuple(
                s for s in dict.fromkeys([*lines, guard, context.call_site, *pending[i].sources]) if s
            )[:6],
            hint=_HINT,
        )
        for i in outputs
    )
    return Recognized(causes, frozenset(outputs))


RECOGNIZER = Recognizer("returned_output", _recognize)
