"""torch.compile's openxla bridge ran the step's pending work in a graph of its own.

When the bridge first compiles a graph it runs a full `torch_xla.sync()` before extracting it;
later calls sync only the compiled graph's inputs. So on a step where it compiles (the first, or
one where dynamo recompiles), the work the user left pending before the compiled call or its
backward (a loss) runs in the bridge's graph, and the user's own sync returns fewer tensors than
on a step where the bridge only runs what it compiled. torch.compile's warm-up: expected.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.ir import strip_layout

__all__ = ["HINT", "RECOGNIZER"]

HINT = fix("state_init.bridge_sync")

_ADDED = (CauseKind.OUTPUT_ADDED, CauseKind.PARAMETER_ADDED)
# What moving work from one graph to the other also does: inputs and outputs shift.
_ORDER = (CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION)
# And where the work comes back whole (a loss and its backward): the baseline read what the bridge's
# graph computed for it (gradients) as inputs, which this graph now computes, and the code around
# the returned work is arranged otherwise.
_RETURNING = (CauseKind.PARAMETER_REMOVED, CauseKind.STRUCTURE)


def _handed_over(evidence: Evidence, removed: list[Cause]) -> bool:
    """Every input the baseline took and this graph does not has the shape of an input this graph
    takes: a result the bridge's graph computed from the weights (a weight's gradient has its
    weight's shape), not data the step stopped feeding."""
    if not removed:
        return True
    entry = evidence.right.entry
    takes = {strip_layout(entry.instruction(n).shape) for n in entry.param_number}
    gone = [ins for c in removed for canon, ins in evidence.instructions(c) if canon is evidence.left]
    return bool(gone) and all(strip_layout(ins.shape) in takes for ins in gone)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    ctx = evidence.context
    # The step after the bridge's warm-up: the work it synced comes back into the user's graph.
    # (The other way round, a graph that lost outputs to the bridge's sync, is left to the
    # other recognizers: a dynamo recompile is what makes the bridge sync mid-run.)
    if not ctx.baseline_bridged or ctx.bridge_synced:
        return NOTHING
    # Both graphs are the user's own syncs: the bridge's graphs are torch.compile's to explain.
    if "dynamo" in (ctx.trigger, ctx.baseline_trigger) or not ctx.trigger:
        return NOTHING
    live = [i for i, c in enumerate(pending) if not c.info]
    if not any(pending[i].kind in _ADDED for i in live):
        return NOTHING
    if any(pending[i].kind not in _ADDED + _ORDER + _RETURNING for i in live):
        return NOTHING
    removed = [pending[i] for i in live if pending[i].kind is CauseKind.PARAMETER_REMOVED]
    if not _handed_over(evidence, removed):
        return NOTHING
    outputs = sum(1 for i in live for ch in pending[i].changes if ch.what == "output")
    step = ctx.baseline_step
    summary = (
        f"torch.compile's openxla bridge synced all pending work at step {step} (its first compile of "
        "a graph runs a full torch_xla.sync before extracting it): the ops left pending before the "
        "compiled call or its backward (a loss) ran in the bridge's graph on that step, and in this "
        "sync's graph on steps where the bridge syncs only the compiled graph's inputs"
        + (f" ({outputs} output(s) differ)" if outputs else "")
        + "; torch.compile's warm-up, expected"
    )
    cause = merge(CauseKind.STATE_INIT, summary, [pending[i] for i in live], hint=HINT, info=True)
    return Recognized((cause,), frozenset(live))


RECOGNIZER = Recognizer("bridge_sync", _recognize)
