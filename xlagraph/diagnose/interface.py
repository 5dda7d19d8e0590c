"""The graph's interface: inputs and outputs compared once paired.

Inputs are paired from evidence (`pairing`); the extra ones are `parameter_added` /
`parameter_removed` with their positions, and a pair whose shape differs only in element type is
a `dtype` change.

Outputs are paired by their data-flow context (`xlagraph.match.correspondence`), then by the
matching, then left-over slots in order by shape (the same
tensor computed another way), then by dimensions with another element type (`dtype`).
"""

from __future__ import annotations

from collections.abc import Mapping
from math import prod
from typing import TYPE_CHECKING

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import CauseKind, Change, Moved
from xlagraph.diagnose.collectives import collectives
from xlagraph.diagnose.common import (
    dim_changes,
    dim_sizes,
    dims_of,
    element_type,
    fmt_list,
    order_changed,
    shape_of,
    whole_factors,
)
from xlagraph.diagnose.donation import compare_donation
from xlagraph.diagnose.pairing import pair_parameters, plausible
from xlagraph.match.correspondence import correspond

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison

__all__ = ["compare_outputs", "compare_parameters"]


# A tensor that changed element type stays a float (autocast, .half(), float64 numpy data): a
# float output and a bool output of the same dimensions are two different tensors.
_FLOATS = frozenset({"f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2"})


def _layout_differs(a: str, b: str) -> bool:
    """Both printed with a layout, and the layouts differ (a dump printed without layouts says
    nothing about them)."""
    a, b = a.replace(" ", ""), b.replace(" ", "")
    return "{" in a and "{" in b and not a.startswith("(") and a != b


