"""The graph's inputs compared once paired.

Inputs are paired from evidence (`pairing`); the extra ones are `parameter_added` /
`parameter_removed` with their positions, and a pair whose shape differs only in element type is
a `dtype` change.
"""

from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import INPUT_LAYOUT, CauseKind, Change, Moved
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.numbers import dim_changes
from xlagraph.diagnose.pairing import pair_parameters
from xlagraph.diagnose.permutation import permutation_cause
from xlagraph.diagnose.shapes import FLOAT_TYPES, dim_sizes, dims_of, element_type, layout_differs, shape_of

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison


def compare_parameters(cmp: Comparison) -> set[tuple[str, str]]:
    """Causes for inputs: shape, dtype, layout, permutation, added, removed. Returns the
    (old, new) dimensions that changed, which later steps fold into the shape cause."""
    left, right = cmp.left, cmp.right
    ls, rs = left.compared_shapes, right.compared_shapes
    pairs, permuted = pair_parameters(cmp)
    # A scalar and a tensor of many elements are never one input that changed shape (a learning
    # rate passed as data vs a weight matrix paired by position): one was removed, one added.
    pairs = [(a, b) for a, b in pairs if not _scalar_vs_tensor(ls[a], rs[b])]
    pairs = _unswapped(left, right, pairs) + _retyped(left, right, pairs)
    cmp.param_pairs = dict(pairs)
    lnum, rnum = left.param_number, right.param_number
    shape_changes: list[Change] = []
    dtype_changes: list[Change] = []
    layout_changes: list[Change] = []
    lby, rby = left.computation.by_name, right.computation.by_name
    for a, b in pairs:
        sa, sb = ls[a], rs[b]
        if sa == sb:
            la, lb = lby[a].shape, rby[b].shape
            if la != lb and layout_differs(la, lb):
                layout_changes.append(Change(a, b, "layout", la, lb))
        elif dims_of(sa) == dims_of(sb) and element_type(sa) != element_type(sb):
            dtype_changes.append(Change(a, b, "dtype", sa, sb))
        else:
            shape_changes.append(Change(a, b, "shape", sa, sb))
    dims: set[tuple[str, str]] = set()
    if shape_changes:
        for c in shape_changes:
            dims |= dim_changes(c.old, c.new)
        listed = [f"input {lnum[c.left]} {c.old} -> {c.new}" for c in shape_changes]
        cmp.cause_of(
            CauseKind.PARAMETER_SHAPE,
            f"{len(shape_changes)} graph input{'s' if len(shape_changes) > 1 else ''} changed shape: "
            f"{fmt_list(listed)}",
            shape_changes,
        )
    if dtype_changes:
        cmp.pending_dtype += dtype_changes
    if layout_changes:
        listed = [f"input {lnum[c.left]} {c.old} -> {c.new}" for c in layout_changes]
        cmp.cause_of(
            CauseKind.LAYOUT,
            f"{len(layout_changes)} input(s) have the same shape in another layout or memory space: "
            f"{fmt_list(listed, 3)}",
            layout_changes,
            case=INPUT_LAYOUT,
        )
    paired_l = {a for a, _ in pairs}
    paired_r = {b for _, b in pairs}
    removed = sorted((p for p in lnum if p not in paired_l), key=lnum.__getitem__)
    added = sorted((p for p in rnum if p not in paired_r), key=rnum.__getitem__)
    for kind, names, comp, num, side in (
        (CauseKind.PARAMETER_ADDED, added, right, rnum, "B takes"),
        (CauseKind.PARAMETER_REMOVED, removed, left, lnum, "A took"),
    ):
        if not names:
            continue
        listed = [f"input {num[p]}: {shape_of(comp, p)}" for p in names]
        extra = "more" if kind is CauseKind.PARAMETER_ADDED else "that B does not take"
        cmp.cause(
            kind,
            f"{side} {len(names)} input{'s' if len(names) > 1 else ''} {extra} ({fmt_list(listed)})",
            names if kind is CauseKind.PARAMETER_REMOVED else (),
            names if kind is CauseKind.PARAMETER_ADDED else (),
            changes=tuple(
                Change(
                    p if kind is CauseKind.PARAMETER_REMOVED else "",
                    p if kind is CauseKind.PARAMETER_ADDED else "",
                    "input",
                    f"{num[p]}: {shape_of(comp, p)}" if kind is CauseKind.PARAMETER_REMOVED else "",
                    f"{num[p]}: {shape_of(comp, p)}" if kind is CauseKind.PARAMETER_ADDED else "",
                )
                for p in names
            ),
        )
    if permuted:
        moved = sorted(Moved(lnum[a], rnum[b], rs[b], a, b, "input") for a, b in pairs)
        permutation_cause(
            cmp,
            CauseKind.PARAMETER_PERMUTATION,
            moved,
            "the same inputs arrive in another order",
            "",
            "tensors were created or updated in another order",
        )
    return dims


