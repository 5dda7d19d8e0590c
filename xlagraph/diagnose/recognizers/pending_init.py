"""The first graph of a run also ran the ops left pending since the model was built.

An in-place initialisation under `torch.no_grad()` (`bias.fill_(0.5)`, `weight.copy_(w)`) or any
device op before the first sync is pending until then, so the run's first graph returns those
tensors too and the next graph, the same step without them, returns fewer. That happens once:
expected, like optimizer state created on the first step.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import upstream
from xlagraph.ir import strip_layout

__all__ = ["RECOGNIZER", "copies_returned"]

_GONE = (CauseKind.OUTPUT_REMOVED, CauseKind.PARAMETER_REMOVED)
_INSIDE = (CauseKind.STRUCTURE,)
_ORDER = (CauseKind.PARAMETER_PERMUTATION,)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    if not evidence.context.first_graph:
        return NOTHING
    outputs = [i for i, c in enumerate(pending) if c.kind is CauseKind.OUTPUT_REMOVED]
    if not outputs:
        return NOTHING
    # Only what the first graph did in addition: outputs and inputs it alone has, and the work
    # computing them (regions with nothing only in B).
    # (Inputs in another order are left to the permutation rule: optimizer state inserted at
    # the next step shifts them.)
    rest = [i for i, c in enumerate(pending) if i not in outputs and not c.info and c.kind not in _ORDER]
    if any(pending[i].kind not in _GONE + _INSIDE for i in rest):
        return NOTHING
    if any(pending[i].kind in _INSIDE and pending[i].right for i in rest):
        return NOTHING
    # Initial values come from constants and values passed in for them only: a tensor computed
    # from the weights or the batch both graphs read (a norm kept for logging) is no initialisation.
    entry = evidence.left.entry
    heads = [ch.left for i in outputs for ch in pending[i].changes if ch.what == "output" and ch.left]
    if not heads:
        return NOTHING
    paired = evidence.entry_match_left
    copies = any(n in paired for n in upstream(entry.operands, heads) & set(entry.param_number))
    if copies and not copies_returned(evidence, heads):
        return NOTHING
    n = len(heads)
    summary = (
        f"the run's first graph also returned {n} input(s) unchanged, which the next one does not: "
        "copies made before the first sync (copy.deepcopy of the model for an EMA or a teacher, "
        ".clone()) are materialized by it; expected once"
        if copies
        else f"the run's first graph also returned {n} tensor(s) the next one does not: ops left pending "
        "since the model was built (an in-place initialisation such as fill_ or copy_ under "
        "no_grad) run with the first sync; expected once"
    )
    cause = merge(CauseKind.STATE_INIT, summary, [pending[i] for i in outputs + rest], info=True)
    return Recognized((cause,), frozenset(outputs + rest))


RECOGNIZER = Recognizer("pending_init", _recognize)


def copies_returned(evidence: Evidence, heads: list[str]) -> bool:
    """The first graph returns as many more inputs unchanged as outputs are gone, of the same
    shapes: copies made before the first sync (`copy.deepcopy(model)` for an EMA, `.clone()`),
    which torch_xla materializes as the input itself. Outputs of one shape are interchangeable,
    so which of them the pairing called removed does not matter."""
    left, right = evidence.left.entry, evidence.right.entry

    def returned(comp) -> list[str]:  # type: ignore[no-untyped-def]
        return sorted(
            strip_layout(str(comp.instruction(o).shape)) for o in comp.outputs if o in comp.param_number
        )

    extra = returned(left)
    for shape in returned(right):
        if shape in extra:
            extra.remove(shape)
    return sorted(strip_layout(str(left.instruction(h).shape)) for h in heads) == extra