def compare_parameters(cmp: Comparison) -> set[tuple[str, str]]:
    """Causes for inputs: shape, dtype, layout, permutation, added, removed. Returns the
    (old, new) dimensions that changed, which later steps fold into the shape cause."""
    left, right = cmp.left, cmp.right
    pairs, permuted = pair_parameters(cmp)
    # A scalar and a tensor of many elements are never one input that changed shape (a learning
    # rate passed as data vs a weight matrix paired by position): one was removed, one added.
    pairs = [(a, b) for a, b in pairs if not _scalar_vs_tensor(shape_of(left, a), shape_of(right, b))]
    pairs = _unswapped(left, right, pairs) + _retyped(left, right, pairs)
    cmp.param_pairs = dict(pairs)
    lnum, rnum = left.param_number, right.param_number
    shape_changes: list[Change] = []
    dtype_changes: list[Change] = []
    layout_changes: list[Change] = []
    for a, b in pairs:
        sa, sb = shape_of(left, a), shape_of(right, b)
        if sa == sb:
            la, lb = left.instruction(a).shape, right.instruction(b).shape
            if _layout_differs(la, lb):
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
        cmp.cause(
            CauseKind.PARAMETER_SHAPE,
            f"{len(shape_changes)} graph input{'s' if len(shape_changes) > 1 else ''} changed shape: "
            f"{fmt_list(listed)}",
            [c.left for c in shape_changes],
            [c.right for c in shape_changes],
            changes=tuple(shape_changes),
        )
    if dtype_changes:
        cmp.pending_dtype += dtype_changes
    if layout_changes:
        listed = [f"input {lnum[c.left]} {c.old} -> {c.new}" for c in layout_changes]
        cmp.cause(
            CauseKind.LAYOUT,
            f"{len(layout_changes)} input(s) have the same shape in another layout or memory space: "
            f"{fmt_list(listed, 3)}",
            [c.left for c in layout_changes],
            [c.right for c in layout_changes],
            changes=tuple(layout_changes),
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
        moved = sorted(Moved(lnum[a], rnum[b], shape_of(right, b), a, b, "input") for a, b in pairs)
        _permutation(
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
    changed = [(a, b) for a, b in pairs if shape_of(left, a) != shape_of(right, b)]
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
    if len(types[0]) != 1 or len(types[1] - types[0]) != 1 or not (types[0] | types[1]) <= _FLOATS:
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


def _permutation(
    cmp: Comparison, kind: CauseKind, moved: list[Moved], what: str, item: str, why: str
) -> None:
    """One permutation cause: how many of the matched inputs or outputs moved, a few examples, and
    the whole mapping."""
    changed = tuple(mv for mv in moved if mv.left != mv.right)
    cmp.cause(
        kind,
        f"{what} ({len(changed)} of {len(moved)} moved, e.g. "
        + fmt_list([f"A's {item}{mv.left} is B's {mv.right}" for mv in changed], 3)
        + f"): {why}",
        [mv.left_name for mv in changed],
        [mv.right_name for mv in changed],
        mapping=tuple(moved),
    )


def compare_outputs(cmp: Comparison) -> None:
    left, right, m = cmp.left, cmp.right, cmp.m
    right_positions: dict[str, list[int]] = {}
    for j, b in enumerate(right.outputs):
        right_positions.setdefault(b, []).append(j)
    # Outputs first by their data-flow context, which neither a slot nor a changed constant or
    # size decides; the rest by the matching.
    corr = correspond(left, right)
    pairs = [
        (i, j)
        for i, j in sorted(corr.outputs.items())
        if i not in corr.tied
        and _one_tensor(shape_of(left, left.outputs[i]), shape_of(right, right.outputs[j]))
    ]
    used = {j for _, j in pairs}
    known = {i for i, _ in pairs}
    removed: list[int] = []
    unclaimed = _unclaimed_by_line(right, m.right)
    # The matching as the cones of outputs added or removed read it (re-paired by line below).
    claimed_l, claimed_r, repaired = m.left, m.right, False
    for i, a in enumerate(left.outputs):
        if i in known:
            continue
        if i in corr.dropped:  # its removal is what made the graphs alike: no counterpart
            removed.append(i)
            continue
        b = m.left.get(a)
        js = [j for j in right_positions.get(b, []) if j not in used and j not in corr.born] if b else []
        chosen = corr.outputs.get(i)
        if (
            chosen is not None
            and chosen not in used
            and (not js or (i in corr.tied and _alike(right, js[0], chosen)))
        ):
            # Look-alikes that compute the same value keep their order (the matching would pair
            # two zero buffers across, a move nothing shows); the context's choice also where
            # the matching has none.
            js, b = [chosen], None
        if js and b and (other := _same_line(left, right, a, b, unclaimed, used)) is not None:
            js = [other]
            if not repaired:
                claimed_l, claimed_r, repaired = m.left.copy(), m.right.copy(), True
            for lp, rp in ((cmp.pair_left, cmp.pair_right), (claimed_l, claimed_r)):
                _repair(cmp, lp, rp, a, b, right.outputs[other])
        if not js:
            removed.append(i)
            continue
        used.add(js[0])
        pairs.append((i, js[0]))
    added = [j for j in range(len(right.outputs)) if j not in used]
    matched = list(pairs)  # order is judged on matched outputs only: slots pair in order anyway
    # Outputs whose removal made the graphs alike have no counterpart: no slot pairs them.
    gone = ([j for j in added if j in corr.born], [i for i in removed if i in corr.dropped])
    added = [j for j in added if j not in corr.born]
    removed = [i for i in removed if i not in corr.dropped]
    same = _same_slots(left, right, added, removed)
    pairs += same
    slot_pairs, added, removed = _pair_slots(left, right, added, removed, same_type=True)
    pairs += slot_pairs
    typed, added, removed = _pair_slots(left, right, added, removed, same_type=False)
    pairs += typed
    # A slot whose tensor was resharded (a gradient of a weight split over twice the devices):
    # the same output in another shard shape, its producers' difference said inside.
    # Only a graph split over devices has shards (without collectives or shardings, two
    # tensors whose sizes divide are two tensors: a dropped f32[16,8] and a new f32[4,4]).
    if added and removed and _parallel(cmp):
        pairs += _pair_resharded(left, right, added, removed)
    added, removed = sorted(added + gone[0]), sorted(removed + gone[1])
    # Slots paired across element types by the matcher or by position change type as well.
    retyped = [
        (i, j)
        for i, j in matched + same
        if element_type(sa := shape_of(left, left.outputs[i]))
        != element_type(sb := shape_of(right, right.outputs[j]))
        and dims_of(sa) == dims_of(sb)
        and {element_type(sa), element_type(sb)} <= _FLOATS
    ]
    for i, j in retyped + typed:
        a, b = left.outputs[i], right.outputs[j]
        cmp.pending_dtype.append(Change(a, b, "dtype", shape_of(left, a), shape_of(right, b)))
    compare_donation(cmp, pairs)
    layout = [
        Change(left.outputs[i], right.outputs[j], "layout", la, lb)
        for i, j in pairs
        if _layout_differs(
            la := left.instruction(left.outputs[i]).shape, lb := right.instruction(right.outputs[j]).shape
        )
        and shape_of(left, left.outputs[i]) == shape_of(right, right.outputs[j])
    ]
    if layout:
        cmp.cause(
            CauseKind.LAYOUT,
            f"{len(layout)} output(s) have the same shape in another layout or memory space: "
            + fmt_list([f"{c.old} -> {c.new}" for c in layout], 3),
            [c.left for c in layout],
            [c.right for c in layout],
            changes=tuple(layout),
        )
    if added:
        heads = [right.outputs[j] for j in added]
        cone = [h for h in heads if h in claimed_r] + cmp.cone(right, heads, claimed_r)
        shapes = [shape_of(right, right.outputs[j]) for j in added]
        cmp.cause(
            CauseKind.OUTPUT_ADDED,
            f"B returns {len(added)} more tensor{'s' if len(added) > 1 else ''} than A "
            f"({fmt_list([f'output {j}: {s}' for j, s in zip(added, shapes, strict=True)])})",
            (),
            cone,
            changes=tuple(
                Change("", right.outputs[j], "output", "", f"{j}: {s}")
                for j, s in zip(added, shapes, strict=True)
            ),
        )
    if removed:
        heads = [left.outputs[i] for i in removed]
        cone = [h for h in heads if h in claimed_l] + cmp.cone(left, heads, claimed_l)
        shapes = [shape_of(left, left.outputs[i]) for i in removed]
        cmp.cause(
            CauseKind.OUTPUT_REMOVED,
            f"B returns {len(removed)} tensor{'s' if len(removed) > 1 else ''} fewer than A "
            f"({fmt_list([f'output {i}: {s}' for i, s in zip(removed, shapes, strict=True)])})",
            cone,
            (),
            changes=tuple(
                Change(left.outputs[i], "", "output", f"{i}: {s}", "")
                for i, s in zip(removed, shapes, strict=True)
            ),
        )
    if order_changed(matched):
        moved = sorted(
            Moved(i, j, shape_of(right, right.outputs[j]), left.outputs[i], right.outputs[j], "output")
            for i, j in matched
        )
        _permutation(
            cmp,
            CauseKind.OUTPUT_PERMUTATION,
            moved,
            "the same outputs come out in another order",
            "output ",
            "the live tensors were created in another order",
        )


def _alike(comp: CanonicalComputation, j: int, k: int) -> bool:
    """Output slots `j` and `k` compute the same value (structural hash, parameters included)."""
    return comp.h1.get(comp.outputs[j]) == comp.h1.get(comp.outputs[k])


def _location(comp: CanonicalComputation, name: str) -> str:
    md = comp.instruction(name).metadata
    return md.location if md else ""


def _unclaimed_by_line(
    right: CanonicalComputation, claimed: Mapping[str, str]
) -> dict[tuple[str, str], list[int]]:
    """B's output slots the matching pairs with nothing, by (shape, source line)."""
    out: dict[tuple[str, str], list[int]] = {}
    for j, b in enumerate(right.outputs):
        if b not in claimed and (loc := _location(right, b)):
            out.setdefault((shape_of(right, b), loc), []).append(j)
    return out


def _same_line(
    left: CanonicalComputation,
    right: CanonicalComputation,
    a: str,
    b: str,
    unclaimed: dict[tuple[str, str], list[int]],
    used: set[int],
) -> int | None:
    """The slot of B's one output that the matching leaves unpaired and that has `a`'s shape and
    source line, where the matching pairs `a` with an output made at another line: the update
    of a weight and of its momentum buffer look alike once the buffer is read as an input (on
    the first step it is the gradient itself), and the line tells which one `a` is."""
    la, lb = _location(left, a), _location(right, b)
    if not (la and lb and la != lb):
        return None
    free = [j for j in unclaimed.get((shape_of(left, a), la), ()) if j not in used]
    return free[0] if len(free) == 1 else None


def _repair(cmp: Comparison, lp: dict[str, str], rp: dict[str, str], a: str, old: str, new: str) -> None:
    """`a` is `new`, not `old`, in the matching `lp`/`rp`, and so are their operands
    that are the same ops, down to what is paired already or to the inputs: the region the other
    tensor differs in is then said where it is."""
    if lp.get(a) != old:
        return
    left, right = cmp.left, cmp.right
    stack = [(a, new)]
    while stack:
        x, y = stack.pop()
        if x in left.param_number or y in right.param_number or lp.get(x) == y:
            continue
        if (y0 := lp.pop(x, None)) is not None:
            rp.pop(y0, None)
        if (x0 := rp.pop(y, None)) is not None:
            lp.pop(x0, None)
        lp[x], rp[y] = y, x
        ox, oy = left.operands.get(x, ()), right.operands.get(y, ())
        if len(ox) != len(oy):
            continue
        for u, v in zip(ox, oy, strict=True):
            if left.keys.get(u) == right.keys.get(v):  # the same op on the same kind of operands
                stack.append((u, v))


def _parallel(cmp: Comparison) -> bool:
    """Either graph runs collectives or carries sharding annotations."""
    if collectives(cmp.lm) or collectives(cmp.rm):
        return True
    return any(
        i.attribute("sharding") is not None
        for comp in (cmp.left, cmp.right)
        for i in comp.computation.instructions
        if i.attributes
    )


def _one_tensor(a: str, b: str) -> bool:
    """Shapes one output can take on two steps: the same, another size along a dimension or
    by whole factors (a batch, a shard), or the same dimensions in another float type."""
    if dims_of(a) == dims_of(b):
        return a == b or {element_type(a), element_type(b)} <= _FLOATS
    return plausible(a, b) or _resharded(a, b)


def _resharded(a: str, b: str) -> bool:
    """Another shard shape of one tensor: same element type, other dimensions by whole factors."""
    return element_type(a) == element_type(b) and dims_of(a) != dims_of(b) and whole_factors(a, b)


def _scalar_vs_tensor(sa: str, sb: str) -> bool:
    da, db = dim_sizes(sa), dim_sizes(sb)
    if da is None or db is None:
        return False
    return (not da and prod(db) > 1) or (not db and prod(da) > 1)


def _same_slots(
    left: CanonicalComputation, right: CanonicalComputation, added: list[int], removed: list[int]
) -> list[tuple[int, int]]:
    """With as many outputs on both sides, a left-over slot `i` on both sides is one output when
    its shape is the same, resharded by whole factors or retyped (a partitioned program returns
    each gradient all-reduced where the other returns the dot itself); pairs are taken out of
    `added` and `removed` in place."""
    if len(left.outputs) != len(right.outputs):
        return []
    pairs = []
    for i in [i for i in removed if i in added]:
        sa, sb = shape_of(left, left.outputs[i]), shape_of(right, right.outputs[i])
        if (
            sa == sb
            or _resharded(sa, sb)
            or (dims_of(sa) == dims_of(sb) and {element_type(sa), element_type(sb)} <= _FLOATS)
        ):
            pairs.append((i, i))
            removed.remove(i)
            added.remove(i)
    return pairs


def _pair_resharded(
    left: CanonicalComputation, right: CanonicalComputation, added: list[int], removed: list[int]
) -> list[tuple[int, int]]:
    """Left-over slots, in order, whose shapes differ by whole factors; pairs are taken out of
    `added` and `removed` in place."""
    pairs: list[tuple[int, int]] = []
    start = 0
    for i in list(removed):
        sa = shape_of(left, left.outputs[i])
        k = next(
            (k for k in range(start, len(added)) if _resharded(sa, shape_of(right, right.outputs[added[k]]))),
            None,
        )
        if k is not None:
            pairs.append((i, added[k]))
            removed.remove(i)
            del added[k]
            start = k
    return pairs


def _pair_slots(
    left: CanonicalComputation,
    right: CanonicalComputation,
    added: list[int],
    removed: list[int],
    same_type: bool,
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Output slots left over on both sides, of equal shape and in order, are one output computed
    another way (a momentum buffer is `grad` on the first step, `buf * m + grad` after), not one
    tensor added and another removed; with `same_type=False`, equal dimensions in another element
    type (a dtype change)."""
    still_added = list(added)
    still_removed: list[int] = []
    pairs: list[tuple[int, int]] = []
    start = 0
    for i in removed:
        shape = shape_of(left, left.outputs[i])
        key = shape if same_type else dims_of(shape)
        k = next(
            (
                k
                for k in range(start, len(still_added))
                if (s := shape_of(right, right.outputs[still_added[k]])) == key
                or (
                    not same_type
                    and dims_of(s) == key
                    and element_type(s) != element_type(shape)
                    and {element_type(s), element_type(shape)} <= _FLOATS
                )
            ),
            None,
        )
        if k is None:
            still_removed.append(i)
        else:
            pairs.append((i, still_added[k]))
            del still_added[k]
            start = k
    if same_type:  # out of order, a shape left once on each side is still that one slot
        shapes_l = [shape_of(left, left.outputs[i]) for i in still_removed]
        shapes_r = [shape_of(right, right.outputs[j]) for j in still_added]
        lone = [
            (i, still_added[shapes_r.index(sh)])
            for i, sh in zip(still_removed, shapes_l, strict=True)
            if shapes_l.count(sh) == 1 and shapes_r.count(sh) == 1
        ]
        pairs += lone
        still_removed = [i for i in still_removed if i not in {a for a, _ in lone}]
        still_added = [j for j in still_added if j not in {b for _, b in lone}]
    return pairs, still_added, still_removed
