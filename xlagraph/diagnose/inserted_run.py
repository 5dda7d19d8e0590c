"""Where inputs were inserted among look-alikes: a block appended to blocks alike.

A model with one block more (GPT-2 of 3 layers instead of 2) takes the new block's weights as
inputs of the same shapes and kinds as the others'. A matcher that walks from the outputs pairs
the blocks from the end (A's last block with B's last), so that B's first block looks new and every
weight of A's first block "moved" to B's second. The data flow cannot tell which of the alike blocks
is the new one: each alignment pairs inputs that are read the same way. The inputs' numbers can
break the tie: torch_xla numbers a step's inputs in the order the step first reads them, and a step
updates its weights in the order the model holds them, so A's input `i` is B's input `i` up to the
point of insertion. Of the alignments the evidence cannot tell apart, the one that keeps the most
inputs at their own number is taken: the last alike run is the inserted one.

An alignment (`k` inputs inserted before A's input `t`: A's `i` is B's `i` below `t`, `i + k` from
there) is possible where every input is paired with one that its context pair (the strongest
evidence, `correspondence`) or the look of it allows: the input its context pairs it with; else
one of the same shape read by ops of the same kinds at the same operands (`_look`), which any
other pair the evidence offers for it must also be (a look-alike, no evidence against).

A window shifted over look-alike blocks (`shifted_blocks`): a pipeline stage that holds blocks
2-3 of an alternating stack in A and 1-2 in B runs [X, Y] in A and [Y, X] in B. The evidence pairs
each block with its look-alike, so the two blocks seem to have traded places (a permutation), and
the instructions matched across them turn a GELU's 0.5 into another block's 1. Blocks do not trade
places in a chain: the one kept is compared with itself, one block was gained at an end of the
stage and its look-alike lost at the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.recognizers._dataflow import downstream
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.users import users_of

__all__ = ["kept_in_place", "shifted_blocks", "shifted_weights"]

_Look = tuple[str, tuple[tuple[int, int, tuple[int, ...]], ...]]


def _look(comp: CanonicalComputation, p: str) -> _Look:
    """An input's shape and what reads it, two ops deep: each reader's content (opcode, shape,
    attributes; not its other operands), the operand it reads the input at, and its own readers'
    contents (a final norm's scale feeds the output projection, a block's its attention)."""
    users, keys = users_of(comp), comp.keys

    def reader(u: str) -> tuple[int, int, tuple[int, ...]]:
        after = tuple(sorted(keys.get(v, 0) for v in users.get(u, ())))
        return keys.get(u, 0), comp.operands[u].index(p), after

    return shape_of(comp, p), tuple(sorted(reader(u) for u in users.get(p, ())))


def kept_in_place(
    left: CanonicalComputation,
    right: CanonicalComputation,
    evidence: list[tuple[int, int]],
    context: Mapping[int, int],
) -> list[tuple[int, int]] | None:
    """Every input of the smaller side paired by position around one run of inputs inserted in
    the other, where the evidence (`evidence`, by input number; `context`: its context pairs)
    cannot tell that alignment from its own and pairs some input otherwise; else None."""
    n, m = len(left.param_number), len(right.param_number)
    if n == m or sorted(left.param_number.values()) != list(range(n)):
        return None
    if sorted(right.param_number.values()) != list(range(m)):
        return None
    flip = n > m
    small, big = (right, left) if flip else (left, right)
    pairs = [(b, a) for a, b in evidence] if flip else list(evidence)
    hard = {b: a for a, b in context.items()} if flip else dict(context)
    k = abs(m - n)
    sname = {i: p for p, i in small.param_number.items()}
    bname = {i: p for p, i in big.param_number.items()}
    looks_s = [_look(small, sname[i]) for i in range(len(sname))]
    looks_b = [_look(big, bname[j]) for j in range(len(bname))]
    offered: dict[int, set[int]] = {}
    for a, b in pairs:
        offered.setdefault(a, set()).add(b)

    def fits(a: int, b: int) -> bool:
        if a in hard:
            return hard[a] == b
        if looks_s[a] != looks_b[b]:
            return b in offered.get(a, ())
        return all(looks_b[o] == looks_b[b] for o in offered.get(a, ()))

    count = len(looks_s)
    below = [True] * (count + 1)  # below[t]: every a < t fits a
    for a in range(count):
        below[a + 1] = below[a] and fits(a, a)
    above = [True] * (count + 1)  # above[t]: every a >= t fits a + k
    for a in range(count - 1, -1, -1):
        above[a] = above[a + 1] and fits(a, a + k)
    # The inputs called inserted are, in order, look-alikes of those the evidence leaves unpaired:
    # the same block, at another place among its look-alikes.
    unpaired = sorted(set(range(len(looks_b))) - {b for _, b in pairs})
    if len(unpaired) != k:
        return None
    run = [looks_b[b] for b in unpaired]

    def same_run(t: int) -> bool:
        return [looks_b[t + i] for i in range(k)] == run

    t = next((t for t in range(count, -1, -1) if below[t] and above[t] and same_run(t)), None)
    if t is None:
        return None
    chosen = {a: a if a < t else a + k for a in range(count)}
    if all(chosen[a] == b for a, b in pairs):
        return None  # the evidence says as much already
    return [(b, a) for a, b in chosen.items()] if flip else list(chosen.items())


def _skew_parts(pairs: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The pairs (sorted by A's number) cut where what comes first in A takes the highest of B's
    numbers left: the blocks of a run that traded places, in A's order."""
    parts: list[list[tuple[int, int]]] = []
    left = sorted((b for _, b in pairs), reverse=True)
    start = 0
    for i in range(len(pairs)):
        seen = {b for _, b in pairs[start : i + 1]}
        if seen == set(left[: len(seen)]):
            parts.append(pairs[start : i + 1])
            left = left[len(seen) :]
            start = i + 1
    return parts if start == len(pairs) else []


