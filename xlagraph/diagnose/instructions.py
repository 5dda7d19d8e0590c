"""Changes inside matched instructions: constants (old and new value) and op attributes.

A change that follows from an input's shape (a constant equal to a changed batch dimension, a
reshape's sizes in proportion to it, a scale 1/4 -> 1/3) is folded into that shape cause; an
op whose shape changes only in element type belongs to the `dtype` cause.
"""

from __future__ import annotations

from itertools import compress
from operator import ne
from typing import TYPE_CHECKING

from xlagraph._core import matched_walk as _matched_walk
from xlagraph.canonical.hashes import compared_value
from xlagraph.diagnose.causes import CauseKind, Change
from xlagraph.diagnose.collectives import is_collective
from xlagraph.diagnose.numbers import explained_by_dims, numbers_equal, reciprocal_dims
from xlagraph.diagnose.residue import ELIDED
from xlagraph.diagnose.shapes import dims_of, shape_of
from xlagraph.ir import COMPUTATION_ATTRIBUTES, Instruction, strip_layout
from xlagraph.opcodes import COMMUTATIVE

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison

__all__ = ["attributes", "matched_changes", "operands_agree"]


def attributes(ins: Instruction) -> dict[str, str]:
    return {
        k: cv
        for k, v in ins.attributes
        if k not in COMPUTATION_ATTRIBUTES and (cv := compared_value(ins, k, v)) is not None
    }


def operands_agree(cmp: Comparison, oa: tuple[str, ...], ob: tuple[str, ...], commutative: bool) -> bool:
    """Operands correspond: paired with each other, or with a twin that computes the same
    subgraph on its own side (lowering shares a node in one graph and repeats it in the other)."""
    if len(oa) != len(ob):
        return False
    pl, pr, lh1, rh1 = cmp.pair_left, cmp.pair_right, cmp.left.h1, cmp.right.h1
    # Paired position by position (the usual case): the greedy search below would find exactly
    # this, commutative or not, since it takes the first corresponding operand in order.
    for x, y in zip(oa, ob, strict=True):
        if pl.get(x) != y:
            break
    else:
        return True

    def same(x: str, y: str) -> bool:
        mx, my = pl.get(x), pr.get(y)
        return mx == y or (mx is not None and rh1[mx] == rh1[y]) or (my is not None and lh1[my] == lh1[x])

    if not commutative:
        return all(same(x, y) for x, y in zip(oa, ob, strict=True))
    rest = list(ob)
    for x in oa:
        y = next((y for y in rest if same(x, y)), None)
        if y is None:
            return False
        rest.remove(y)
    return True


