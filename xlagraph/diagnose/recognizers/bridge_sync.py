"""torch.compile's openxla bridge ran the step's pending work in a graph of its own.

When the bridge first compiles a graph it runs a full `torch_xla.sync()` before extracting it;
later calls sync only the compiled graph's inputs. So on a step where it compiles (the first, or
one where dynamo recompiles), the work the user left pending before the compiled call or its
backward (a loss) runs in the bridge's graph, and the user's own sync returns fewer tensors than
on a step where the bridge only runs what it compiled. torch.compile's warm-up: expected.

The other way round, mid-run: a dynamo recompile makes the bridge compile again, and on that step
its full sync takes the pending work (the loss) out of the user's graph, which returns it no more
than on that one step. Told apart from a tensor the user stopped keeping by its inputs: the removed
outputs read only inputs this graph no longer takes (the work left whole, with what it read). Named
here as the bridge's (info: the recompile that made the bridge compile is the one to fix, and the
dynamo join says it as that recompile's cause, `dynamo_join.handover.bridge_flush`).
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_optimizer_code
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import downstream, upstream
from xlagraph.diagnose.shapes import shape_of
from xlagraph.ir import strip_layout

__all__ = ["HINT", "MID_RUN", "RECOGNIZER"]

HINT = fix("state_init.bridge_sync")
# The mid-run case's `Cause.case`: the dynamo join finds it by it.
MID_RUN = "bridge_sync.mid_run"

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


def _reads_inputs(comp: CanonicalComputation, name: str) -> bool:
    """`name` is work computed from the graph's inputs: not an input itself, and it reads one
    (a constant the graph makes in place of an input is data no longer fed, not the bridge's)."""
    if comp.instruction(name).opcode == "parameter":
        return False
    return any(comp.instruction(o).opcode == "parameter" for o in downstream(comp.operands, [name]))


def _computed_here(evidence: Evidence, removed: list[Cause]) -> bool:
    """The inputs the baseline took and this graph does not are work the bridge's full sync
    computed for the baseline, which this graph computes itself (the forward's activations, the
    transposed weights the backward reads): the baseline's work that reads one has a counterpart
    here, which reads in its place an instruction of its shape computed from this graph's inputs.
    An input the step stopped feeding has none: only work that exists only in the baseline read
    it, or its counterpart reads a constant. One this graph still reads (its counterpart reads
    an input of its shape that is unpaired or paired with it: renumbered beside the optimizer's
    new state) is no sign either way; at least one must be handed over."""
    left, right = evidence.left.entry, evidence.right.entry
    gone = [ins for c in removed for canon, ins in evidence.instructions(c) if canon is evidence.left]
    if not gone or any(ins.opcode != "parameter" for ins in gone):
        return False
    paired = evidence.entry_match_left
    readers: dict[str, list[tuple[str, int]]] = {ins.name: [] for ins in gone}
    for user, operands in left.operands.items():
        for k, op in enumerate(operands):
            if op in readers:
                readers[op].append((user, k))
    handed = 0
    for ins in gone:
        shape = strip_layout(ins.shape)
        seen: set[str] = set()
        for user, k in readers[ins.name]:
            there = paired.get(user)
            if there is None:
                continue  # work only the baseline did with it (the backward of the bridge's forward)
            ops = right.operands.get(there, ())
            if k >= len(ops):
                return False
            other = right.instruction(ops[k])
            if strip_layout(other.shape) != shape:
                return False
            if other.opcode == "parameter" and evidence.entry_match.get(other.name, ins.name) == ins.name:
                seen.add("renumbered")
            elif _reads_inputs(right, other.name):
                seen.add("computed")
            else:
                return False
        if len(seen) != 1:
            return False  # read by nothing this graph also does, or both ways
        handed += "computed" in seen
    return handed > 0


def _state_in_place(evidence: Evidence, cause: Cause) -> bool:
    """A `parameter_shape` that only pairs by number an input the bridge handed over (the
    baseline's side) with optimizer state this step creates (this graph's side: Adam's moments of
    a weight trained from the baseline's step on): no input changed shape, one left and one came."""
    if cause.kind is not CauseKind.PARAMETER_SHAPE:
        return False
    entry = evidence.right.entry
    for name in cause.right:
        if name not in entry.param_number:
            return False
        frames = evidence.right.module.frames_of(entry.instruction(name))
        if not frames or not is_optimizer_code(frames[0].file):
            return False
    return bool(cause.right)


def _renumbered(evidence: Evidence, cause: Cause) -> bool:
    """A `parameter_shape` that only pairs by number an input the bridge handed over (the
    baseline's side) with an input of a shape the baseline also took under another number (a
    weight read by the work that came back): no input changed shape. Whether the handed-over
    side is the bridge's is `_computed_here`'s to check."""
    if cause.kind is not CauseKind.PARAMETER_SHAPE or not cause.right:
        return False
    entry, left = evidence.right.entry, evidence.left.entry
    took = {strip_layout(left.instruction(n).shape) for n in left.param_number if n not in cause.left}
    return all(
        name in entry.param_number and strip_layout(entry.instruction(name).shape) in took
        for name in cause.right
    )


def _left_whole(evidence: Evidence, cause: Cause) -> bool:
    """The baseline's outputs `cause` removes are scalars (a loss) that read inputs, and only
    inputs this graph no longer takes (and constants): work that left the graph whole, with
    everything it read."""
    left = evidence.left.entry
    kept = set(evidence.entry_match.values())
    outs = [ins.name for canon, ins in evidence.instructions(cause) if canon is evidence.left]
    # A loss, a scalar: outputs of other shapes that left whole are work a retrace without its
    # graph break moved into its compiled graphs (`dynamo_join.handover.moved_work`).
    lost = [ch.left for ch in cause.changes if ch.what == "output"]
    if not lost or any(not shape_of(left, o).endswith("[]") for o in lost):
        return False
    read = upstream(left.operands, outs) & set(left.param_number) if outs else set()
    return bool(read) and not read & kept


def _flushed_mid_run(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    """The bridge synced all pending work earlier in this step (it compiled again: a dynamo
    recompile), not in the baseline's: the outputs this graph lost to it, and the inputs only they
    read, are the bridge's."""
    live = [i for i, c in enumerate(pending) if not c.info]
    lost = [
        i for i in live if pending[i].kind is CauseKind.OUTPUT_REMOVED and _left_whole(evidence, pending[i])
    ]
    if not lost:
        return NOTHING
    left = evidence.left.entry
    outs = [
        ins.name for i in lost for canon, ins in evidence.instructions(pending[i]) if canon is evidence.left
    ]
    feeding = upstream(left.operands, outs)
    fed = [
        i
        for i in live
        if pending[i].kind is CauseKind.PARAMETER_REMOVED
        and pending[i].left
        and set(pending[i].left) <= feeding
    ]
    gone_in = [left.param_number[n] for i in fed for n in pending[i].left if n in left.param_number]
    gone_out = [k for k, o in enumerate(left.outputs) if o in outs]
    shifted = [i for i in live if _only_shifted(pending[i], gone_in, gone_out)]
    outputs = sum(1 for i in lost for ch in pending[i].changes if ch.what == "output") or len(lost)
    summary = (
        "torch.compile's openxla bridge synced all pending work earlier in this step (it compiled a "
        "graph again here, for a torch.compile recompile: its first compile of a graph runs a full "
        "torch_xla.sync before extracting it): the ops left pending before the compiled call or its "
        "backward (a loss) ran in the bridge's graph, so this sync's "
        f"graph returns {outputs} output(s) fewer on this step only; it follows from that recompile"
    )
    taken = lost + fed + shifted
    cause = merge(
        CauseKind.STATE_INIT, summary, [pending[i] for i in taken], hint=HINT, info=True, case=MID_RUN
    )
    return Recognized((cause,), frozenset(taken))


def _only_shifted(cause: Cause, gone_in: list[int], gone_out: list[int]) -> bool:
    """`cause` is a permutation whose every move is the renumbering the removal makes: each input
    (output) after a removed one one place earlier per removed one before it."""
    if cause.kind not in _ORDER or not cause.mapping:
        return False
    for m in cause.mapping:
        gone = gone_out if m.what == "output" else gone_in
        if m.right != m.left - sum(1 for k in gone if k < m.left):
            return False
    return True


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    ctx = evidence.context
    # Mid-run (a dynamo recompile made the bridge compile again): the loss this graph lost to it.
    mid_run = ctx.bridge_synced and not ctx.baseline_bridged and ctx.trigger and ctx.baseline_trigger
    if mid_run and "dynamo" not in (ctx.trigger, ctx.baseline_trigger):
        return _flushed_mid_run(evidence, pending)
    # The step after the bridge's warm-up: the work it synced comes back into the user's graph.
    if not ctx.baseline_bridged or ctx.bridge_synced:
        return NOTHING
    # Both graphs are the user's own syncs: the bridge's graphs are torch.compile's to explain.
    if "dynamo" in (ctx.trigger, ctx.baseline_trigger) or not ctx.trigger:
        return NOTHING
    live = [i for i, c in enumerate(pending) if not c.info]
    # A shape change is the bridge's only where the baseline's input is handed over like a removed
    # one (checked with them below) and optimizer state took its number here.
    stated = [i for i in live if _state_in_place(evidence, pending[i])]
    renumbered = [i for i in live if i not in stated and _renumbered(evidence, pending[i])]
    placed = stated + renumbered
    if any(pending[i].kind not in _ADDED + _ORDER + _RETURNING for i in live if i not in placed):
        return NOTHING
    removed = [pending[i] for i in live if pending[i].kind is CauseKind.PARAMETER_REMOVED]
    if placed and not _computed_here(evidence, removed + [pending[i] for i in placed]):
        return NOTHING
    # Without work coming back (outputs or inputs added: the state the optimizer creates on this
    # step was explained before), only inputs the bridge's sync handed over are gone.
    returning = any(pending[i].kind in _ADDED for i in live)
    if not (returning and _handed_over(evidence, removed)) and not (
        removed and _computed_here(evidence, removed)
    ):
        return NOTHING
    outputs = sum(1 for i in live for ch in pending[i].changes if ch.what == "output")
    step = ctx.baseline_step
    summary = (
        f"torch.compile's openxla bridge synced all pending work at step {step} (its first compile of "
        "a graph runs a full torch_xla.sync before extracting it): the ops left pending before the "
        "compiled call or its backward (a loss) ran in the bridge's graph on that step, and in this "
        "sync's graph on steps where the bridge syncs only the compiled graph's inputs"
        + (f" ({outputs} output(s) differ)" if outputs else "")
        + (
            f"; {sum(len(pending[i].right) for i in placed)} input(s) "
            + ("of optimizer state made on this step " if not renumbered else "")
            + "took the handed-over inputs' numbers, which reads as a shape change"
            if placed
            else ""
        )
        + "; torch.compile's warm-up, expected"
    )
    cause = merge(CauseKind.STATE_INIT, summary, [pending[i] for i in live], hint=HINT, info=True)
    return Recognized((cause,), frozenset(live))


RECOGNIZER = Recognizer("bridge_sync", _recognize)
