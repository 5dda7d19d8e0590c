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
"""

from __future__ import annotations

from collections.abc import Mapping

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.users import users_of

__all__ = ["kept_in_place"]

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