def matched_changes(cmp: Comparison, dims: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """Constant and attribute causes; returns pairs whose operands were rewired or whose
    opcode changed (structural, handled with the unmatched instructions)."""
    has_dtype = any(c.kind is CauseKind.DTYPE for c in cmp.causes)
    if not has_dtype and not cmp.regrouped:
        found = _compiled_changes(cmp, dims)
        if found is not None:
            return found
    left, right = cmp.left, cmp.right
    structural: list[tuple[str, str]] = []
    shape_changed: set[str] = set()
    propagated: tuple[list[str], list[str]] = ([], [])
    lkeys, rkeys = left.keys, right.keys
    lh1, rh1 = left.h1, right.h1
    lins, rins = left.computation.by_name, right.computation.by_name
    lops, rops = left.operands, right.operands
    pair_left, params, regrouped = cmp.pair_left, left.param_number, cmp.regrouped
    pl_get = pair_left.get
    follows_dims: dict[tuple[str, str], bool] = {}
    # Pairs with equal subgraph hashes have nothing to report: they are passed over at C speed
    # (unpaired names come through too, as hash != None, and are skipped below).
    order = left.order
    maybe_changed = compress(order, map(ne, map(lh1.__getitem__, order), map(rh1.get, map(pl_get, order))))
    for a in maybe_changed:
        b = pair_left.get(a)
        if b is None or lh1[a] == rh1[b]:
            continue
        ia, ib = lins[a], rins[b]
        opcode = ia.opcode
        oa, ob = lops[a], rops[b]
        # Operands paired position by position (`tuple(map(...))`: the usual case at C speed).
        agree = tuple(map(pl_get, oa)) == ob or operands_agree(cmp, oa, ob, opcode in COMMUTATIVE)
        if lkeys[a] == rkeys[b]:
            # Same content, so only operands can differ.
            if not agree:
                structural.append((a, b))
            continue
        sa = strip_layout(ia.shape).replace(" ", "")  # common.shape_of, inlined: once per pair
        sb = strip_layout(ib.shape).replace(" ", "")
        if a in params:
            if sa != sb:
                shape_changed.add(a)
                continue
            _attribute_change(cmp, a, b, set(), False, propagated)
            continue
        if opcode != ib.opcode:
            structural.append((a, b))
            continue
        if regrouped and is_collective(opcode):
            cmp.absorb_into(CauseKind.COLLECTIVE, [a], [b])
            continue
        if not agree:
            structural.append((a, b))
            continue
        upstream = not shape_changed.isdisjoint(oa)
        if sa != sb:
            shape_changed.add(a)
            if not upstream:
                key = (sa, sb)
                judged = follows_dims.get(key)
                if judged is None:  # shapes repeat (every layer): judge each pair of them once
                    judged = follows_dims[key] = explained_by_dims(sa, sb, dims)
                upstream = judged
            if has_dtype and dims_of(sa) == dims_of(sb) and opcode != "constant":
                cmp.absorb_into(CauseKind.DTYPE, [a], [b])
                continue
        if upstream and opcode != "constant":  # follows a changed input (_attribute_change, inlined)
            propagated[0].append(a)
            propagated[1].append(b)
            continue
        if opcode == "constant":
            _constant_change(cmp, a, b, sa, sb, dims, propagated)
            continue
        _attribute_change(cmp, a, b, dims, upstream, propagated)
    _explain_propagated(cmp, propagated)
    return structural


def _explain_propagated(cmp: Comparison, propagated: tuple[list[str], list[str]]) -> None:
    """Pairs that follow a changed input's shape belong to that cause, where there is one."""
    if propagated[0] and any(c.kind is CauseKind.PARAMETER_SHAPE for c in cmp.causes):
        cmp.explained_left.update(propagated[0])
        cmp.explained_right.update(propagated[1])


def _compiled_changes(cmp: Comparison, dims: set[tuple[str, str]]) -> list[tuple[str, str]] | None:
    """`matched_changes` with its walk over the pairs run in the compiled core
    (rust/src/diagnose/changes.rs, the same loop) where both sides came from the compiled reader: Python
    then handles only the pairs the walk reports, in its order, with the loop's own code. None
    where the Python loop must run (its two rare modes, or input the core leaves to it)."""
    left, right = cmp.left, cmp.right
    if left.core is None or right.core is None:
        return None
    lops, rops, lins = left.operands, right.operands, left.computation.by_name

    def agree(a: str, b: str) -> bool:
        return operands_agree(cmp, lops[a], rops[b], lins[a].opcode in COMMUTATIVE)

    def follows(sa: str, sb: str) -> bool:
        return explained_by_dims(sa, sb, dims)

    found = _matched_walk(left.core, right.core, cmp.pair_left, agree, follows)
    if found is None:
        return None
    events, prop_left, prop_right = found
    structural: list[tuple[str, str]] = []
    propagated: tuple[list[str], list[str]] = (prop_left, prop_right)
    for kind, a, b, upstream in events:
        if kind == _STRUCTURAL:
            structural.append((a, b))
        elif kind == _PARAMETER:
            _attribute_change(cmp, a, b, set(), False, propagated)
        elif kind == _CONSTANT:
            sa, sb = shape_of(left, a), shape_of(right, b)
            _constant_change(cmp, a, b, sa, sb, dims, propagated)
        else:
            _attribute_change(cmp, a, b, dims, upstream, propagated)
    _explain_propagated(cmp, propagated)
    return structural


_STRUCTURAL, _PARAMETER, _CONSTANT = 0, 1, 2


def _constant_change(
    cmp: Comparison,
    a: str,
    b: str,
    sa: str,
    sb: str,
    dims: set[tuple[str, str]],
    propagated: tuple[list[str], list[str]],
) -> None:
    """A matched constant whose content differs: a new value, unless it follows an input's
    shape or one dump did not print it."""
    old, new = cmp.left.instruction(a).payload, cmp.right.instruction(b).payload
    if old.replace(" ", "") == new.replace(" ", "") and sa == sb:
        return
    if sa == sb and ELIDED in (old.replace(" ", ""), new.replace(" ", "")):
        return  # one dump did not print the value: nothing to compare (see residue.py)
    follows = sa != sb and explained_by_dims(sa, sb, dims)  # an iota over a changed length
    if follows or (old, new) in dims or numbers_equal(old, new) or reciprocal_dims(old, new, dims):
        propagated[0].append(a)
        propagated[1].append(b)
        return
    what = "value" if sa == sb else "shape and value"
    change = Change(a, b, what, f"{sa} {old}", f"{sb} {new}")
    cmp.cause(
        CauseKind.CONSTANT_VALUE,
        f"constant {a} changed {old} -> {new}" + ("" if what == "value" else f" ({sa} -> {sb})"),
        [a],
        [b],
        changes=(change,),
    )


def _attribute_change(
    cmp: Comparison,
    a: str,
    b: str,
    dims: set[tuple[str, str]],
    upstream: bool,
    propagated: tuple[list[str], list[str]],
) -> None:
    """An attribute (or an op's own shape) changed, unless it follows an input's shape."""
    if upstream:
        propagated[0].append(a)
        propagated[1].append(b)
        return
    left, right = cmp.left, cmp.right
    ia, ib = left.instruction(a), right.instruction(b)
    attrs_a, attrs_b = attributes(ia), attributes(ib)
    diff_keys = sorted(k for k in attrs_a.keys() | attrs_b.keys() if attrs_a.get(k) != attrs_b.get(k))
    follows = bool(diff_keys) and all(
        explained_by_dims(attrs_a.get(k, ""), attrs_b.get(k, ""), dims) for k in diff_keys
    )
    if follows:
        propagated[0].append(a)
        propagated[1].append(b)
        return
    sa, sb = shape_of(left, a), shape_of(right, b)
    if not diff_keys and sa == sb:
        return  # differs only inside a called computation: classified there
    changes = tuple(Change(a, b, k, attrs_a.get(k, ""), attrs_b.get(k, "")) for k in diff_keys)
    if not diff_keys:
        changes = (Change(a, b, "shape", sa, sb),)
    desc = "; ".join(f"{c.what}={c.old or '(none)'} -> {c.new or '(none)'}" for c in changes)
    cmp.cause(CauseKind.ATTRIBUTE, f"{ia.opcode} {a}: {desc}", [a], [b], changes=changes)
