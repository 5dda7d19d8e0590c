"""The graph's interface: inputs and outputs paired from evidence, not from shapes alone.

Inputs: a pair of parameters counts as evidence only when a matched user reads both at the
same operand position (or the matcher paired them inside an identical subgraph). Evidence pairs
that cross each other are a permutation; everything else keeps its position: between two
evidence pairs, the inputs left over are aligned in order (equal shapes first, then by
position), so inputs that are only shifted by an inserted one are not "moved", and the extra
ones are `parameter_added` / `parameter_removed`. A pair whose shape differs only in element
type is a `dtype` change.

Outputs are slots: paired by the matching, then left-over slots in order by shape (the same
tensor computed another way), then by dimensions with another element type (`dtype`).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import CauseKind, Change, Moved
from xlagraph.diagnose.common import (
    dim_changes,
    dims_of,
    element_type,
    fmt_list,
    order_changed,
    shape_of,
)

if TYPE_CHECKING:
    from xlagraph.diagnose.compare import Comparison

__all__ = ["compare_outputs", "compare_parameters"]

# Matchers that pair whole identical subgraphs: interchangeable inputs may be paired either way.
_IDENTITY = frozenset({"exact", "exact-shape"})
# Matchers that pair parameters without looking at what reads them.
_BLIND = frozenset({"parameters", "outputs", "top-down-lenient"})


def _supported(cmp: Comparison, a: str, b: str) -> bool:
    """A matched user reads `a` and `b` at the same operand position."""
    left, right, m = cmp.left, cmp.right, cmp.m
    if m.matcher.get(a) in _BLIND:
        return False
    for u in cmp.users(left).get(a, ()):
        v = m.left.get(u)
        if v is None or m.matcher.get(u) in _BLIND:
            continue
        ou, ov = left.operands[u], right.operands[v]
        if any(x == a and k < len(ov) and ov[k] == b for k, x in enumerate(ou)):
            return True
        if b in ov and left.instruction(u).opcode in _COMMUTATIVE:
            return True
    return False


_COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})


def _distinguishable(cmp: Comparison, comp: CanonicalComputation) -> set[str]:
    """Parameters that nothing else on their side resembles: same shape and users computing the
    same thing (structurally, `h0`) make inputs interchangeable, e.g. the Q, K and V weights of
    one layer or the seeds of two dropouts. Paired as parts of identical subgraphs, such inputs
    may be paired either way, so that is no evidence of a permutation; their positions stand."""
    users = cmp.users(comp)
    sig = {
        p: (shape_of(comp, p), tuple(sorted(comp.h0.get(u, comp.keys.get(u, 0)) for u in users.get(p, ()))))
        for p in comp.param_number
    }
    seen: dict[tuple[str, tuple[int, ...]], int] = {}
    for v in sig.values():
        seen[v] = seen.get(v, 0) + 1
    return {p for p, v in sig.items() if seen[v] == 1}


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The largest subset of (left, right) pairs in which both sides increase (patience sort)."""
    pairs = sorted(pairs)
    best: list[list[tuple[int, int]]] = []
    for p in pairs:
        k = next((i for i, chain in enumerate(best) if chain[-1][1] >= p[1]), len(best))
        chain = ([*best[k - 1]] if k else []) + [p]
        if k == len(best):
            best.append(chain)
        else:
            best[k] = chain
    return best[-1] if best else []


