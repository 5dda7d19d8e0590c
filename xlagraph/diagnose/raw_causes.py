"""The raw differences of two matched computations, before any pattern is recognized.

Reading order mirrors how a PyTorch/XLA engineer reasons: first the interface of the graph
(inputs: shapes, element types, layouts, inputs added or removed, a permutation the evidence
shows; outputs: added, removed, permuted), then collectives as one sequence, then changes inside
matched instructions (constants, attributes), and last whatever is left as structural regions.
A change that follows from another (a shape that changes because an input's shape changed, a
constant equal to a batch dimension that changed) is folded into the cause it follows from
instead of being reported again. The recognizers (`xlagraph.diagnose.recognizers`) then name
the patterns behind these raw differences.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.canonical.attributes import plumbing_attributes
from xlagraph.canonical.written import as_written, changed_texts
from xlagraph.diagnose.causes import Cause, CauseKind, Change
from xlagraph.diagnose.changed import Decided
from xlagraph.diagnose.collectives import (
    ORDER_HINT,
    OTHER_TENSORS_HINT,
    Collective,
    collectives,
    describe,
    regrouped_only,
    summarize,
)
from xlagraph.diagnose.comparison import Comparison
from xlagraph.diagnose.inputs import compare_parameters
from xlagraph.diagnose.instructions import matched_changes
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.numbers import dim_changes, explained_by_dims
from xlagraph.diagnose.outputs import compare_outputs
from xlagraph.diagnose.regions import structure
from xlagraph.match import Matching

__all__ = ["compare_computation", "input_dim_changes"]


def _run(cmp: Comparison, dims: set[tuple[str, str]], regrouped: bool) -> list[Cause]:
    cmp.regrouped = regrouped
    if cmp.is_entry:
        dims = dims | compare_parameters(cmp)
        cmp.repair_parameters()
    cmp.dims = dims
    if cmp.is_entry:
        compare_outputs(cmp)
        _dtype(cmp)
    regrouped = _collective(cmp) or cmp.regrouped
    cmp.regrouped = regrouped
    structural = matched_changes(cmp, dims)
    structure(cmp, structural, regrouped)
    _fold_into_order(cmp)
    _forwarded_root(cmp)
    if len(cmp.causes) > 1:
        # Donation follows any other change (other tensors updated in place, other outputs):
        # a cause only when it is the one difference.
        cmp.causes = [c for c in cmp.causes if not c.attribute_only("input_output_alias")]
    return cmp.causes


def _collective(cmp: Comparison) -> bool:
    if not cmp.is_entry:
        return False
    lc, rc = collectives(cmp.lm), collectives(cmp.rm)
    if sorted(c.signature for c in lc) == sorted(c.signature for c in rc):
        return _reordered(cmp, lc, rc)
    if _follow_inputs(lc, rc, cmp.dims, _same_world(cmp.lm, cmp.rm)):
        return False  # a sequence length reaching the collectives' operands: the shape's cause
    lsig = {c.signature for c in rc}
    rsig = {c.signature for c in lc}
    left_changed = [c.name for c in lc if c.signature not in lsig]
    right_changed = [c.name for c in rc if c.signature not in rsig]
    summary, case = summarize(lc, rc)
    cmp.cause(CauseKind.COLLECTIVE, summary, left_changed, right_changed, case=case)
    if not regrouped_only(lc, rc):
        # Other tensors reduced, not the same ones bucketed another way: bucketing is no fix.
        cmp.causes[-1] = replace(cmp.causes[-1], hint=OTHER_TENSORS_HINT)
    cmp.regrouped = True
    return True


def _moved(cmp: Comparison, lc: list[Collective], rc: list[Collective]) -> list[tuple[int, int]]:
    """(A's position, B's) of each collective the matching pairs with one of the same signature,
    where B runs two of them in the other order. The order is the data flow's (torch_xla chains
    each collective to the one issued before it), not the printed one: collectives that do not
    depend on each other have no order in an unscheduled module, and printing them the other way
    round is the same program. Empty where B keeps A's order."""
    rpos = {c.name: j for j, c in enumerate(rc)}
    pairs = [
        (i, rpos[b])
        for i, c in enumerate(lc)
        if (b := cmp.pair_left.get(c.name)) in rpos and rc[rpos[b]].signature == c.signature
    ]
    before_l = _collectives_before(cmp.left, [c.name for c in lc])
    before_r = _collectives_before(cmp.right, [c.name for c in rc])
    moved: set[tuple[int, int]] = set()
    for a, (i1, j1) in enumerate(pairs):
        for i2, j2 in pairs[a + 1 :]:
            # i1 before i2 in A's data flow, and j2 before j1 in B's (or the other way round).
            if (before_l[i2] >> i1 & 1 and before_r[j1] >> j2 & 1) or (
                before_l[i1] >> i2 & 1 and before_r[j2] >> j1 & 1
            ):
                moved.update(((i1, j1), (i2, j2)))
    return sorted(moved)


