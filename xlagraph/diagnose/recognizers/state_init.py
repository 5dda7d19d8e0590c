"""`state_init`: state created on the first steps, such as optimizer buffers (SGD momentum,
Adam's exp_avg / exp_avg_sq / step). On the first step they are created from the gradients; from
the next step on they are inputs, so the graph changes once. Expected warm-up: info, with what
was created.

Evidence: the new graph takes inputs the baseline did not, shaped like the model's weights (or
scalar step counters), and the baseline is one of the first graphs of the run (or, without a
capture, nothing says otherwise); what changed around them comes from optimizer code.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import NamedTuple

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_optimizer_code
from xlagraph.diagnose.recognizers._causes import added_at_warm_up, merge
from xlagraph.diagnose.recognizers._dataflow import downstream, restated, updated_inputs
from xlagraph.diagnose.recognizers._source import source_text, user_files
from xlagraph.diagnose.recognizers._statements import call_name, lines_where
from xlagraph.diagnose.recognizers.pending_init import copies_returned
from xlagraph.diagnose.recognizers.permutation import reordered_only
from xlagraph.diagnose.recognizers.special_scalar import matched_twin
from xlagraph.diagnose.shapes import shape_of
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of
from xlagraph.opcodes import RESTATES
from xlagraph.runlog import Holder
from xlagraph.source_paths import is_library_path

__all__ = ["RECOGNIZER"]

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
_COUNTER_TYPES = ("s64[", "s32[", "u64[", "u32[")
_LR = re.compile(r"\blr\b|learning_rate")


class _Input(NamedTuple):
    name: str
    shape: str
    file: str  # where its metadata points, `` for no frame
    text: str  # the text of that line


def _inputs(evidence: Evidence, cause: Cause) -> list[_Input]:
    right = evidence.right.entry
    out = []
    for p in cause.right:
        if p in right.param_number:
            frames = evidence.right.module.frames_of(right.instruction(p))
            file = frames[0].file.replace("\\", "/") if frames else ""
            text = source_text(f"{frames[0].file}:{frames[0].line}") if frames else ""
            out.append(_Input(p, shape_of(right, p), file, text))
    return out


def _is_state(x: _Input, existing: set[str]) -> bool:
    """A buffer shaped like a tensor the step had (momentum, a carried gradient), or a scalar the
    optimizer keeps (a step count); a learning rate is a value passed in, not state."""
    if not x.shape.endswith("[]"):
        return x.shape in existing and (not x.file or is_optimizer_code(x.file))
    if x.shape.startswith(_COUNTER_TYPES) and x.file and is_library_path(x.file):
        return True  # a library's step counter (BatchNorm's num_batches_tracked): baked as 0, then data
    return is_optimizer_code(x.file) and not _LR.search(x.text)


_STATE_OUTPUTS = 3  # a buffer's own update, its weight's, and one more (Adam's second moment)


def _feeds_many(comp, name: str) -> bool:  # type: ignore[no-untyped-def]
    """An input that reaches more outputs than optimizer state does: state feeds its own update
    and its weight's; a weight of the model feeds the loss and every gradient (a layer added)."""
    return len(downstream(users_of(comp), [name]).intersection(comp.outputs)) > _STATE_OUTPUTS


