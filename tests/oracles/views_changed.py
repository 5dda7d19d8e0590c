"""The rule the HTML page and GraphML used to decide "has this paired instruction changed?" on
their own, over the raw matching (`diagnose.changed.paired_changed` until issue 39's switch): kept
as an oracle so tests/test_changed_parity.py can say where, and why, the diagnosis' answer (the
compiled walk, rust/src/diagnose/changes.rs `matched_walk`), which the views now show, differs."""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.match import Matching
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["matching_changed"]


def matching_changed(lc: CanonicalComputation, rc: CanonicalComputation, m: Matching) -> set[tuple[str, str]]:
    """The matcher's pairs whose content key differs, or whose operands were rewired (compared as
    a set for a commutative op)."""
    out: set[tuple[str, str]] = set()
    for a in lc.order:
        b = m.left.get(a)
        if b is None:
            continue
        mapped = [m.left.get(o) for o in lc.operands[a]]
        ops = list(rc.operands[b])
        if lc.instruction(a).opcode in COMMUTATIVE:
            rewired = sorted(map(str, mapped)) != sorted(ops)
        else:
            rewired = mapped != ops
        if lc.keys[a] != rc.keys[b] or rewired:
            out.add((a, b))
    return out
