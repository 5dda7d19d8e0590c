"""Top-down matching, the reference of the core's phase: from paired instructions, pair operands
at the same position.

Strict mode needs equal opcodes; lenient mode also pairs different opcodes of equal shape, so an
op swapped for another (`tanh` for `sigmoid`) reads as one changed instruction, not two edits.

Only pairs with a free operand on both sides are visited: a visit can pair nothing else, and
since paired instructions never become free again, skipping it changes nothing. On a large pair
most instructions are paired by the first walk, so later walks touch only where the graphs differ.
"""

from __future__ import annotations

from itertools import compress, filterfalse

from tests.oracles.collective_chain_reference import chain_edges_reference
from tests.oracles.mappings import Mappings
from tests.oracles.match_exact import zip_subgraphs
from tests.oracles.match_sum_terms import numbered, reordered_terms
from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["match_top_down"]

_LEAVES = frozenset({"parameter", "constant"})


def match_top_down(
    left: CanonicalComputation, right: CanonicalComputation, m: Mappings, strict: bool
) -> None:
    tag = "top-down" if strict else "top-down-lenient"
    lops, rops = left.operands, right.operands
    lins, rins = left.computation.by_name, right.computation.by_name
    lh1, rh1 = left.h1, right.h1
    lh0, rh0 = left.h0, right.h0
    lparams, rparams = left.param_number, right.param_number
    mleft, mright, matcher = m.left, m.right, m.matcher
    expanded = m.expanded
    # torch_xla's token chain of all-reduces is not followed: the all-reduces pair by what they
    # reduce (rust/src/matching/collective_chain.rs).
    lchain, rchain = chain_edges_reference(left), chain_edges_reference(right)
    by_content = _same_chains(left, lchain, right, rchain)
    stack = _open_pairs(left, right, m)
    if strict:
        stack = [p for p in stack if p[0] not in expanded]
    push = stack.append
    while stack:
        a, b = stack.pop()
        if strict:
            if a in expanded:
                continue
            expanded.add(a)
        oa, ob = lops.get(a), rops.get(b)
        if oa is None or ob is None or len(oa) != len(ob):
            continue
        commutative = len(oa) > 1 and lins[a].opcode in COMMUTATIVE
        if commutative:
            if all(map(mleft.__contains__, oa)) or all(map(mright.__contains__, ob)):
                continue  # nothing left to pair, whatever the alignment
            # The terms of a sum that changed places pair by content (match_sum_terms.py).
            terms = reordered_terms(left, right, a, b)
            if terms is not None:
                for x, y in terms:
                    if m.add(x, y, "sum-terms") and lops[x]:
                        if lh1[x] == rh1[y]:
                            zip_subgraphs(left, right, x, y, "h1", m, tag)
                        push((x, y))
                continue
            free = not any(map(mleft.__contains__, oa)) and not any(map(mright.__contains__, ob))
            twins = _twins_as_written(left, right, oa, ob) if free and len(oa) == 2 else None
            oa, ob = twins or _align_commutative((lh1, lh0), (rh1, rh0), lins, rins, oa, ob, mleft)
        for j, (x, y) in enumerate(zip(oa, ob, strict=True)):
            if x in mleft or y in mright:
                continue
            chained = j in lchain.get(a, ()) or j in rchain.get(b, ())
            if by_content and not commutative and chained:
                continue
            ox, oy = lins[x].opcode, rins[y].opcode
            if ox != oy:
                # An input read from a tuple parameter (a get-tuple-element) is a leaf too.
                if strict or ox in _LEAVES or oy in _LEAVES or x in lparams or y in rparams:
                    continue
                if strip_layout(lins[x].shape) != strip_layout(rins[y].shape):
                    continue
            # m.add inlined (both are free): this loop runs once per paired instruction.
            mleft[x] = y
            mright[y] = x
            matcher[x] = tag
            if lops[x]:  # a leaf (constant, parameter) has nothing to zip or expand
                if lh1[x] == rh1[y]:
                    zip_subgraphs(left, right, x, y, "h1", m, tag)
                push((x, y))


def _same_chains(
    left: CanonicalComputation,
    lchain: dict[str, frozenset[int]],
    right: CanonicalComputation,
    rchain: dict[str, frozenset[int]],
) -> bool:
    """Both sides chain all-reduces of the same shapes, as many of each: the chain is the order
    alone, and the all-reduces pair by what they reduce (elsewhere its positions pair them)."""

    def shapes(comp: CanonicalComputation, chain: dict[str, frozenset[int]]) -> list[str]:
        found = [comp.computation.by_name[n] for n in chain]
        return sorted(strip_layout(i.shape) for i in found if i.opcode == "all-reduce")

    a = shapes(left, lchain)
    return bool(a) and a == shapes(right, rchain)


