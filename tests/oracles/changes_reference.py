"""The comparison's walks in Python: the readable references of rust/src/diagnose/changes.rs,
which `diagnose.instructions.matched_changes` and `diagnose.regions` call.
tests/test_changes_compiled.py holds the core to them on every fixture pair."""

from __future__ import annotations

from itertools import compress, filterfalse
from operator import ne

from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.collectives import is_collective
from xlagraph.diagnose.comparison import Comparison
from xlagraph.diagnose.instructions import (
    attribute_change,
    constant_change,
    explain_propagated,
    operands_agree,
)
from xlagraph.diagnose.numbers import explained_by_dims
from xlagraph.diagnose.shapes import dims_of
from xlagraph.ir import strip_layout
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["matched_changes_reference", "unexplained_reference"]


def matched_changes_reference(cmp: Comparison, dims: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """`matched_changes` with its walk over the pairs run here, causes raised as it goes."""
    has_dtype = any(c.kind is CauseKind.DTYPE for c in cmp.causes)
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
    # Pairs with equal subgraph hashes have nothing to report (unpaired names come through too,
    # as hash != None, and are skipped below).
    order = left.order
    maybe_changed = compress(order, map(ne, map(lh1.__getitem__, order), map(rh1.get, map(pl_get, order))))
    for a in maybe_changed:
        b = pair_left.get(a)
        if b is None or lh1[a] == rh1[b]:
            continue
        ia, ib = lins[a], rins[b]
        opcode = ia.opcode
        oa, ob = lops[a], rops[b]
        agree = tuple(map(pl_get, oa)) == ob or operands_agree(cmp, oa, ob, opcode in COMMUTATIVE)
        if lkeys[a] == rkeys[b]:
            # Same content, so only operands can differ.
            if not agree:
                structural.append((a, b))
            continue
        sa = strip_layout(ia.shape).replace(" ", "")
        sb = strip_layout(ib.shape).replace(" ", "")
        if a in params:
            if sa != sb:
                shape_changed.add(a)
                continue
            attribute_change(cmp, a, b, set(), propagated)
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
        if upstream and opcode != "constant":  # follows a changed input
            propagated[0].append(a)
            propagated[1].append(b)
            continue
        if opcode == "constant":
            constant_change(cmp, a, b, sa, sb, dims, propagated)
            continue
        attribute_change(cmp, a, b, dims, propagated)
    explain_propagated(cmp, propagated)
    return structural


def unexplained_reference(cmp: Comparison) -> tuple[list[str], list[str]]:
    """`regions`' first step (`_core.unexplained`): each side's instructions, in order, that are
    not paired, not explained by a cause, and whose `h1` has no twin on the other side or among
    the paired instructions of its own side."""
    left, right = cmp.left, cmp.right
    pl, pr = cmp.pair_left, cmp.pair_right
    left_h1, right_h1 = set(left.h1.values()), set(right.h1.values())
    left_twins = set(map(left.h1.__getitem__, pl))
    right_twins = set(map(right.h1.__getitem__, pr))
    known_left, known_right = right_h1 | left_twins, left_h1 | right_twins
    lefts = [
        a
        for a in filterfalse(pl.__contains__, left.order)
        if a not in cmp.explained_left and left.h1[a] not in known_left
    ]
    rights = [
        b
        for b in filterfalse(pr.__contains__, right.order)
        if b not in cmp.explained_right and right.h1[b] not in known_right
    ]
    return lefts, rights
