"""Exact-subgraph matching, the reference of the core's phase: equal structural hashes mean
equal subgraphs, so pair them and their operands position by position (commutative operands were
sorted the same way)."""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from itertools import filterfalse

from tests.oracles.mappings import Mappings
from xlagraph.canonical import CanonicalComputation
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["match_exact", "zip_subgraphs"]


def zip_subgraphs(
    left: CanonicalComputation, right: CanonicalComputation, a: str, b: str, key: str, m: Mappings, tag: str
) -> None:
    """Pair the operands of two equal-hash instructions, recursively."""
    hl, hr = getattr(left, key), getattr(right, key)
    lops, rops, lins = left.operands, right.operands, left.computation.by_name
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        ox, oy = lops[x], rops[y]
        if len(ox) != len(oy):
            continue
        if len(ox) > 1 and lins[x].opcode in COMMUTATIVE:
            ox = sorted(ox, key=hl.__getitem__)
            oy = sorted(oy, key=hr.__getitem__)
        for p, q in zip(ox, oy, strict=True):
            if hl[p] == hr[q] and m.add(p, q, tag) and lops[p]:  # leaves have nothing to zip
                stack.append((p, q))


def _against_pairs(
    left: CanonicalComputation, right: CanonicalComputation, a: str, b: str, m: Mappings
) -> bool:
    """An operand of `a` or of `b` that the data-flow context paired (an output,
    `outputs-context`) with one that is not an operand of the other: equal `h1` is no evidence
    against the context (canonical numbers come from a walk over all outputs, and an output
    dropped shifts them by one along look-alikes: a dropped AdamW second moment's `sqrt(v)` would
    pair with the next moment's, whose `v` the context paired)."""
    oa, ob = left.operands[a], right.operands[b]

    def context(p: str) -> bool:
        return m.matcher.get(p) == "outputs-context"

    return any(p in m.left and context(p) and m.left[p] not in ob for p in oa) or any(
        q in m.right and context(m.right[q]) and m.right[q] not in oa for q in ob
    )


def match_exact(
    left: CanonicalComputation, right: CanonicalComputation, m: Mappings, key: str = "h1"
) -> None:
    """Largest identical subgraphs first: walk the left side users-before-operands.

    Only hashes seen once on each side are trusted: canonical parameter numbers come from a walk
    over all outputs, so when something else changed, equal hashes of repeated layers may belong
    to different layers. With `key="h0"` parameters are compared by shape alone, which recovers
    identical subgraphs whose canonical numbering shifted.
    """
    hl, hr = getattr(left, key), getattr(right, key)
    candidates: dict[int, deque[str]] = defaultdict(deque)
    for name in filterfalse(m.right.__contains__, reversed(right.order)):
        candidates[hr[name]].append(name)
    tag = "exact" if key == "h1" else "exact-shape"
    left_count = Counter(map(hl.__getitem__, filterfalse(m.left.__contains__, left.order)))
    # Lazy: a name is skipped if paired by the time the walk reaches it, as an `in` test would.
    for name in filterfalse(m.left.__contains__, reversed(left.order)):
        pool = candidates.get(hl[name])
        while pool and pool[0] in m.right:
            pool.popleft()
        if not pool:
            continue
        if len(pool) > 1 or left_count[hl[name]] > 1:
            continue
        if _against_pairs(left, right, name, pool[0], m):
            continue
        other = pool.popleft()
        m.add(name, other, tag)
        zip_subgraphs(left, right, name, other, key, m, tag)
