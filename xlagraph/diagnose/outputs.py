"""The graph's outputs compared once paired.

Outputs are paired by their data-flow context (`xlagraph.match.correspondence`), then by the
matching, then left-over slots in order by shape (the same tensor computed another way), then
by dimensions with another element type (`dtype`): `output_slots.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import CauseKind, Change, Moved
from xlagraph.diagnose.collectives import collectives
from xlagraph.diagnose.donation import compare_donation
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.output_slots import crosses, one_tensor, pair_resharded, pair_slots, same_slots
from xlagraph.diagnose.permutation import order_changed, permutation_cause
from xlagraph.diagnose.shapes import FLOAT_TYPES, dim_sizes, dims_of, element_type, layout_differs, shape_of
from xlagraph.match.correspondence import correspond

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison


def compare_outputs(cmp: Comparison) -> None:
    left, right, m = cmp.left, cmp.right, cmp.m
    ls, rs = left.compared_shapes, right.compared_shapes
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
        and one_tensor(ls[left.outputs[i]], rs[right.outputs[j]])
        and not _returned_elsewhere(cmp, i, j, both=False)
    ]
    used = {j for _, j in pairs}
    known = {i for i, _ in pairs}
    removed: list[int] = []
    unclaimed = _unclaimed_by_line(right, m.right)
    # The matching as the cones of outputs added or removed read it (re-paired by line below).
    claimed_l, claimed_r, repaired = m.left, m.right, False
    # Where the context pairs an output the matching pairs with another (look-alike updates of
    # other weights, crossed once an output is dropped), the matching follows the context, and
    # the two it had crossed are paired with each other where they are the same op: the cone of
    # an output dropped is then said where it is.
    for i, j in pairs:
        a, b = left.outputs[i], right.outputs[j]
        old, other = m.left.get(a), m.right.get(b)
        if old == b or other is None:
            continue
        if not repaired:
            claimed_l, claimed_r, repaired = m.left.copy(), m.right.copy(), True
        swap = old is not None and left.keys.get(other) == right.keys.get(old)
        for lp, rp in ((cmp.pair_left, cmp.pair_right), (claimed_l, claimed_r)):
            _repair(cmp, lp, rp, a, lp.get(a), b)  # type: ignore[arg-type]
            if swap and other not in lp and old not in rp:
                _repair(cmp, lp, rp, other, None, old)  # type: ignore[arg-type]
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
        if not js or _returned_elsewhere(cmp, i, js[0], both=False):
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
    # Values both graphs compute, each returned by one only (one head's logits kept on even
    # steps, the other's on odd): two tensors, one dropped and one kept, whatever their slots.
    kept = _kept_elsewhere(cmp, added, removed)
    added, removed = [j for j in added if j not in kept[0]], [i for i in removed if i not in kept[1]]
    same = same_slots(left, right, added, removed)
    # A slot paired across element types is one tensor in another precision only if it is the
    # same computation: an intermediate of A that B returns in place of another output is one
    # output dropped and one added (unless a convert is all that lies between them).
    apart = _other_tensors(cmp, same)
    same = [p for p in same if p not in apart]
    pairs += same
    slot_pairs, added, removed = pair_slots(left, right, added, removed, same_type=True)
    pairs += slot_pairs
    typed, added, removed = pair_slots(left, right, added, removed, same_type=False)
    apart += _other_tensors(cmp, typed)
    # Slots paired by position only: a pair that crosses the pairs made otherwise contradicts
    # the order it was read from (an output dropped and one added moves the rest past them).
    apart += [p for p in typed if p not in apart and crosses(p, pairs)]
    typed = [p for p in typed if p not in apart]
    added, removed = sorted(added + [j for _, j in apart]), sorted(removed + [i for i, _ in apart])
    pairs += typed
    # A slot whose tensor was resharded (a gradient of a weight split over twice the devices):
    # the same output in another shard shape, its producers' difference said inside.
    # Only a graph split over devices has shards (without collectives or shardings, two
    # tensors whose sizes divide are two tensors: a dropped f32[16,8] and a new f32[4,4]).
    if added and removed and _parallel(cmp):
        pairs += pair_resharded(left, right, added, removed)
    added, removed = sorted(added + gone[0] + kept[0]), sorted(removed + gone[1] + kept[1])
    # Slots paired across element types by the matcher or by position change type as well.
    retyped = [
        (i, j)
        for i, j in matched + same
        # Most pairs print the same shape, and so the same element type: compared as text first.
        if (sa := ls[left.outputs[i]]) != (sb := rs[right.outputs[j]])
        and element_type(sa) != element_type(sb)
        and dims_of(sa) == dims_of(sb)
        and {element_type(sa), element_type(sb)} <= FLOAT_TYPES
    ]
    for i, j in retyped + typed:
        a, b = left.outputs[i], right.outputs[j]
        cmp.pending_dtype.append(Change(a, b, "dtype", shape_of(left, a), shape_of(right, b)))
    compare_donation(cmp, pairs)
    lby, rby = left.computation.by_name, right.computation.by_name
    layout = [
        Change(left.outputs[i], right.outputs[j], "layout", la, lb)
        for i, j in pairs
        # Most pairs print the same shape, layout included: compared as text first.
        if (la := lby[left.outputs[i]].shape) != (lb := rby[right.outputs[j]].shape)
        and layout_differs(la, lb)
        and ls[left.outputs[i]] == rs[right.outputs[j]]
    ]
    if layout:
        cmp.cause_of(
            CauseKind.LAYOUT,
            f"{len(layout)} output(s) have the same shape in another layout or memory space: "
            + fmt_list([f"{c.old} -> {c.new}" for c in layout], 3),
            layout,
        )
    # Tensors only one graph returns, by side (as `inputs.compare_parameters` says inputs).
    for kind, slots, comp, claimed, extra in (
        (CauseKind.OUTPUT_ADDED, added, right, claimed_r, "more tensor{} than A"),
        (CauseKind.OUTPUT_REMOVED, removed, left, claimed_l, "tensor{} fewer than A"),
    ):
        if not slots:
            continue
        heads = [comp.outputs[k] for k in slots]
        cone = [h for h in heads if h in claimed] + cmp.cone(comp, heads, claimed)
        entries = [f"{k}: {shape_of(comp, h)}" for k, h in zip(slots, heads, strict=True)]  # slot: shape
        in_b = kind is CauseKind.OUTPUT_ADDED
        cmp.cause(
            kind,
            f"B returns {len(slots)} {extra.format('s' if len(slots) > 1 else '')} "
            f"({fmt_list([f'output {e}' for e in entries])})",
            () if in_b else cone,
            cone if in_b else (),
            changes=tuple(
                Change("", h, "output", "", e) if in_b else Change(h, "", "output", e, "")
                for h, e in zip(heads, entries, strict=True)
            ),
        )
    if order_changed(matched):
        moved = sorted(
            Moved(i, j, shape_of(right, right.outputs[j]), left.outputs[i], right.outputs[j], "output")
            for i, j in matched
        )
        permutation_cause(
            cmp,
            CauseKind.OUTPUT_PERMUTATION,
            moved,
            "the same outputs come out in another order",
            "output ",
            "the live tensors were created in another order",
        )


def _kept_elsewhere(cmp: Comparison, added: list[int], removed: list[int]) -> tuple[list[int], list[int]]:
    """The slots left over on each side whose value the matching finds, as the same computation
    (`h0`: whichever inputs of those shapes it reads), among what the other graph computes and
    does not return; only where both sides have one, else a slot's tensor may have moved into
    another op. Slot and shape pairing must not join them: the matching says each is a value of
    its own that the other graph computes too (whether the two read other inputs, or are the
    same computation in another slot, `recognizers/permutation.py` tells)."""
    left, right, m = cmp.left, cmp.right, cmp.m
    returned = {id(left): set(left.outputs), id(right): set(right.outputs)}

    def inside(
        own: CanonicalComputation, name: str, other: CanonicalComputation, partner: str | None
    ) -> bool:
        if partner is None or partner in returned[id(other)]:
            return False
        h0 = own.h0.get(name)
        return h0 is not None and h0 == other.h0.get(partner)

    gone = [i for i in removed if inside(left, a := left.outputs[i], right, m.left.get(a))]
    new = [j for j in added if inside(right, b := right.outputs[j], left, m.right.get(b))]
    return (new, gone) if gone and new else ([], [])


def _alike(comp: CanonicalComputation, j: int, k: int) -> bool:
    """Output slots `j` and `k` compute the same value (structural hash, parameters included)."""
    return comp.h1.get(comp.outputs[j]) == comp.h1.get(comp.outputs[k])


def _unclaimed_by_line(
    right: CanonicalComputation, claimed: Mapping[str, str]
) -> dict[tuple[str, str], list[int]]:
    """B's output slots the matching pairs with nothing, by (shape, source line)."""
    out: dict[tuple[str, str], list[int]] = {}
    for j, b in enumerate(right.outputs):
        if b not in claimed and (loc := right.instruction(b).location):
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
    la, lb = left.instruction(a).location, right.instruction(b).location
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


