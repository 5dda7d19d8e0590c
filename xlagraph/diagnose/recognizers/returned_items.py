"""`output_added` / `output_removed` of a function `torch_xla.compile` traces that returns one tensor
per item of an argument (`panels = {name: panel_value(name, logits) for name in due}`, the panels
due on this call): which outputs the graph has follows what the host passes, so a call with other
items is a graph of its own, and look-alike outputs (two (1,) panels) trade places from call to
call. The work computed only for those outputs (its ops, the scalars torch_xla uploads for it) is
that one cause, not a branch of its own or an input dropped: cited at the comprehension and where
the host sets the argument, with the fix of returning the same outputs on every call."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._causes import TAPS, merge, scalar_inputs
from xlagraph.diagnose.recognizers._source import source_text
from xlagraph.diagnose.recognizers._traced_returns import TRACED, PerItem, returned_per_item

__all__ = ["RECOGNIZER"]

_HINT = fix("output_added.returned")


def _for_items(cause: Cause, found: PerItem) -> bool:
    """Every line of the user's the cause cites is the per-item work (and there is one)."""
    user = [s for s in cause.sources if is_user_location(s)]
    return bool(user) and all(s in found.work for s in user)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    context = evidence.context
    if context.trigger not in TRACED or not context.call_site:
        return NOTHING
    found = returned_per_item(context.call_site)
    if found is None:
        return NOTHING
    outputs = [i for i, c in enumerate(pending) if c.kind in TAPS and _for_items(c, found)]
    work = [
        i
        for i, c in enumerate(pending)
        if (c.kind is CauseKind.STRUCTURE or scalar_inputs(evidence, c)) and _for_items(c, found)
    ]
    # (a region with work on both sides: the matcher paired one item's output with another's)
    traded = any(
        pending[i].kind is CauseKind.STRUCTURE and pending[i].left and pending[i].right for i in work
    )
    if not outputs and not traded:
        return NOTHING
    kind = (
        CauseKind.OUTPUT_ADDED
        if not outputs or any(pending[i].kind is CauseKind.OUTPUT_ADDED for i in outputs)
        else CauseKind.OUTPUT_REMOVED
    )
    built, *set_at = found.lines
    text = source_text(built).split("#", 1)[0].strip()[:90]
    said = (
        f"the compiled function returns one tensor per item of an argument (`{text}` at {built})"
        + (f", which the host sets at {', '.join(set_at)}" if set_at else "")
        + ": a call with other items returns other outputs, a graph of its own"
    )
    if traded and outputs:
        said += "; an output of the same shape is computed another way: another item took its place"
    if work:
        said += (
            "; the work computed only for those outputs (and the scalars it reads) comes and goes with them"
        )
    # Look-alike outputs (two (1,) metrics) that traded places change no output count: B returns
    # as many tensors as A, another item's in place of one of A's.
    first = [pending[i].summary for i in outputs] or [
        "B returns another item's output in place of one of A's"
    ]
    summary = "; ".join([*first, said])
    cause = merge(
        kind,
        summary,
        [pending[i] for i in (*outputs, *work)],
        hint=_HINT,
        sources=tuple(
            dict.fromkeys(
                [*found.lines, context.call_site, *(s for i in outputs for s in pending[i].sources)]
            )
        )[:6],
    )
    return Recognized((cause,), frozenset([*outputs, *work]))


RECOGNIZER = Recognizer("returned_items", _recognize)
