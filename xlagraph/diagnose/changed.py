"""What changed, per instruction, as every view of a diff shows it (text, JSON, the HTML page,
GraphML): decided here, once, so no renderer decides it."""

from __future__ import annotations

from collections.abc import Iterable

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause
from xlagraph.match import Matching
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["changed_instructions", "named_instructions", "pair_statuses", "paired_changed"]


def paired_changed(lc: CanonicalComputation, rc: CanonicalComputation, m: Matching, a: str, b: str) -> bool:
    """`a` (left) paired with `b` (right) changed: its content key differs, or its operands were
    rewired (compared as a set for a commutative op)."""
    if lc.keys[a] != rc.keys[b]:
        return True
    mapped = [m.left.get(o) for o in lc.operands[a]]
    ops = list(rc.operands[b])
    if lc.instruction(a).opcode in COMMUTATIVE:
        return sorted(map(str, mapped)) != sorted(ops)
    return mapped != ops


def pair_statuses(
    lc: CanonicalComputation, rc: CanonicalComputation, m: Matching
) -> tuple[dict[str, str], dict[str, str]]:
    """Per side, the live instructions of a matched computation pair that are not `same`:
    `only-A` / `only-B` (unpaired) or `changed` (`paired_changed`), in instruction order."""
    left: dict[str, str] = {}
    right: dict[str, str] = {}
    for a in lc.order:
        b = m.left.get(a)
        if b is None:
            left[a] = "only-A"
        elif paired_changed(lc, rc, m, a, b):
            left[a] = right[b] = "changed"
    for b in rc.order:
        if b not in m.right:
            right[b] = "only-B"
    return left, right


def changed_instructions(causes: Iterable[Cause]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Instructions the causes that make the graphs differ name or change, per side, first seen
    first: the text's and the JSON's `changed` lists."""
    left: dict[str, None] = {}
    right: dict[str, None] = {}
    for cause in causes:
        left.update(dict.fromkeys(cause.left))
        right.update(dict.fromkeys(cause.right))
        for change in cause.changes:
            left.setdefault(change.left)
            right.setdefault(change.right)
    left.pop("", None)
    right.pop("", None)
    return tuple(left), tuple(right)


def named_instructions(causes: Iterable[Cause]) -> dict[str, set[str]]:
    """`changed_instructions` plus the inputs and outputs a permutation moves, per side ("A",
    "B"): what the HTML page shows open and marks as a cause's."""
    named: dict[str, set[str]] = {"A": set(), "B": set()}
    for cause in causes:
        named["A"].update(cause.left)
        named["B"].update(cause.right)
        for change in cause.changes:
            named["A"].add(change.left)
            named["B"].add(change.right)
        for mv in cause.mapping:
            if mv.left != mv.right:
                named["A"].add(mv.left_name)
                named["B"].add(mv.right_name)
    for names in named.values():
        names.discard("")
    return named