def _compute_readers(comp, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The first instructions that compute with `name`, past transposes, reshapes, broadcasts."""
    users = users_of(comp)
    out: list[str] = []
    stack, seen = [name], {name}
    while stack:
        for u in users.get(stack.pop(), ()):
            if u in seen:
                continue
            seen.add(u)
            if comp.instruction(u).opcode in RESTATES:
                stack.append(u)
            else:
                out.append(u)
    return out


def _original_beside(comp, user: str, name: str, twins, added: set[str]) -> bool:  # type: ignore[no-untyped-def]
    """Another instruction of the same structure as `user` reads, where `user` reads `name`, an
    input of the same shape that is not new: the original the copy was made from."""
    at = [k for k, o in enumerate(comp.operands[user]) if restated(comp, o) == name]
    shape = comp.instruction(name).shape
    for other in twins:
        if other == user:
            continue
        ops = comp.operands[other]
        for k in at:
            o = restated(comp, ops[k]) if k < len(ops) else ""
            if o and o not in added and o in comp.param_number and comp.instruction(o).shape == shape:
                return True
    return False


def _combines(comp, user: str, name: str) -> bool:  # type: ignore[no-untyped-def]
    """`user` computes `name` with other data, not only with constants (`p * 0.9` is the same
    for every weight of a shape, so it says nothing about which computation `name` feeds)."""
    for o in comp.operands[user]:
        o = restated(comp, o)
        if o != name and comp.instruction(o).opcode != "constant":
            return True
    return False


def _copies(tree: ast.Module) -> Iterator[int]:
    """Where the user copies the model (an EMA kept with copy.deepcopy, torch's AveragedModel)."""
    calls = ((n.lineno, call_name(n.func)) for n in ast.walk(tree) if isinstance(n, ast.Call))
    return (n for n, name in calls if name in ("deepcopy", "AveragedModel") or name.startswith("ModelEma"))


def _copied(evidence: Evidence, inputs: list[_Input], others: set[str]) -> list[_Input]:
    """Every new tensor input has the shape of a weight B already reads, and the user's code
    copies the model: the copy (an EMA updated in place) shared the weights' device data until
    its first update, so the first graphs read one buffer where B reads two. Not a layer added:
    nothing new but twins of existing weights."""
    tensors = [x for x in inputs if not x.shape.endswith("[]")]
    if not tensors or any(x.shape not in others for x in tensors):
        return []
    if not lines_where(user_files(evidence), _copies, 1):
        return []
    return tensors


def _shared(evidence: Evidence, inputs: list[_Input], others: set[str]) -> list[_Input]:
    """New tensor inputs that B updates in place where A, in the instructions paired with their
    readers, read at the same operand an input of the same shape that B still reads: a copy made
    on the device (`p.detach().clone()` for an EMA of the weights) shared its original's data
    until its first update wrote it, so A read one buffer where B reads two. State made on the
    first step, read from then on, whatever call the user made the copy with."""
    entry, left = evidence.right.entry, evidence.left.entry
    written = set(updated_inputs(entry, entry.outputs).values())
    # The shared buffer is written twice in A (the weight's update and the copy's): a look-alike
    # layer's weight that the matcher paired with a new one (another stage's block) is written once.
    twice = {p for p, k in Counter(updated_inputs(left, left.outputs).values()).items() if k > 1}
    users = users_of(entry)
    kept = {p for p in left.param_number if evidence.entry_match_left.get(p) in entry.param_number}
    out = []
    for x in inputs:
        if x.shape.endswith("[]") or x.shape not in others or x.name not in written:
            continue
        # Readers the matcher paired (one of a bias's may not be): each read the original there.
        read = [
            (a, k)
            for u in users.get(x.name, ())
            if (a := evidence.entry_match.get(u))
            for k, o in enumerate(entry.operands[u])
            if o == x.name
        ]
        if read and all(
            k < len(left.operands.get(a, ()))
            and (o := restated(left, left.operands[a][k])) in kept
            and o in twice
            and shape_of(left, o) == x.shape
            for a, k in read
        ):
            out.append(x)
    return out


def _split(cause: Cause, keep: set[str]) -> Cause | None:
    """The part of an added-inputs cause about the inputs not in `keep`, or None."""
    names = tuple(n for n in cause.right if n not in keep)
    if not names:
        return None
    changes = tuple(ch for ch in cause.changes if ch.right not in keep)
    listed = ", ".join(ch.new and f"input {ch.new}" for ch in changes)
    return replace(
        cause, right=names, changes=changes, summary=f"B takes {len(names)} input(s) more ({listed})"
    )


_ORDERS = (CauseKind.OUTPUT_PERMUTATION, CauseKind.PARAMETER_PERMUTATION)


def _state_outputs(cause: Cause, shapes: set[str]) -> bool:
    """Extra or missing outputs that are the new state itself (a buffer returned to be kept);
    any other tensor kept alive is a cause of its own."""
    outs = [ch.new or ch.old for ch in cause.changes if ch.what == "output"]
    return bool(outs) and all(o.split(": ", 1)[-1] in shapes for o in outs)


def _first_gradients(evidence: Evidence, cause: Cause, weights: set[str]) -> bool:
    """Outputs only the first step returns, each shaped like a weight and made by library code alone
    (backward's raw gradients, or clipping's, which the call that created the optimizer state kept
    alive): that call's bookkeeping, not a tensor the user kept. Created state never drops an output
    otherwise."""
    if cause.kind is not CauseKind.OUTPUT_REMOVED:
        return False
    changes = [ch for ch in cause.changes if ch.what == "output"]
    left = evidence.left.entry
    return (
        bool(changes)
        and all(ch.old.split(": ", 1)[-1] in weights for ch in changes)
        # computed on that step: not copies the first sync made of inputs (`pending_init`'s)
        and all(restated(left, ch.left) not in left.param_number for ch in changes)
        and not copies_returned(evidence, [ch.left for ch in changes])
        and all(is_library_path(f) for f in evidence.library_files(cause))
    )


def _fill_values(evidence: Evidence, cause: Cause, state_shapes: set[str]) -> bool:
    """Inputs of A gone from B that are the value new state was filled with, where A made it
    (Adagrad's `full_like(p, initial_accumulator_value)`): scalars of optimizer code that A only
    expands, at that same line, into tensors of the state's shapes. B takes the state itself, so
    the value it started from is no longer read: the state's creation seen once more."""
    if cause.kind is not CauseKind.PARAMETER_REMOVED:
        return False
    left, module = evidence.left.entry, evidence.left.module
    users = users_of(left)
    names = [n for n in cause.left if n in left.param_number]
    if not names or len(names) != len(cause.left):
        return False
    for name in names:
        frames = module.frames_of(left.instruction(name))
        if not shape_of(left, name).endswith("[]") or not frames:
            return False
        line = (frames[0].file.replace("\\", "/"), frames[0].line)
        if not is_optimizer_code(line[0]):
            return False
        expanded, stack = [], [name]
        while stack:
            at = stack.pop()
            for u in users.get(at, ()):
                ins = left.instruction(u)
                if ins.opcode not in RESTATES:
                    if at == name:
                        return False  # computed with as a scalar (a factor), not a fill
                    expanded.append(at)
                    continue
                f = module.frames_of(ins)
                if not f or (f[0].file.replace("\\", "/"), f[0].line) != line:
                    return False
                stack.append(u)
        if not expanded or any(shape_of(left, e) not in state_shapes for e in expanded):
            return False
    return True


def _update_restated(evidence: Evidence, cause: Cause) -> bool:
    """Sizes changed only on ops that restate a value (a broadcast of the momentum factor) in
    optimizer code, on both sides: the update, rewritten around the new buffers, repeats one
    factor per weight, and the matcher paired its copies across weights of other shapes. No
    size the user passes."""
    if cause.kind is not CauseKind.ATTRIBUTE:
        return False
    found = evidence.instructions(cause)
    return (
        bool(found)
        and all(ins.opcode in RESTATES for _, ins in found)
        and all((f := canon.module.frames_of(ins)) and is_optimizer_code(f[0].file) for canon, ins in found)
    )


def _other_library(files: list[str]) -> bool:
    return any(m in f for f in files for m in _NOT_STATE)


def _trained_since_last_step(evidence: Evidence, pending: tuple[Cause, ...]) -> list[int]:
    """The added inputs of a compile one step after its baseline first ran (or later, where the
    baseline made that state), late in a run: the baseline began training parameters (a param
    group added, layers unfrozen; the first update under gradient accumulation), and optimizer
    state made for them on that step is read from this one on. Only optimizer buffers qualify
    (`created` below): a new phase's warm-up, whatever the step."""
    ctx = evidence.context
    if ctx.step < 0 or ctx.baseline_step < 0 or ctx.baseline_step >= ctx.step:
        return []
    if ctx.step - ctx.baseline_step != 1 and not _made_by_baseline(evidence, pending):
        return []
    return [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_ADDED]


def _optimizer_made(evidence: Evidence, name: str) -> bool:
    """The baseline's instruction `name` was made by optimizer code (its innermost frame), not a
    gradient autograd returned."""
    frames = evidence.left.module.frames_of(evidence.left.entry.instruction(name))
    return bool(frames) and is_optimizer_code(frames[0].file)


def _made_by_baseline(evidence: Evidence, pending: tuple[Cause, ...]) -> bool:
    """The baseline graph returned, computed, a tensor of each shape this graph newly takes: it made
    the state (the first optimizer step under gradient accumulation, k syncs before the second),
    in optimizer code, rather than updating an input of its own, copying one through or
    returning a gradient."""
    left = evidence.left.entry
    updated = updated_inputs(left, left.outputs)
    # Made, not copied through (an input restated) nor filled (zero_grad without set_to_none
    # returns zeros of every weight's shape: a constant restated); or, where the baseline ran the
    # update (wrote inputs in optimizer code), an update of a carried tensor that autograd
    # computed (no frame): a copy the optimizer keeps of the accumulated gradient (SGD's first
    # momentum, `clone(grad)`, in the graph the gradient carried from the step before plus this
    # one's). A gradient merely returned (not zeroed) updates nothing.
    updating = any(_optimizer_made(evidence, o) for o in updated)
    frames_of = evidence.left.module.frames_of
    fresh = Counter(
        shape_of(left, o)
        for o in left.outputs
        if (origin := restated(left, o)) not in left.param_number
        and left.instruction(origin).opcode not in ("constant", "iota")
        and (
            (o not in updated and _optimizer_made(evidence, o))
            or (
                updating
                and o in updated
                and not shape_of(left, o).endswith("[]")
                and not frames_of(left.instruction(origin))
            )
        )
    )
    # Tensors only: a new scalar is a factor the state enables (SGD's momentum), read below.
    wanted = Counter(
        shape
        for c in pending
        if c.kind is CauseKind.PARAMETER_ADDED
        for n in c.right
        if not (shape := shape_of(evidence.right.entry, n)).endswith("[]")
    )
    return bool(wanted) and all(fresh[shape] >= k for shape, k in wanted.items())


def _kept_as_state(evidence: Evidence, carried: list[_Input], pending: tuple[Cause, ...]) -> list[_Input]:
    """New inputs without a frame that are the state the baseline made, as the live tensors tell:
    before this graph's sync the optimizer's `state` holds, as tensors this graph computes, at
    least as many of each of their shapes. Under torch.compile the first update's buffers reach
    the lazy graph as device data, and the matcher may pair them with a gradient and call the
    gradient new: the shapes are what both sides agree on. Only where the baseline made tensors
    of those shapes (`_made_by_baseline`): a steady step's state is an input of both graphs."""
    tensors = [x for x in carried if not x.shape.endswith("[]")]
    if not tensors or not _made_by_baseline(evidence, pending):
        return []
    held = Counter(
        strip_layout(t.shape).replace(" ", "")
        for t in evidence.context.tensors
        if t.pending and any(_optimizer_state(h) for h in t.holders)
    )
    wanted = Counter(x.shape for x in tensors)
    return tensors if all(held[shape] >= k for shape, k in wanted.items()) else []


def _optimizer_state(holder: Holder) -> bool:
    """`opt.state[...]['momentum_buffer']`: the `state` attribute of an optimizer's class (every
    torch.optim optimizer keeps its buffers there); its `param_groups` hold the weights."""
    return holder.kind == "attribute" and holder.name == "state" and is_optimizer_code(holder.owner_file)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    added = added_at_warm_up(evidence, pending)
    late = not added
    if late:
        added = _trained_since_last_step(evidence, pending)
    if not added:
        return NOTHING
    inputs = [x for i in added for x in _inputs(evidence, pending[i])]
    entry = evidence.right.entry
    existing = {shape_of(entry, p) for p in entry.param_number}
    state = [
        x
        for x in inputs
        if _is_state(x, existing)
        and not _other_library([x.file])
        and not (not x.file and not x.shape.endswith("[]") and _feeds_many(entry, x.name))
    ]
    created = [x for x in state if is_optimizer_code(x.file) and not x.shape.endswith("[]")]
    carried = [x for x in state if not x.file]  # gradients kept from the step before
    if not created:
        created = _kept_as_state(evidence, carried, pending)
    optimizer_work = any(
        c.kind is CauseKind.STRUCTURE and any(is_optimizer_code(f) for f in evidence.library_files(c))
        for c in pending
    )
    # Weight-shaped inputs that are new although B already reads tensors of those very shapes: a
    # copy of the model (an EMA teacher, copy.deepcopy) shared the originals' device data until
    # its first update, so the first graph read one buffer where B reads two.
    added_names = {x.name for x in inputs}
    others = {shape_of(entry, p) for p in entry.param_number if p not in added_names}
    computed_by_a = Counter(evidence.left.entry.h0.values())
    by_h0: dict[int, list[str]] = {}
    for name, h in entry.h0.items():
        by_h0.setdefault(h, []).append(name)
    twins = [
        x
        for x in inputs
        if x not in state
        and not x.shape.endswith("[]")
        and x.shape in others
        and x.file
        # The copy feeds the same computation as the original does, side by side in B (same
        # structure, `h0`: the teacher's forward is the student's, on the same images); a new
        # layer's weights feed computation of their own, even a block put in front of the others.
        and any(
            computed_by_a[h := entry.h0.get(u)] > 0
            and _combines(entry, u, x.name)
            and _original_beside(entry, u, x.name, by_h0.get(h, ()), added_names)
            for u in _compute_readers(entry, x.name)
        )
    ]
    if len(twins) >= 2 and all(is_library_path(x.file) for x in twins):
        state += twins
    else:
        rest = [x for x in inputs if x not in state]
        twins = _copied(evidence, rest, others) or _shared(evidence, rest, others)
        state += twins
    # A library's integer step counters (BatchNorm's num_batches_tracked): 0 baked on the first
    # step, an input from then on, whatever the optimizer.
    # A counter is counted: the step writes it back (`num_batches_tracked.add_(1)`); an integer
    # scalar it only reads is a value passed as data (cross_entropy's smoothing, switched on).
    counting = set(updated_inputs(entry, entry.outputs).values())
    counters = [
        x
        for x in state
        if x.shape.endswith("[]")
        and x.shape.startswith(_COUNTER_TYPES)
        and is_library_path(x.file)
        and x.name in counting
    ]
    if not created and not twins and not counters and not (carried and not optimizer_work):
        return NOTHING  # scalars alone are values passed as data, not created state
    if late and not created:
        return NOTHING
    if created:
        # A scalar the optimizer's code reads that the first graph had nowhere, not even as a
        # baked 0 or 1 (that is a special scalar): a factor of the update the new state enables
        # (SGD's momentum once the buffers exist).
        state += [
            x
            for x in inputs
            if x not in state
            and x.shape.endswith("[]")
            and is_optimizer_code(x.file)
            and matched_twin(evidence, x.name, "right") == ""
        ]
    keep = {x.name for x in state}
    rest = tuple(r for i in added if (r := _split(pending[i], keep)) is not None)
    inputs = state
    shapes = [x.shape for x in inputs]
    users = users_of(entry)
    readers = {u for p in keep for u in users.get(p, ())}  # library code reading the state
    weights = {shape_of(entry, p) for p in entry.param_number if p not in keep}
    # What reads a copy that shared the original's data (the EMA's own `t.mul_(decay)`) read the
    # original in A: the same op, now on the copy's own buffer.
    copy_readers = {u for x in twins for u in users.get(x.name, ())}
    # B's outputs that write the new state back: where they come in the output list is new too.
    state_writes = {o for o, p in updated_inputs(entry, entry.outputs).items() if p in keep}
    # A copy that shared its original's buffer made A write that buffer twice (the weight's update
    # and the copy's); the matcher may pair either write with B's weight update.
    left = evidence.left.entry
    left_writes = updated_inputs(left, left.outputs)
    twice = Counter(left_writes.values())
    shared_writes = {o for o, p in left_writes.items() if twins and twice[p] > 1}
    folded = [
        i
        for i, c in enumerate(pending)
        if (
            (c.kind in _FOLDED and c.kind is not CauseKind.OUTPUT_REMOVED)
            or (created and _first_gradients(evidence, c, weights))
            or (created and _fill_values(evidence, c, set(shapes)))
            or (created and _update_restated(evidence, c))
        )
        # clipping's code is not state, unless the region reads the new state: a momentum buffer
        # first made from the clipped gradient, then updated from it
        and (
            not _other_library(files := evidence.library_files(c))
            or bool(set(c.right) & readers)
            or c.kind is CauseKind.OUTPUT_REMOVED
        )
        and (
            not files
            or c.kind is not CauseKind.STRUCTURE
            or any(is_optimizer_code(f) for f in files)
            or (set(c.right) & readers and all(is_library_path(f) for f in files))
            or (bool(c.right) and set(c.right) <= copy_readers)
        )
        and (c.kind is not CauseKind.OUTPUT_ADDED or _state_outputs(c, set(shapes)))
        # Tensors of the user's own code in another order (a dict of statistics filled in
        # another order) are a reordering of their own; new buffers only shift library outputs.
        and (
            c.kind not in _ORDERS
            or all(is_library_path(f) for f in files)
            or (bool(c.right) and set(c.right) <= state_writes)
            or (bool(c.left) and set(c.left) <= shared_writes)
        )
    ]
    # A reordering also explains user code that computes the same ops in another order (a dict
    # of statistics filled in another order on the warm-up step): it is a cause of its own then,
    # left to the permutation recognizer, which takes those regions with it.
    user_regions = [c for i, c in enumerate(pending) if c.kind is CauseKind.STRUCTURE and i not in folded]
    if user_regions and reordered_only(evidence, user_regions):
        folded = [i for i in folded if pending[i].kind not in _ORDERS]
    # Regions of user code that changed too are not warm-up: leave them to other recognizers.
    what = (
        "optimizer buffers (momentum, Adam moments, step counts)"
        if created
        else "copies of the model's tensors that shared their data until first updated (an EMA "
        "teacher, copy.deepcopy)"
        if twins
        else "a library's step counters (BatchNorm's num_batches_tracked: 0 is baked into the first "
        "graph, later values are inputs)"
        if counters and not carried
        else "gradients kept from the step before (accumulated, or not zeroed yet)"
    )
    if created and twins:
        what += " and copies of the model's tensors that shared their data until first updated"
    ctx = evidence.context
    when = (
        "on the first steps"
        if not late
        else "for the parameters trained since the step before (a param group added, layers unfrozen)"
        if ctx.step - ctx.baseline_step == 1
        else f"by the first update of these parameters, the baseline's at step {ctx.baseline_step} "
        "(gradient accumulation steps the optimizer every few syncs; or a param group was added)"
    )
    filled = any(pending[i].kind is CauseKind.PARAMETER_REMOVED for i in folded)
    summary = (
        f"state created {when}: B takes {len(shapes)} new input(s) "
        f"({', '.join(sorted(set(shapes))[:4])}): {what}, which exist from this step on"
        + ("; the value A filled them with is no longer an input" if filled else "")
        + "; expected once"
    )
    kept = [
        replace(
            pending[i],
            right=tuple(n for n in pending[i].right if n in keep),
            changes=tuple(ch for ch in pending[i].changes if ch.right in keep),
        )
        for i in added
    ]
    cause = merge(CauseKind.STATE_INIT, summary, kept + [pending[i] for i in folded], info=True)
    return Recognized((cause,), frozenset(added + folded), rest)


RECOGNIZER = Recognizer("state_init", _recognize)
