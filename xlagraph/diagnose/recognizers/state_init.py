"""`state_init`: state created on the first steps, such as optimizer buffers (SGD momentum,
Adam's exp_avg / exp_avg_sq / step). On the first step they are created from the gradients; from
the next step on they are inputs, so the graph changes once. Expected warm-up: info, with what
was created.

Evidence: the new graph takes inputs the baseline did not, shaped like the model's weights (or
scalar step counters), and the baseline is one of the first graphs of the run (or, without a
capture, nothing says otherwise); what changed around them comes from optimizer code.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.common import shape_of
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import merge

__all__ = ["RECOGNIZER"]

_WARM_UP_STEPS = 3
_OPTIMIZER = ("/torch/optim/", "/optim/", "optimizer")
_FOLDED = (
    CauseKind.STRUCTURE,
    CauseKind.OUTPUT_ADDED,
    CauseKind.OUTPUT_REMOVED,
    CauseKind.OUTPUT_PERMUTATION,
    CauseKind.PARAMETER_PERMUTATION,
    CauseKind.LAYOUT,
)
# Library code that is not the optimizer's, even when it runs inside `optimizer.step()`.
_NOT_STATE = ("clip_grad", "_patched_functions", "dropout")


def _weight_shaped(evidence: Evidence, cause: Cause) -> tuple[int, list[str]]:
    """(how many added inputs are shaped like an input B already had, their shapes)."""
    right = evidence.right.entry
    added = set(cause.right)
    existing = {shape_of(right, p) for p in right.param_number if p not in added}
    shapes = [shape_of(right, p) for p in cause.right if p in right.param_number]
    return sum(1 for s in shapes if s in existing or s.endswith("[]")), shapes


def _other_library(files: list[str]) -> bool:
    return any(m in f for f in files for m in _NOT_STATE)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    ctx = evidence.context
    if ctx.step >= _WARM_UP_STEPS and not ctx.first_graph:
        return NOTHING
    added = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.PARAMETER_ADDED and not _other_library(evidence.library_files(c))
    ]
    if not added:
        return NOTHING
    like, shapes = 0, []
    for i in added:
        n, s = _weight_shaped(evidence, pending[i])
        like, shapes = like + n, shapes + s
    buffers = [s for s in shapes if not s.endswith("[]")]
    if not buffers or like < len(shapes) / 2:
        return NOTHING  # scalars alone are values passed as data, not created state
    folded = [
        i
        for i, c in enumerate(pending)
        if c.kind in _FOLDED
        and not _other_library(files := evidence.library_files(c))
        and (not files or c.kind is not CauseKind.STRUCTURE or any(m in f for f in files for m in _OPTIMIZER))
    ]
    # Regions of user code that changed too are not warm-up: leave them to other recognizers.
    summary = (
        f"state created on the first steps: B takes {len(shapes)} new input(s) "
        f"({', '.join(sorted(set(shapes))[:4])}), e.g. optimizer buffers (momentum, Adam moments, step "
        "counts) that exist from this step on; expected once"
    )
    cause = merge(CauseKind.STATE_INIT, summary, [pending[i] for i in added + folded], info=True)
    return Recognized((cause,), frozenset(added + folded))


RECOGNIZER = Recognizer("state_init", _recognize)