def _align_gap(lefts: list[tuple[int, str]], rights: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """Pairs of positions between two anchors: same shape in order first (an LCS), then what is
    left between those, by position when the counts agree."""
    n, k = len(lefts), len(rights)
    if n == k:
        return [(a, b) for (a, _), (b, _) in zip(lefts, rights, strict=True)]
    table = [[0] * (k + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(k - 1, -1, -1):
            if lefts[i][1] == rights[j][1]:
                table[i][j] = 1 + table[i + 1][j + 1]
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    same: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < k:
        if lefts[i][1] == rights[j][1]:
            same.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    out = [(lefts[i][0], rights[j][0]) for i, j in same]
    bounds = [(-1, -1), *same, (n, k)]
    for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
        sub_l, sub_r = lefts[i0 + 1 : i1], rights[j0 + 1 : j1]
        if len(sub_l) == len(sub_r):
            out += [(a, b) for (a, _), (b, _) in zip(sub_l, sub_r, strict=True)]
        else:  # same element type and rank: a resized input, else added / removed
            for a, sa in sub_l:
                hit = next((b for b, sb in sub_r if _similar(sa, sb) and b not in {y for _, y in out}), None)
                if hit is not None:
                    out.append((a, hit))
    return out


def _layout_differs(a: str, b: str) -> bool:
    """Both printed with a layout, and the layouts differ (a dump printed without layouts says
    nothing about them)."""
    a, b = a.replace(" ", ""), b.replace(" ", "")
    return "{" in a and "{" in b and not a.startswith("(") and a != b


def _similar(a: str, b: str) -> bool:
    return element_type(a) == element_type(b) and dims_of(a).count(",") == dims_of(b).count(",")


def pair_parameters(cmp: Comparison) -> tuple[list[tuple[str, str]], bool]:
    """(pairs of parameter names, whether the evidence shows a permutation)."""
    left, right, m = cmp.left, cmp.right, cmp.m
    lnum, rnum = left.param_number, right.param_number
    lname = {n: p for p, n in lnum.items()}
    rname = {n: p for p, n in rnum.items()}
    lone_l, lone_r = _distinguishable(cmp, left), _distinguishable(cmp, right)
    evidence = [
        (lnum[a], rnum[b])
        for a, b in ((a, m.left.get(a)) for a in lnum)
        if b in rnum
        and (m.matcher.get(a) not in _IDENTITY or (a in lone_l and b in lone_r))
        and _supported(cmp, a, b)
    ]
    anchors = _longest_increasing(evidence)
    permuted = len(anchors) < len(evidence)
    chosen = list(anchors) if not permuted else list(evidence)
    if not permuted:
        bounds = [(-1, -1), *sorted(anchors), (max(lname, default=-1) + 1, max(rname, default=-1) + 1)]
        for (l0, r0), (l1, r1) in itertools.pairwise(bounds):
            gl = [(n, shape_of(left, lname[n])) for n in range(l0 + 1, l1) if n in lname]
            gr = [(n, shape_of(right, rname[n])) for n in range(r0 + 1, r1) if n in rname]
            chosen += _align_gap(gl, gr)
    else:  # a real permutation: the rest by the matching, else left out
        used_l = {a for a, _ in chosen}
        used_r = {b for _, b in chosen}
        for a, b in m.left.items():
            if a in lnum and b in rnum and lnum[a] not in used_l and rnum[b] not in used_r:
                chosen.append((lnum[a], rnum[b]))
                used_l.add(lnum[a])
                used_r.add(rnum[b])
    return sorted((lname[a], rname[b]) for a, b in chosen), permuted


def compare_parameters(cmp: Comparison) -> set[tuple[str, str]]:
    """Causes for inputs: shape, dtype, layout, permutation, added, removed. Returns the
    (old, new) dimensions that changed, which later steps fold into the shape cause."""
    left, right = cmp.left, cmp.right
    pairs, permuted = pair_parameters(cmp)
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
        moved = [Moved(lnum[a], rnum[b], shape_of(right, b), a, b) for a, b in pairs]
        moved.sort()
        changed = tuple(mv for mv in moved if mv.left != mv.right)
        cmp.cause(
            CauseKind.PARAMETER_PERMUTATION,
            f"the same inputs arrive in another order ({len(changed)} of {len(moved)} moved, e.g. "
            + fmt_list([f"A's {mv.left} is B's {mv.right}" for mv in changed], 3)
            + "): tensors were created or updated in another order",
            [mv.left_name for mv in changed],
            [mv.right_name for mv in changed],
            mapping=tuple(moved),
        )
    return dims


def compare_outputs(cmp: Comparison) -> None:
    left, right, m = cmp.left, cmp.right, cmp.m
    right_positions: dict[str, list[int]] = {}
    for j, b in enumerate(right.outputs):
        right_positions.setdefault(b, []).append(j)
    pairs: list[tuple[int, int]] = []
    used: set[int] = set()
    removed: list[int] = []
    for i, a in enumerate(left.outputs):
        b = m.left.get(a)
        js = [j for j in right_positions.get(b, []) if j not in used] if b else []
        if not js:
            removed.append(i)
            continue
        used.add(js[0])
        pairs.append((i, js[0]))
    added = [j for j in range(len(right.outputs)) if j not in used]
    matched = list(pairs)  # order is judged on matched outputs only: slots pair in order anyway
    slot_pairs, added, removed = _pair_slots(left, right, added, removed, same_type=True)
    pairs += slot_pairs
    typed, added, removed = _pair_slots(left, right, added, removed, same_type=False)
    pairs += typed
    for i, j in typed:
        a, b = left.outputs[i], right.outputs[j]
        cmp.pending_dtype.append(Change(a, b, "dtype", shape_of(left, a), shape_of(right, b)))
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
        cone = [h for h in heads if h in m.right] + cmp.cone(right, heads, m.right)
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
        cone = [h for h in heads if h in m.left] + cmp.cone(left, heads, m.left)
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
            Moved(i, j, shape_of(right, right.outputs[j]), left.outputs[i], right.outputs[j])
            for i, j in matched
        )
        changed = tuple(mv for mv in moved if mv.left != mv.right)
        cmp.cause(
            CauseKind.OUTPUT_PERMUTATION,
            f"the same outputs come out in another order ({len(changed)} of {len(moved)} moved, e.g. "
            + fmt_list([f"A's output {mv.left} is B's {mv.right}" for mv in changed], 3)
            + "): the live tensors were created in another order",
            [mv.left_name for mv in changed],
            [mv.right_name for mv in changed],
            mapping=tuple(moved),
        )


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
                or (not same_type and dims_of(s) == key and element_type(s) != element_type(shape))
            ),
            None,
        )
        if k is None:
            still_removed.append(i)
        else:
            pairs.append((i, still_added[k]))
            del still_added[k]
            start = k
    return pairs, still_added, still_removed