def _collectives_before(comp: CanonicalComputation, names: list[str]) -> list[int]:
    """For each of `names` (collectives), those of them it depends on in `comp`'s data flow, as a
    bit set over their positions (0 for a collective of another computation)."""
    bit = {n: 1 << k for k, n in enumerate(names)}
    operands = comp.operands
    upstream: dict[str, int] = {}  # an instruction's collective ancestors, itself left out
    for root in names:
        stack = [(root, False)]
        while stack:
            name, ready = stack.pop()
            if name in upstream:
                continue
            reads = operands.get(name, ())
            if ready:
                found = 0
                for o in reads:
                    found |= upstream.get(o, 0) | bit.get(o, 0)
                upstream[name] = found
            else:
                stack.append((name, True))
                stack.extend((o, False) for o in reads if o not in upstream)
    return [upstream.get(n, 0) if n in operands else 0 for n in names]


_TUPLES = frozenset({"get-tuple-element", "tuple", "opt-barrier"})


def _carries(comp: CanonicalComputation, name: str, pair: CanonicalComputation | None, other: str) -> bool:
    """`name` only carries a collective's results to their readers: tuple plumbing (FSDP bundles
    reduced gradients into `opt-barrier`s), or an op that reads such plumbing and is paired with
    one of its own opcode and shape (the same update, reading another tuple position)."""
    ins = comp.instruction(name)
    if ins.opcode in _TUPLES:
        return True
    if pair is None or other not in pair.computation.by_name:
        return False
    twin = pair.instruction(other)
    reads = (comp.instruction(o).opcode for o in comp.operands.get(name, ()))
    return twin.opcode == ins.opcode and twin.shape == ins.shape and "get-tuple-element" in reads


def _fold_into_order(cmp: Comparison) -> None:
    """Collectives issued in another order hand their results over in other tuple positions: the
    index changes and rewired readers that follow are that cause's, not causes of their own."""
    order = next((c for c in cmp.causes if c.kind is CauseKind.COLLECTIVE and c.hint == ORDER_HINT), None)
    if order is None:
        return
    pl, pr = cmp.pair_left, cmp.pair_right

    def follows(c: Cause) -> bool:
        if c.kind is CauseKind.ATTRIBUTE:
            return (
                bool(c.changes)
                and all(ch.what == "index" for ch in c.changes)
                and all(cmp.left.instruction(ch.left).opcode == "get-tuple-element" for ch in c.changes)
            )
        return (
            c.kind is CauseKind.STRUCTURE
            and all(_carries(cmp.left, n, cmp.right, pl.get(n, "")) for n in c.left)
            and all(_carries(cmp.right, n, cmp.left, pr.get(n, "")) for n in c.right)
        )

    folded = [c for c in cmp.causes if c is not order and follows(c)]
    if not folded:
        return
    cmp.causes = [c for c in cmp.causes if c is order or not any(c is f for f in folded)]
    lefts, rights = [n for c in folded for n in c.left], [n for c in folded for n in c.right]
    cmp.absorb_into(CauseKind.COLLECTIVE, lefts, rights)


def _reordered(cmp: Comparison, lc: list[Collective], rc: list[Collective]) -> bool:
    """The same collectives, issued in another order: torch_xla chains collectives in the order
    they are issued (a token from each to the next), so hooks that fire in another order (FSDP's
    reduce-scatter buckets flushed as sub-modules finish their backward) make another program
    even where every collective is the same. One cause, like a regrouping."""
    moved = _moved(cmp, lc, rc)
    if not moved:
        return False
    shown = [f"A's {lc[i].kind} {i + 1} is B's {j + 1}" for i, j in moved]
    summary = (
        f"collectives issued in another order: the same {describe(lc)}, "
        f"{len(moved)} of {len(lc)} in another place ({fmt_list(shown, 3)})"
    )
    cmp.cause(CauseKind.COLLECTIVE, summary, [lc[i].name for i, _ in moved], [rc[j].name for _, j in moved])
    cmp.causes[-1] = replace(cmp.causes[-1], hint=ORDER_HINT)
    cmp.regrouped = True
    return True


