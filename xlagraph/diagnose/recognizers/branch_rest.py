"""`conditional_work` of the rest of a step that took a host-decided branch whose code synced:
`if loss.item() > limit:` over a fallback op (`F.huber_loss`, `torch.median` run on the CPU) cuts
the step inside the branch (`graph_break` names that cut there), and the step's own sync then holds
only what follows, computed from the branch's result (its backward, the update). That graph differs
from the other steps' because the branch ran: one cause, at the `if`.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS, NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._host_branch import taken_branch
from xlagraph.diagnose.recognizers._host_if import host_decided_if
from xlagraph.diagnose.recognizers._source import user_files

__all__ = ["RECOGNIZER"]

# What the branch's result changes in the rest of the step: the work that reads it, and the
# tensors it no longer (or now) hands over.
_REST = (*INTERFACE, CauseKind.STRUCTURE, CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    ctx = evidence.context
    # The cut itself is graph_break's; the rest is the step's own sync, the baseline's too.
    if ctx.trigger in IMPLICIT_TRIGGERS or not ctx.call_site or ctx.call_site != ctx.baseline_call_site:
        return NOTHING
    new = [line for line in ctx.step_cuts if line not in ctx.baseline_step_cuts]
    if not new:
        return NOTHING
    files = user_files(evidence)
    found = next(((line, b) for line in new if (b := host_decided_if(line, files))), None)
    if found is None:
        return NOTHING
    line, branch = found
    rest = [i for i, c in enumerate(pending) if c.kind in _REST and not c.info]
    if not rest or len(rest) != sum(1 for c in pending if not c.info):
        return NOTHING
    said = (
        f"synced at {line}: this graph holds the rest of that step, computed from the branch's result "
        f"({len(rest)} difference(s))"
    )
    return Recognized((taken_branch(branch, line, said, [pending[i] for i in rest]),), frozenset(rest))


RECOGNIZER = Recognizer("branch_rest", _recognize)