def _other_tensors(cmp: Comparison, pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The slot pairs of another element type that are two tensors (`_returned_elsewhere`)."""
    left, right = cmp.left, cmp.right
    return [
        (i, j)
        for i, j in pairs
        if element_type(shape_of(left, left.outputs[i])) != element_type(shape_of(right, right.outputs[j]))
        and _returned_elsewhere(cmp, i, j)
    ]


def _returned_elsewhere(cmp: Comparison, i: int, j: int, both: bool = True) -> bool:
    """Output `j` of B is a value A computes and does not return, and A's output `i` does not
    grow from it as a Python number or a precision switch would make it: B returns a value of its
    own in place of one it dropped, whatever their data-flow context says. With `both`, also the
    other way round (B computes A's output `i` and does not return it), which slot pairs across
    element types need; slot and context pairs of one type keep B's added work at the end of an
    output A returned (an optimizer step after the accumulated gradient) as one output."""
    left, right = cmp.left, cmp.right
    a, b = left.outputs[i], right.outputs[j]
    if left.h0.get(a) == right.h0.get(b):
        return False
    for own, head, other, partner in ((left, a, right, b), (right, b, left, a))[: 2 if both else 1]:
        h = other.h0.get(partner)
        if h is None:
            continue
        name = own.lone_h0(h)
        if name is not None and name not in own.returned and not _grows_from(own, name, head):
            return True
    return False


# Ops a Python scalar or a precision switch adds or removes around a value: a type change (not a
# reshape: no number removes one), or arithmetic with a scalar (a constant or an input, broadcast).
_VIEWS = frozenset({"convert", "bitcast-convert", "copy"})
_SCALAR_ARITHMETIC = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum", "power"})
_SCALAR_SOURCES = frozenset({"constant", "parameter", "iota"})


def _grows_from(comp: CanonicalComputation, source: str, head: str) -> bool:
    """`head` is `source` with only views and scalar arithmetic applied after it."""
    seen = 0
    while head != source and seen < 64:
        seen += 1
        op = comp.instruction(head).opcode
        operands = comp.operands.get(head, ())
        if op in _VIEWS and len(operands) == 1:
            head = operands[0]
            continue
        if op not in _SCALAR_ARITHMETIC or len(operands) != 2:
            return False
        data = [o for o in operands if not _scalar(comp, o)]
        if len(data) != 1:
            return False
        head = data[0]
    return head == source


def _scalar(comp: CanonicalComputation, name: str) -> bool:
    """A scalar constant or input, possibly broadcast or converted."""
    for _ in range(8):
        inst = comp.instruction(name)
        if inst.opcode in _SCALAR_SOURCES:
            return inst.opcode != "parameter" or dim_sizes(inst.shape) in ((), (1,))
        operands = comp.operands.get(name, ())
        if inst.opcode not in ("broadcast", "convert", "reshape") or len(operands) != 1:
            return False
        name = operands[0]
    return False
