"""Changes inside matched instructions: constants (old and new value) and op attributes.

A change that follows from an input's shape (a constant equal to a changed batch dimension, a
reshape's sizes in proportion to it, a scale 1/4 -> 1/3) is folded into that shape cause; an
op whose shape changes only in element type belongs to the `dtype` cause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlagraph._core import matched_walk as _matched_walk
from xlagraph.canonical.attributes import attribute_values
from xlagraph.canonical.written import as_written, changed_texts
from xlagraph.diagnose.causes import CauseKind, Change
from xlagraph.diagnose.numbers import explained_by_dims, numbers_equal, reciprocal_dims
from xlagraph.diagnose.residue import ELIDED
from xlagraph.diagnose.shapes import dim_sizes, shape_of
from xlagraph.ir import Instruction, strip_layout
from xlagraph.opcodes import COMMUTATIVE

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison

__all__ = [
    "attribute_change",
    "attributes",
    "constant_change",
    "explain_propagated",
    "matched_changes",
    "operands_agree",
]


def attributes(ins: Instruction) -> dict[str, str]:
    """What an op's attributes compare (called computations aside: compared by their hashes)."""
    return attribute_values(ins, called=False)


def operands_agree(cmp: Comparison, oa: tuple[str, ...], ob: tuple[str, ...], commutative: bool) -> bool:
    """Operands correspond: paired with each other, or with a twin that computes the same
    subgraph on its own side (lowering shares a node in one graph and repeats it in the other)."""
    if len(oa) != len(ob):
        return False
    # (Operands paired position by position are found agreeing before this is asked: the walk,
    # rust/src/diagnose/changes.rs, asks only where they are not.)
    pl, pr, lh1, rh1 = cmp.pair_left, cmp.pair_right, cmp.left.h1, cmp.right.h1

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
    opcode changed (structural, handled with the unmatched instructions). Every pair found
    changed, however it is reported, is kept in `cmp.changed`: what the views show.

    The walk over the pairs runs in the compiled core (rust/src/diagnose/changes.rs; its
    readable reference is tests/oracles/changes_reference.py): Python handles only the pairs it
    reports, in its order (the order of the causes)."""
    left, right = cmp.left, cmp.right
    lops, rops, lins = left.operands, right.operands, left.computation.by_name

    def agree(a: str, b: str) -> bool:
        return operands_agree(cmp, lops[a], rops[b], lins[a].opcode in COMMUTATIVE)

    def follows(sa: str, sb: str) -> bool:
        return explained_by_dims(sa, sb, dims)

    has_dtype = any(c.kind is CauseKind.DTYPE for c in cmp.causes)
    events, prop_left, prop_right, *changed = _matched_walk(
        left.core, right.core, cmp.pair_left, agree, follows, has_dtype, cmp.regrouped
    )
    cmp.changed = frozenset(changed[0]), frozenset(changed[1])
    structural: list[tuple[str, str]] = []
    propagated: tuple[list[str], list[str]] = (prop_left, prop_right)
    for kind, a, b in events:
        if kind == _STRUCTURAL:
            structural.append((a, b))
        elif kind == _PARAMETER:
            attribute_change(cmp, a, b, set(), propagated)
        elif kind == _CONSTANT:
            sa, sb = shape_of(left, a), shape_of(right, b)
            constant_change(cmp, a, b, sa, sb, dims, propagated)
        elif kind == _DTYPE:
            cmp.absorb_into(CauseKind.DTYPE, [a], [b])
        elif kind == _COLLECTIVE:
            cmp.absorb_into(CauseKind.COLLECTIVE, [a], [b])
        else:
            attribute_change(cmp, a, b, dims, propagated)
    explain_propagated(cmp, propagated)
    return structural


# The walk's events (rust/src/diagnose/changes.rs).
_STRUCTURAL, _PARAMETER, _CONSTANT, _ATTRIBUTE, _DTYPE, _COLLECTIVE = range(6)


def explain_propagated(cmp: Comparison, propagated: tuple[list[str], list[str]]) -> None:
    """Pairs that follow a changed input's shape belong to that cause, where there is one."""
    if propagated[0] and any(c.kind is CauseKind.PARAMETER_SHAPE for c in cmp.causes):
        cmp.explained_left.update(propagated[0])
        cmp.explained_right.update(propagated[1])


def constant_change(
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
    if ELIDED in (old.replace(" ", ""), new.replace(" ", "")) and _unit_dims_apart(sa, sb):
        # One dump did not print the value: nothing to compare (see residue.py); nor where the
        # shapes differ only by dimensions of 1 (a RoPE table f32[8,4] -> f32[1,8,1,4]: XLA folded
        # a reshape into the constant once the work around it changed, which is named there).
        return
    follows = sa != sb and explained_by_dims(sa, sb, dims)  # an iota over a changed length
    if follows or (old, new) in dims or numbers_equal(old, new) or reciprocal_dims(old, new, dims):
        propagated[0].append(a)
        propagated[1].append(b)
        return
    what = "value" if sa == sb else "shape and value"
    cmp.cause_of(
        CauseKind.CONSTANT_VALUE,
        f"constant {a} changed {old} -> {new}" + ("" if what == "value" else f" ({sa} -> {sb})"),
        [Change(a, b, what, f"{sa} {old}", f"{sb} {new}")],
    )


def _unit_dims_apart(a: str, b: str) -> bool:
    """The same shape, or the same element type and dimensions once those of 1 are dropped."""
    if a == b:
        return True
    x, y = dim_sizes(a), dim_sizes(b)
    return (
        x is not None
        and y is not None
        and strip_layout(a).split("[", 1)[0] == strip_layout(b).split("[", 1)[0]
        and [d for d in x if d != 1] == [d for d in y if d != 1]
    )


def attribute_change(
    cmp: Comparison,
    a: str,
    b: str,
    dims: set[tuple[str, str]],
    propagated: tuple[list[str], list[str]],
) -> None:
    """An attribute (or an op's own shape) changed, unless it follows an input's shape (the
    walk propagates a pair whose operands follow one before it gets here)."""
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
    # Compared canonically, said as each module wrote it (canonical/written.py).
    lm, rm = cmp.lm.module, cmp.rm.module
    wa, wb = as_written(lm, ia), as_written(rm, ib)
    shown_a = attrs_a if wa is ia else attributes(wa)
    shown_b = attrs_b if wb is ib else attributes(wb)
    changes = tuple(
        Change(a, b, k, *changed_texts(lm, shown_a.get(k, ""), rm, shown_b.get(k, ""))) for k in diff_keys
    )
    if not diff_keys:
        changes = (Change(a, b, "shape", sa, sb),)
    desc = "; ".join(f"{c.what}={c.old or '(none)'} -> {c.new or '(none)'}" for c in changes)
    cmp.cause(CauseKind.ATTRIBUTE, f"{ia.opcode} {a}: {desc}", [a], [b], changes=changes)
