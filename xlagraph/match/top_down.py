"""Top-down matching: from paired instructions, pair operands at the same position.

Strict mode needs equal opcodes; lenient mode also pairs different opcodes of equal shape, so an
op swapped for another (`tanh` for `sigmoid`) reads as one changed instruction, not two edits.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.canonical.hashes import COMMUTATIVE
from xlagraph.ir import strip_layout
from xlagraph.match.exact import zip_subgraphs
from xlagraph.match.mappings import Mappings

__all__ = ["match_top_down"]

_LEAVES = frozenset({"parameter", "constant"})


def match_top_down(
    left: CanonicalComputation, right: CanonicalComputation, m: Mappings, strict: bool
) -> None:
    tag = "top-down" if strict else "top-down-lenient"
    lops, rops = left.operands, right.operands
    lins, rins = left.computation.by_name, right.computation.by_name
    lh1, rh1 = left.h1, right.h1
    expanded = m.expanded
    stack = [(a, b) for a, b in m.left.items() if not strict or a not in expanded]
    while stack:
        a, b = stack.pop()
        if strict:
            if a in expanded:
                continue
            expanded.add(a)
        oa, ob = lops.get(a), rops.get(b)
        if oa is None or ob is None or len(oa) != len(ob):
            continue
        if len(oa) > 1 and lins[a].opcode in COMMUTATIVE:
            oa, ob = _align_commutative(left, right, oa, ob, m)
        for x, y in zip(oa, ob, strict=True):
            if x in m.left or y in m.right:
                continue
            ix, iy = lins[x], rins[y]
            if ix.opcode != iy.opcode:
                if strict or ix.opcode in _LEAVES or iy.opcode in _LEAVES:
                    continue
                if strip_layout(ix.shape) != strip_layout(iy.shape):
                    continue
            if m.add(x, y, tag):
                if lh1[x] == rh1[y]:
                    zip_subgraphs(left, right, x, y, "h1", m, tag)
                stack.append((x, y))


def _align_commutative(
    left: CanonicalComputation,
    right: CanonicalComputation,
    oa: tuple[str, ...],
    ob: tuple[str, ...],
    m: Mappings,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Operands of `add(x, y)` vs `add(y', x')`: already paired ones, then equal subgraphs, then
    the same opcode in operand order. Hashes are not a tie-break: a change elsewhere (a batch
    size) alters them and would cross twin branches."""
    rest_a, rest_b = list(oa), list(ob)
    first_a: list[str] = []
    first_b: list[str] = []

    def take(pred) -> None:  # type: ignore[no-untyped-def]
        for x in list(rest_a):
            for y in rest_b:
                if pred(x, y):
                    rest_a.remove(x)
                    rest_b.remove(y)
                    first_a.append(x)
                    first_b.append(y)
                    break

    take(lambda x, y: m.left.get(x) == y)
    take(lambda x, y: left.h1[x] == right.h1[y])
    take(lambda x, y: left.instruction(x).opcode == right.instruction(y).opcode)
    return tuple(first_a + rest_a), tuple(first_b + rest_b)