def _dtype(cmp: Comparison) -> None:
    changes = cmp.pending_dtype
    if not changes:
        return
    kinds = sorted({f"{c.old.split('[')[0]} -> {c.new.split('[')[0]}" for c in changes})
    inputs = sum(1 for c in changes if c.left in cmp.left.param_number)
    examples = fmt_list([f"{c.old} -> {c.new}" for c in changes], 3)
    cmp.cause_of(
        CauseKind.DTYPE,
        f"element type changed ({', '.join(kinds)}) on {inputs} input(s) and "
        f"{len(changes) - inputs} output(s), e.g. {examples}",
        changes,
        count=len(changes),
    )


def _forwarded_root(cmp: Comparison) -> None:
    """A root tuple's own attributes (the outputs' shardings JAX's `out_shardings` print
    there): forwarding leaves it out of every instruction compared above."""
    la, ra = cmp.left.computation.root, cmp.right.computation.root
    if la.name in cmp.left.keys or ra.name in cmp.right.keys:
        return
    old, new = plumbing_attributes(la), plumbing_attributes(ra)
    if old == new:
        return
    a, b = (dict(p.split("=", 1) for p in t.split(";") if p) for t in (old, new))
    # Compared canonically, said as each module wrote it (canonical/written.py).
    lm, rm = cmp.lm.module, cmp.rm.module
    wa, wb = (
        dict(p.split("=", 1) for p in plumbing_attributes(as_written(m, r)).split(";") if p)
        for m, r in ((lm, la), (rm, ra))
    )
    changes = tuple(
        Change(la.name, ra.name, k, *changed_texts(lm, wa.get(k, ""), rm, wb.get(k, "")))
        for k in sorted(a.keys() | b.keys())
        if a.get(k) != b.get(k)
    )
    what = ", ".join(ch.what for ch in changes)
    shown = fmt_list([f"{c.old or '(none)'} -> {c.new or '(none)'}" for c in changes], 2)
    cmp.cause(
        CauseKind.ATTRIBUTE,
        f"the root tuple's {what} changed ({shown})",
        [la.name],
        [ra.name],
        changes=changes,
    )


def _same_world(lm: CanonicalModule, rm: CanonicalModule) -> bool:
    """Both headers state the same replica and partition counts: implicit groups (`{}`, every
    device) are the same devices in both."""
    counts = [
        tuple(m.module.header_attribute(k) for k in ("replica_count", "num_partitions")) for m in (lm, rm)
    ]
    return counts[0] == counts[1] and any(counts[0])


def _follow_inputs(
    lc: list[Collective], rc: list[Collective], dims: set[tuple[str, str]], same_world: bool = False
) -> bool:
    """The same collectives over the same explicit replica groups, whose operands differ only as
    the inputs' dimensions did: the same devices reduce tensors of another length. Implicit
    groups (`{}`, every device) could hide another world size, so they qualify only where both
    headers state the same device counts (`same_world`)."""
    return (
        bool(dims)
        and len(lc) == len(rc)
        and all(
            a.kind == b.kind
            and a.groups == b.groups
            and (same_world or a.groups not in ("", "{}"))
            and a.dimensions == b.dimensions
            and len(a.operands) == len(b.operands)
            and all(
                x == y or explained_by_dims(x, y, dims) for x, y in zip(a.operands, b.operands, strict=True)
            )
            for a, b in zip(lc, rc, strict=True)
        )
    )


def compare_computation(
    lcanon: CanonicalModule,
    rcanon: CanonicalModule,
    left: CanonicalComputation,
    right: CanonicalComputation,
    matching: Matching,
    is_entry: bool,
    dims: set[tuple[str, str]] | None = None,
    regrouped: bool = False,
    noops: list[tuple[Cause, str]] | None = None,
) -> tuple[list[Cause], Decided]:
    """Raw differences for one pair of matched computations, and what the views show of it
    (`Decided`: its pairs and the paired instructions that changed).

    `dims` are the (old, new) input dimensions that changed, found in the entry: shapes in
    called computations that follow them are not causes of their own. `regrouped` says the
    module's collectives were found regrouped (by the entry's run), so collective instructions
    in called computations belong to that cause. Regions of identity converts only
    (`noop_converts`) go to `noops` instead: the caller makes them a cause only where nothing
    else differs.
    """
    cmp = Comparison(lcanon, rcanon, left, right, matching, is_entry)
    causes = _run(cmp, dims or set(), regrouped)
    if noops is not None:
        noops += cmp.noops
    else:
        causes += [c for c, _ in cmp.noops]
    return causes, Decided(cmp.pair_left, cmp.pair_right, *cmp.changed)


def input_dim_changes(causes: Iterable[Cause]) -> set[tuple[str, str]]:
    """The (old, new) dimensions of every input whose shape changed."""
    dims: set[tuple[str, str]] = set()
    for c in causes:
        if c.kind is CauseKind.PARAMETER_SHAPE:
            for change in c.changes:
                dims |= dim_changes(change.old, change.new)
    return dims