def _widened(numbers: set[int], paired: set[int], total: int, weights: set[int]) -> set[int]:
    """`numbers` and the weights next to them that the evidence left unpaired (the block's last
    input, paired later by position): the whole block."""
    out = set(numbers)
    for step, edge in ((1, max(numbers)), (-1, min(numbers))):
        n = edge + step
        while 0 <= n < total and n not in paired and n in weights:
            out.add(n)
            n += step
    return out


def _cone(comp: CanonicalComputation, roots: list[str]) -> set[str]:
    return downstream(users_of(comp), roots)


def _runs_first(comp: CanonicalComputation, block: list[str], other: list[str]) -> bool:
    """Of two chained blocks, `block` runs first: more of the work its weights reach does not
    depend on `other`'s weights than the other way round (the first block's forward reads the
    stage's input, the second's reads the first's result; backward, each depends on both)."""
    mine, theirs = _cone(comp, block), _cone(comp, other)
    return len(mine - theirs) > len(theirs - mine)


def shifted_blocks(
    left: CanonicalComputation,
    right: CanonicalComputation,
    evidence: list[tuple[int, int]],
    weights: Callable[[str], set[str]],
) -> tuple[list[tuple[int, int]], set[int], set[int]] | None:
    """(the evidence's pairs kept, A's inputs lost, B's inputs gained) where the evidence pairs two
    consecutive runs of A's weights (`weights("left")`: inputs A's step updates) with two
    runs of B's in the other order and the two blocks run in the other order too (A: X then Y,
    B: Y then X): a window shifted over look-alike blocks. A's first block is the one kept (B
    gained a block in front, as a stage whose split moved towards the front); the dumps cannot
    tell this from the other way round, and the cause says so. None where that is not the case."""
    if not evidence:
        return None
    lname = {i: p for p, i in left.param_number.items()}
    rname = {i: p for p, i in right.param_number.items()}
    ordered = sorted(evidence)
    # The evidence cut where everything after takes B's higher numbers (parts in order); one part
    # of several pairs holds the crossing, in two blocks that traded places.
    after = [1 << 62] * (len(ordered) + 1)  # after[k]: B's lowest number from pair k on
    for k in range(len(ordered) - 1, -1, -1):
        after[k] = min(after[k + 1], ordered[k][1])
    crossed: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    high = -1
    for k, pr in enumerate(ordered):
        current.append(pr)
        high = max(high, pr[1])
        if high < after[k + 1]:
            if len(current) > 1:
                crossed.append(current)
            current, high = [], -1
    if len(crossed) != 1:
        return None
    segment = crossed[0]
    parts = _skew_parts(segment)
    if len(parts) != 2 or any(len(p) < 2 for p in parts):
        return None
    x, y = parts
    xa, ya = [lname[a] for a, _ in x], [lname[a] for a, _ in y]
    xb, yb = [rname[b] for _, b in x], [rname[b] for _, b in y]
    wl, wr = weights("left"), weights("right")
    if not (all(p in wl for p in xa + ya) and all(p in wr for p in xb + yb)):
        return None
    # A runs X then Y, B runs Y then X: a chain shifted, not inputs renumbered.
    if not (_runs_first(left, xa, ya) and _runs_first(right, yb, xb)):
        return None
    kept = [pr for pr in ordered if pr not in y]
    lnum = {n for n, p in lname.items() if p in wl}
    rnum = {n for n, p in rname.items() if p in wr}
    paired_l, paired_r = {a for a, _ in ordered}, {b for _, b in ordered}
    # The kept block's own inputs the evidence left unpaired (a bias read by one add), paired
    # within the block where each shape is left once on both sides; what is left next to the
    # other block is that block's.
    rest_l = _widened({a for a, _ in x}, paired_l, len(lname), lnum) - paired_l
    rest_r = _widened({b for _, b in x}, paired_r, len(rname), rnum) - paired_r
    by_shape_l = {shape_of(left, lname[a]): a for a in rest_l}
    by_shape_r = {shape_of(right, rname[b]): b for b in rest_r}
    if len(by_shape_l) == len(rest_l) and len(by_shape_r) == len(rest_r):
        extra = [(a, by_shape_r[sh]) for sh, a in by_shape_l.items() if sh in by_shape_r]
        kept += extra
        paired_l |= {a for a, _ in extra}
        paired_r |= {b for _, b in extra}
    lost = _widened({a for a, _ in y}, paired_l, len(lname), lnum)
    gained = _widened({b for _, b in y}, paired_r, len(rname), rnum)
    return sorted(kept), lost, gained


