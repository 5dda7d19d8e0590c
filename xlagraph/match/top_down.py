"""Top-down matching: from paired instructions, pair operands at the same position.

Strict mode needs equal opcodes; lenient mode also pairs different opcodes of equal shape, so an
op swapped for another (`tanh` for `sigmoid`) reads as one changed instruction, not two edits.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.canonical.hashes import COMMUTATIVE
from xlagraph.ir import strip_layout
from xlagraph.match.mappings import Mappings

__all__ = ["match_top_down"]

_LEAVES = frozenset({"parameter", "constant"})


def match_top_down(left: CanonicalComputation, right: CanonicalComputation, m: Mappings, strict: bool) -> None:
    tag = "top-down" if strict else "top-down-lenient"
    stack = list(m.left.items())
    while stack:
        a, b = stack.pop()
        if a not in left.operands or b not in right.operands:
            continue
        oa, ob = left.operands[a], right.operands[b]
        if len(oa) != len(ob):
            continue
        if len(oa) > 1 and left.instruction(a).opcode in COMMUTATIVE:
            oa, ob = _align_commutative(left, right, oa, ob, m)
        for x, y in zip(oa, ob, strict=True):
            if x in m.left or y in m.right:
                continue
            ix, iy = left.instruction(x), right.instruction(y)
            same = ix.opcode == iy.opcode
            if not same and (strict or ix.opcode in _LEAVES or iy.opcode in _LEAVES):
                continue
            if not same and strip_layout(ix.shape) != strip_layout(iy.shape):
                continue
            if m.add(x, y, tag):
                stack.append((x, y))


def _align_commutative(
    left: CanonicalComputation,
    right: CanonicalComputation,
    oa: tuple[str, ...],
    ob: tuple[str, ...],
    m: Mappings,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Operands of `add(x, y)` vs `add(y', x')`: keep paired ones together, sort the rest by h0."""
    rest_b = list(ob)
    first_a, first_b, rest_a = [], [], []
    for x in oa:
        y = m.left.get(x)
        if y in rest_b:
            rest_b.remove(y)
            first_a.append(x)
            first_b.append(y)
        else:
            rest_a.append(x)
    rest_a.sort(key=left.h0.__getitem__)
    rest_b.sort(key=right.h0.__getitem__)
    return tuple(first_a + rest_a), tuple(first_b + rest_b)
