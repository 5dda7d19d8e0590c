"""Whether a paired instruction changed, as every view of a diff marks it (the HTML page, GraphML):
one rule, here, so no renderer decides it."""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.match import Matching
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["paired_changed"]


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
