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


def _inputs(evidence: Evidence, cause: Cause) -> list[tuple[str, str]]:
    """(shape, where its metadata points) of each input a cause adds; `` for no frame."""
    right = evidence.right.entry
    out = []
    for p in cause.right:
        if p in right.param_number:
            frames = evidence.right.module.frames_of(right.instruction(p))
            out.append((shape_of(right, p), frames[0].file.replace("\\", "/") if frames else ""))
    return out


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
    inputs = [x for i in added for x in _inputs(evidence, pending[i])]
    existing = {shape_of(evidence.right.entry, p) for p in evidence.right.entry.param_number}
    # Buffers: inputs shaped like a tensor the step already had (a weight), not scalars.
    buffers = [(s, f) for s, f in inputs if not s.endswith("[]") and s in existing]
    created = [s for s, f in buffers if any(m in f for m in _OPTIMIZER)]
    carried = [s for s, f in buffers if not f]  # gradients kept from the step before
    optimizer_work = any(
        c.kind is CauseKind.STRUCTURE and any("/optim/" in f for f in evidence.library_files(c))
        for c in pending
    )
    if not created and not (carried and not optimizer_work):
        return NOTHING  # scalars alone are values passed as data, not created state
    shapes = [s for s, _ in inputs]
    folded = [
        i
        for i, c in enumerate(pending)
        if c.kind in _FOLDED
        and not _other_library(files := evidence.library_files(c))
        and (not files or c.kind is not CauseKind.STRUCTURE or any(m in f for f in files for m in _OPTIMIZER))
    ]
    # Regions of user code that changed too are not warm-up: leave them to other recognizers.
    what = (
        "optimizer buffers (momentum, Adam moments, step counts)"
        if created
        else "gradients kept from the step before (accumulated, or not zeroed yet)"
    )
    summary = (
        f"state created on the first steps: B takes {len(shapes)} new input(s) "
        f"({', '.join(sorted(set(shapes))[:4])}): {what}, which exist from this step on; expected once"
    )
    cause = merge(CauseKind.STATE_INIT, summary, [pending[i] for i in added + folded], info=True)
    return Recognized((cause,), frozenset(added + folded))


RECOGNIZER = Recognizer("state_init", _recognize)