def _open_pairs(
    left: CanonicalComputation, right: CanonicalComputation, m: Mappings
) -> list[tuple[str, str]]:
    """The pairs, in pairing order, less those with no unpaired operand on one side when that is
    cheaper to tell (few free instructions) than to visit them all."""
    mleft, mright = m.left, m.right
    free_left = list(filterfalse(mleft.__contains__, left.order))
    free_right = list(filterfalse(mright.__contains__, right.order))
    if len(free_left) + len(free_right) >= len(mleft):
        return list(mleft.items())
    lusers, rusers = users_of(left), users_of(right)
    with_free_left = {u for n in free_left for u in lusers.get(n, ()) if u in mleft}
    with_free_right = {u for n in free_right for u in rusers.get(n, ()) if u in mright}
    keep = {a for a in with_free_left if mleft[a] in with_free_right}
    return list(compress(mleft.items(), map(keep.__contains__, mleft)))


_Hashes = tuple[dict[str, int], dict[str, int]]  # (h1, h0) of one side


def _align_commutative(
    lh: _Hashes,
    rh: _Hashes,
    lins: dict,  # type: ignore[type-arg]
    rins: dict,  # type: ignore[type-arg]
    oa: tuple[str, ...],
    ob: tuple[str, ...],
    mleft: dict[str, str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Operands of `add(x, y)` vs `add(y', x')`: already paired ones, then equal subgraphs
    (`h1`), then equal computations over inputs numbered otherwise (`h0`: `a * b` vs `b * a`
    where the lowering numbered a and b as it met them, so the swap renumbers the inputs too),
    then the same opcode in operand order. Hashes are not a tie-break: a change elsewhere (a
    batch size) alters them and would cross twin branches."""
    if len(oa) == 2:
        return _align_two(lh, rh, lins, rins, oa, ob, mleft)
    (lh1, lh0), (rh1, rh0) = lh, rh
    rest_a, rest_b = list(oa), list(ob)
    first_a: list[str] = []
    first_b: list[str] = []
    for rule in range(4):
        for x in tuple(rest_a):
            for y in rest_b:
                if rule == 0:
                    ok = mleft.get(x) == y
                elif rule == 1:
                    ok = lh1[x] == rh1[y]
                elif rule == 2:
                    ok = lh0[x] == rh0[y]
                else:
                    ok = lins[x].opcode == rins[y].opcode
                if ok:
                    rest_a.remove(x)
                    rest_b.remove(y)
                    first_a.append(x)
                    first_b.append(y)
                    break
    return tuple(first_a + rest_a), tuple(first_b + rest_b)


def _twins_as_written(
    left: CanonicalComputation, right: CanonicalComputation, oa: tuple[str, ...], ob: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """Two look-alike operands (one `h0` for all four, none paired yet) that `h1` does not pair
    both ways (its ranks shifted: a change elsewhere reordered the walk that numbers the
    inputs) paired by the inputs they read as written, where those pair both; else None (the
    rules of `_align_two`). `p24 * p23` on both sides is not two inputs crossed."""
    (x0, x1), (y0, y1) = oa, ob
    lh0, rh0, lh1, rh1 = left.h0, right.h0, left.h1, right.h1
    if not lh0[x0] == lh0[x1] == rh0[y0] == rh0[y1] or lh1[x0] == lh1[x1]:
        return None
    if {lh1[x0], lh1[x1]} == {rh1[y0], rh1[y1]}:
        return None  # h1 pairs both: `_align_two` follows it
    nl, nr = numbered(left, [x0, x1]), numbered(right, [y0, y1])
    if nl is None or nr is None or nl[0] == nl[1]:
        return None
    if nl == nr:
        return oa, ob
    if nl == nr[::-1]:
        return oa, (y1, y0)
    return None


def _align_two(
    lh: _Hashes,
    rh: _Hashes,
    lins: dict,  # type: ignore[type-arg]
    rins: dict,  # type: ignore[type-arg]
    oa: tuple[str, ...],
    ob: tuple[str, ...],
    mleft: dict[str, str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`_align_commutative` of two operands each (most binary ops): the first pair the rules
    form, in their order, decides; the other two follow it."""
    (lh1, lh0), (rh1, rh0) = lh, rh
    x0, x1 = oa
    y0, y1 = ob
    swap_a, swap_b = (x1, x0), (y1, y0)
    for k0, k1, v0, v1 in (
        (mleft.get(x0), mleft.get(x1), y0, y1),
        (lh1[x0], lh1[x1], rh1[y0], rh1[y1]),
        (lh0[x0], lh0[x1], rh0[y0], rh0[y1]),
        (lins[x0].opcode, lins[x1].opcode, rins[y0].opcode, rins[y1].opcode),
    ):
        if k0 == v0:
            return oa, ob
        if k0 == v1:
            return oa, swap_b
        if k1 == v0:
            return swap_a, ob
        if k1 == v1:
            return swap_a, swap_b
    return oa, ob