def shifted_weights(
    left: CanonicalComputation,
    right: CanonicalComputation,
    pairs: list[tuple[int, int]],
    weights: Callable[[str], set[str]],
) -> tuple[list[tuple[int, int]], set[int], set[int]] | None:
    """(pairs, A's inputs lost, B's inputs gained) where the pairs call weights resized that a
    shift of the weights' run pairs with weights of their own shape: blocks of other hidden sizes
    2-3 vs 1-2 of a stack (`[128, 64]` vs `[64, 128]`) are one block kept, one gained at an end,
    one lost at the other, not every weight resized. Weights in their order (the step's inputs
    numbered by argument or first read); the shift with the block gained in front first, then
    the smallest. None where no shift pairs every kept weight with one of its own shape."""
    lname = {i: p for p, i in left.param_number.items()}
    rname = {i: p for p, i in right.param_number.items()}
    shape_l, shape_r = left.compared_shapes, right.compared_shapes
    resized = [(a, b) for a, b in pairs if shape_l[lname[a]] != shape_r[rname[b]]]
    if len(resized) < 2:
        return None
    # The run: from the first weight called resized to the last, on each side, weights only.
    lw = list(range(min(a for a, _ in resized), max(a for a, _ in resized) + 1))
    rw = list(range(min(b for _, b in resized), max(b for _, b in resized) + 1))
    wl, wr = weights("left"), weights("right")
    if not all(lname.get(i) in wl for i in lw) or not all(rname.get(i) in wr for i in rw):
        return None
    if any((a in lw) != (b in rw) for a, b in pairs):
        return None
    ls = [shape_of(left, lname[i]) for i in lw]
    rs = [shape_of(right, rname[i]) for i in rw]
    n, m = len(lw), len(rw)
    shifts = sorted((k for k in range(-(n - 1), m) if k), key=lambda k: (k < 0, abs(k)))
    for k in shifts:
        overlap = [(i, i + k) for i in range(n) if 0 <= i + k < m]
        lost_at_back = k > 0 and overlap[-1][0] < n - 1 and overlap[0][0] == 0
        lost_in_front = k < 0 and overlap[0][0] > 0 and overlap[-1][1] < m - 1
        if len(overlap) < 2 or not (lost_at_back or lost_in_front):
            continue
        if all(ls[i] == rs[j] for i, j in overlap):
            kept = [(lw[i], rw[j]) for i, j in overlap]
            others = [(a, b) for a, b in pairs if a not in lw]
            return sorted(others + kept), set(lw) - {a for a, _ in kept}, set(rw) - {b for _, b in kept}
    return None
