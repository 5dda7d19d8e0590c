"""`parameter_permutation` / `output_permutation`: a root reason of its own beside changes that do
not renumber.

Inputs and outputs are paired by their data flow (`xlagraph.match.correspondence`), not by their
slots. An output added or dropped, a constant or an input size changed leave the other tensors'
order as it was: a reordering beside them is a second root reason, named next to them, except
inputs that torch_xla numbered as its lowering met them, which an output added or dropped
renumbers (`_renumbered_by_outputs`). When the step computes something else (new work, another
dtype or layout, new optimizer state), the lowering visits the graph in another order and inputs
and outputs are numbered anew: that reordering follows from the other change and is folded into
it (its mapping kept). The lines that decided the order, cited first, are `_permutation_site`'s."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import Cause, CauseKind, Change
from xlagraph.diagnose.collectives import collectives
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.permutation import order_changed
from xlagraph.diagnose.recognizers._dataflow import upstream
from xlagraph.diagnose.recognizers._permutation_site import called_from_loop, filled_at
from xlagraph.diagnose.recognizers.term_order import HINT as SUM_TERMS
from xlagraph.ir import strip_layout
from xlagraph.source_paths import is_library_path

__all__ = ["RECOGNIZER", "reordered_only"]

_ORDER = (CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION)
_PLAIN = {
    CauseKind.PARAMETER_PERMUTATION: fix("parameter_permutation.plain"),
    CauseKind.OUTPUT_PERMUTATION: fix("output_permutation.plain"),
}


_INSIDE = (CauseKind.STRUCTURE, CauseKind.ATTRIBUTE)
# Changes that leave the order of the other inputs and outputs alone.
_BESIDE = frozenset(
    {CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED, CauseKind.CONSTANT_VALUE, CauseKind.PARAMETER_SHAPE}
)
_SLOTS = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
_ID = re.compile(r"\.(\d+)$")


def _numbered_as_met(canon: CanonicalModule) -> bool:
    """The entry's inputs are numbered in the order its lowering created them, among the ops that
    read them: torch_xla numbers an input when it first lowers it, and every instruction's name
    ends in the id the lowering gave it (`p23.159`). Not a calling convention whose inputs all
    come first (JAX's `Arg_0.1`, `Arg_1.2`), nor numbers shuffled under names kept as they were."""
    numbers = canon.entry.param_number
    ids = {i.name: m.group(1) for i in canon.entry.computation.instructions if (m := _ID.search(i.name))}
    if len(numbers) < 2 or any(p not in ids for p in numbers):
        return False
    made = [int(ids[p]) for p in sorted(numbers, key=numbers.__getitem__)]
    if any(b <= a for a, b in itertools.pairwise(made)):
        return False
    between = sum(1 for n, k in ids.items() if n not in numbers and made[0] < int(k) < made[-1])
    return between > 0  # other ops were lowered between the inputs


def _renumbered_by_outputs(evidence: Evidence, pending: tuple[Cause, ...], real: list[int]) -> bool:
    """Inputs in another order beside an output added or removed, in graphs whose inputs are
    numbered as the lowering meets them: it meets them in the order of the outputs it lowers, so
    the new or dropped output renumbered them (the moments of the next weight where a frozen
    embedding's were); nothing the user ordered moved."""
    return (
        any(pending[i].kind in _SLOTS for i in real)
        and _numbered_as_met(evidence.left)
        and _numbered_as_met(evidence.right)
    )


def _computed_by_both(evidence: Evidence, cause: Cause) -> bool:
    """Every value the cause adds to (or removes from) the outputs is computed by the other graph
    too, as an intermediate: the same computation (`h0`: the subtree, whichever inputs of those
    shapes it reads) is there."""
    found = evidence.instructions(cause)
    if not found:
        return False
    other = {
        evidence.left: set(evidence.right.entry.h0.values()),
        evidence.right: set(evidence.left.entry.h0.values()),
    }
    return all(
        canon.entry.h0.get(ins.name) in other[canon] for canon, ins in found if ins.name in canon.entry.h0
    ) and all(ins.name in canon.entry.h0 for canon, ins in found)


def _reads(canon: CanonicalModule, heads: list[str]) -> set[str]:
    """The entry's inputs that the values `heads` are computed from."""
    entry = canon.entry
    return upstream(entry.operands, heads) & set(entry.param_number)


def _kept_other(evidence: Evidence, pending: tuple[Cause, ...], real: list[int]) -> bool:
    """The only differences are outputs swapped for values both graphs compute (one head's
    logits returned where the other's were), and the swapped outputs read other inputs than
    their counterparts, as the input pairing pairs them: two tensors computed by other weights,
    one dropped and one kept, not the same computation in another slot. The inputs moved only
    because torch_xla numbers them as it meets them from the outputs, which kept their order
    (live tensors made in another order are a reordering of the user's)."""
    if any(c.kind is CauseKind.OUTPUT_PERMUTATION for c in pending):
        return False
    inner = [pending[i] for i in real]
    swapped = swapped_outputs(evidence, inner)
    if not swapped or len(swapped) != len(inner) or not _renumbered_by_outputs(evidence, pending, real):
        return False
    pairs = {
        mv.left_name: mv.right_name
        for c in pending
        if c.kind is CauseKind.PARAMETER_PERMUTATION
        for mv in c.mapping
        if mv.what == "input"
    }
    heads_l = [ch.left for c in swapped for ch in c.changes if ch.what == "output" and ch.left]
    heads_r = [ch.right for c in swapped for ch in c.changes if ch.what == "output" and ch.right]
    read_l, read_r = _reads(evidence.left, heads_l), _reads(evidence.right, heads_r)
    return bool(pairs) and {pairs.get(p, "") for p in read_l} != read_r


def _slots(causes: list[Cause]) -> int:
    return sum(1 for c in causes for ch in c.changes if ch.what == "output")


def swapped_outputs(evidence: Evidence, others: list[Cause]) -> list[Cause]:
    """Outputs added and removed in equal numbers where each graph computes the other's extra
    output anyway: not a tensor kept alive on some steps, but which of the step's own values a
    variable holds at the sync (the last item of a loop whose order changed)."""
    added = [c for c in others if c.kind is CauseKind.OUTPUT_ADDED]
    removed = [c for c in others if c.kind is CauseKind.OUTPUT_REMOVED]
    if not added or _slots(added) != _slots(removed):
        return []
    slots = added + removed
    return slots if all(_computed_by_both(evidence, c) for c in slots) else []


# Attributes that say which dimensions of the operands an op works on: with operands of other
# shapes (the same op now reading another input) they change with them.
_OF_OPERANDS = frozenset({"dimensions"})


def _follows_operands(evidence: Evidence, cause: Cause, ch: Change) -> bool:
    """`ch` changes the dimensions an op works on (a reduce's, a broadcast's) where its operands
    have other shapes too: the op reads another tensor, the numbers follow from that."""
    if ch.what not in _OF_OPERANDS:
        return False
    shapes = []
    for canon, name in ((evidence.left, ch.left), (evidence.right, ch.right)):
        comp = canon.computations.get(cause.computation, canon.entry)
        ins = comp.computation.by_name.get(name)
        if ins is None:
            return False
        by_name = comp.computation.by_name
        shapes.append(tuple(strip_layout(by_name[o].shape) for o in ins.operands if o in by_name))
    return shapes[0] != shapes[1]


def _values_traded(others: list[Cause]) -> bool:
    """The constants that changed only trade places among themselves (64 -> 6, 6 -> 1, 1 -> 64):
    updates chained through a shared value (a drift meter each update adds to) are paired by their
    place in the chain, so each mean's divisor meets another's. Values that trade places are the
    sizes of the updates that moved, not a Python number that changed."""
    values = [ch for c in others for ch in c.changes if ch.what == "value"]
    return len(values) >= 2 and sorted(ch.old for ch in values) == sorted(ch.new for ch in values)


def reordered_only(evidence: Evidence, others: list[Cause]) -> bool:
    """Every other difference is inside the computation, with the same kinds of ops on both
    sides, and no attribute other than an op's shape changed; outputs may differ only by values
    both graphs compute (`swapped_outputs`)."""
    swapped = swapped_outputs(evidence, others)
    others = [c for c in others if not any(c is s for s in swapped)]
    if not all(c.kind in _INSIDE for c in others):
        return False
    traded = _values_traded(others)
    if any(
        ch.what not in ("shape", "opcode")
        and not _follows_operands(evidence, c, ch)
        and not (ch.what == "value" and traded)
        for c in others
        for ch in c.changes
    ):
        return False
    left: set[str] = set()
    right: set[str] = set()
    for c in others:
        for canon, ins in evidence.instructions(c):
            if ins.opcode != "parameter":
                (left if canon is evidence.left else right).add(ins.opcode)
    return left == right


def _plain(evidence: Evidence, causes: list[tuple[int, Cause]]) -> tuple[Cause, ...]:
    """The root cause's hint: buckets only where the graphs have collectives. An output order
    that follows a dict of statistics cites the lines that fill it."""
    # A sum's terms in another order (term_order) cite and fix where the terms moved.
    causes = [(i, c if c.hint == SUM_TERMS else filled_at(evidence, c)) for i, c in causes]
    causes = [(i, called_from_loop(evidence, c)) for i, c in causes]
    if collectives(evidence.left) or collectives(evidence.right):
        return tuple(c for _, c in causes)
    return tuple(c if c.hint == SUM_TERMS else replace(c, hint=_PLAIN[c.kind]) for _, c in causes)


def _absorbed(host: Cause, others: list[Cause], **fields) -> Cause:  # type: ignore[no-untyped-def]
    """`host` taking over the instructions of `others` (each name once), and `fields`."""
    return replace(
        host,
        left=host.left + tuple(n for c in others for n in c.left if n not in host.left),
        right=host.right + tuple(n for c in others for n in c.right if n not in host.right),
        **fields,
    )


def _one_order(found: dict[int, Cause]) -> list[tuple[int, Cause]]:
    """Inputs and outputs in another order are one root reason: torch_xla numbers both by the
    order in which tensors are created and updated. The outputs' cause (the live tensors)
    carries the inputs' mapping."""
    outs = [i for i, c in found.items() if c.kind is CauseKind.OUTPUT_PERMUTATION]
    ins = [i for i, c in found.items() if c.kind is CauseKind.PARAMETER_PERMUTATION]
    if len(outs) != 1 or not ins:
        return list(found.items())
    host = found[outs[0]]
    moved = [found[i] for i in ins]
    count = sum(sum(1 for m in c.mapping if m.left != m.right) for c in moved)
    merged = _absorbed(
        host,
        moved,
        mapping=host.mapping + tuple(m for c in moved for m in c.mapping),
        summary=f"{host.summary}; the inputs come in another order too ({count} moved)",
        sources=tuple(dict.fromkeys(host.sources + tuple(x for c in moved for x in c.sources)))[:6],
    )
    return [(outs[0], merged)]


def _user_reordered(evidence: Evidence, cause: Cause) -> bool:
    """Items the user's code made (innermost frame outside libraries) come in another order among
    themselves; one that only moved relative to library items (an in-place EMA while optimizer
    buffers are created) is shifted by what was added, not reordered."""
    left = evidence.left
    pairs = []
    for mv in cause.mapping:
        ins = left.entry.computation.by_name.get(mv.left_name)
        frames = left.module.frames_of(ins)[:1] if ins is not None else []
        if frames and not is_library_path(frames[0].file.replace("\\", "/")):
            pairs.append((mv.left, mv.right))
    return order_changed(pairs)


def _scalars_added(evidence: Evidence, cause: Cause) -> bool:
    """New scalar inputs only (learning rates of new param groups, where one was shared): they
    renumber the inputs after them but create no tensor of the step's, so the outputs (the live
    tensors, in the order they were created) keep their order; outputs in another order beside
    them are a reordering of their own."""
    if cause.kind is not CauseKind.PARAMETER_ADDED:
        return False
    entry = evidence.right.entry
    added = [ch.right for ch in cause.changes if ch.what == "input" and ch.right]
    return bool(added) and all(
        p in entry.param_number and strip_layout(entry.instruction(p).shape).endswith("[]") for p in added
    )


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    orders = [i for i, c in enumerate(pending) if c.kind in _ORDER]
    if not orders:
        return NOTHING
    real = [i for i, c in enumerate(pending) if c.kind not in _ORDER and not c.info]
    expected = [i for i, c in enumerate(pending) if c.kind not in _ORDER and c.info]
    inner = [pending[i] for i in real]
    if real and reordered_only(evidence, inner) and not _kept_other(evidence, pending, real):
        # The same ops, wired in another order (gradients summed in the new order of the
        # tensors): the reordering is the root, what differs inside follows from it.
        hi = next((i for i in orders if pending[i].kind is CauseKind.OUTPUT_PERMUTATION), orders[0])
        host = pending[hi]
        swapped = swapped_outputs(evidence, inner)
        held = ""
        if swapped:
            old = [ch.old for c in swapped for ch in c.changes if ch.what == "output" and ch.old]
            new = [ch.new for c in swapped for ch in c.changes if ch.what == "output" and ch.new]
            held = (
                f"; output {', '.join(old)} in A is {', '.join(new)} in B, values both graphs compute: "
                "a variable still holds the last item of a loop whose order changed"
            )
        merged = _absorbed(
            host,
            inner,
            changes=host.changes + tuple(ch for c in inner for ch in c.changes),
            summary=f"{host.summary}; the computation follows in that order ({len(inner)} region(s)){held}",
        )
        found = {i: merged if i == hi else pending[i] for i in orders}
        return Recognized(_plain(evidence, _one_order(found)), frozenset([*orders, *real]))
    inputs_only = all(pending[i].kind is CauseKind.PARAMETER_PERMUTATION for i in orders)
    beside = not (real and inputs_only and _renumbered_by_outputs(evidence, pending, real))
    outputs_moved = any(pending[i].kind is CauseKind.OUTPUT_PERMUTATION for i in orders)
    renumbers_nothing = beside and all(
        pending[i].kind in _BESIDE or (outputs_moved and _scalars_added(evidence, pending[i])) for i in real
    )
    if not expected and renumbers_nothing:
        # The root cause, alone or beside changes that renumber nothing.
        return Recognized(_plain(evidence, _one_order({i: pending[i] for i in orders})), frozenset(orders))
    if renumbers_nothing:
        # Warm-up state only adds tensors: outputs of the user's own code in another order (a dict
        # of statistics filled in another order on that step) are a reordering of their own, also
        # beside a change that renumbers nothing (a baked constant, an output kept on some steps).
        own = [
            i
            for i in orders
            if pending[i].kind is CauseKind.OUTPUT_PERMUTATION and _user_reordered(evidence, pending[i])
        ]
        if own:
            return Recognized(_plain(evidence, [(i, pending[i]) for i in own]), frozenset(own))
    # Another change renumbered the inputs and outputs (new work, or new optimizer state).
    target = (real or expected)[0]
    host = pending[target]
    moved = [pending[i] for i in orders]
    merged = _absorbed(host, moved, mapping=host.mapping + tuple(m for c in moved for m in c.mapping))
    return Recognized((merged,), frozenset([target, *orders]))


RECOGNIZER = Recognizer("permutation", _recognize)