def _unswapped(
    left: CanonicalComputation, right: CanonicalComputation, pairs: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Pairs that changed shape, re-paired where a partner of the very same shape is among them: two
    weights of a tensor-parallel layer (f32[32,32] and f32[16,32]) crossed by the matcher would
    invent two shape changes that cancel out."""
    ls, rs = left.compared_shapes, right.compared_shapes
    changed = [(a, b) for a, b in pairs if ls[a] != rs[b]]
    # Only a local crossing, where the shapes merely trade places: a resharding changes the set of
    # shapes, and where many inputs change (a pipeline stage holding other blocks) the positions
    # are the better guess.
    if (
        len(changed) < 2
        or 8 * len(changed) > len(pairs)
        or sorted(shape_of(left, a) for a, _ in changed) != sorted(shape_of(right, b) for _, b in changed)
    ):
        return pairs
    free = [b for _, b in changed]
    fixed: dict[str, str] = {}
    for a, _ in changed:
        b = next((b for b in free if shape_of(right, b) == shape_of(left, a)), None)
        if b is not None:
            fixed[a] = b
            free.remove(b)
    return [(a, fixed.get(a, b)) for a, b in pairs]


def _retyped(
    left: CanonicalComputation, right: CanonicalComputation, pairs: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Inputs left unpaired because they changed element type (weights cast to bf16 read by ops
    the matcher no longer pairs): one float type turned into another throughout, the same
    dimensions, paired in input order. Mixed conversions are not guessed at."""
    paired_l, paired_r = {a for a, _ in pairs}, {b for _, b in pairs}
    removed = sorted((p for p in left.param_number if p not in paired_l), key=left.param_number.__getitem__)
    added = sorted((p for p in right.param_number if p not in paired_r), key=right.param_number.__getitem__)
    types = (
        {element_type(shape_of(left, p)) for p in removed},
        {element_type(shape_of(right, p)) for p in added},
    )
    if len(types[0]) != 1 or len(types[1] - types[0]) != 1 or not (types[0] | types[1]) <= FLOAT_TYPES:
        return []
    old, new = next(iter(types[0])), next(iter(types[1] - types[0]))
    out = []
    for dims in dict.fromkeys(dims_of(shape_of(left, p)) for p in removed):
        a_side = [p for p in removed if dims_of(shape_of(left, p)) == dims]
        b_side = [
            p
            for p in added
            if dims_of(shape_of(right, p)) == dims and element_type(shape_of(right, p)) == new
        ]
        out += list(zip(a_side, b_side, strict=False)) if old != new else []
    return out


def _scalar_vs_tensor(sa: str, sb: str) -> bool:
    da, db = dim_sizes(sa), dim_sizes(sb)
    if da is None or db is None:
        return False
    return (not da and prod(db) > 1) or (not db and prod(da) > 1)
