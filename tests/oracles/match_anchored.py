"""The `outputs-anchored` phase, the reference of the core's (rust/src/matching/phases/
outputs_anchored.rs): outputs of a shape both sides have as many of (more than one), paired by
what they read rather than by their slots.

Updates that run in another order come out in another order. Where the context cannot pair them
(one side computes the state from constants on its first step, so no colour agrees at the last
round), `outputs-balanced` would pair them by slot, and a running mean over 4 values would be
compared with one over 16: two constants swapped and a `structure` on what feeds them. Here each
such output is described by its anchors, the first instructions on each path down from it that
are paired already or are an identical subgraph both sides hold once (`h0`, constants included,
parameters by shape); two outputs pair where each is the other's strict best by anchors
shared and the slot pairs they replace share none.
What reads nothing telling, or ties, is left to the slots as before.

Then the same by `h0` for look-alikes one side has one more of (a parameter's update dropped or
added: they have no slots), where `h1`, ranking the inputs of the look-alikes after the extra one
one off, would have `exact-h1` pair each with its neighbour.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from tests.oracles.mappings import Mappings
from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout

__all__ = ["match_outputs_anchored"]

# Visits over all the walks, per instruction of both sides: past it the phase pairs nothing.
WALK_BUDGET = 4


class _OverBudget(Exception):
    pass


def match_outputs_anchored(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    """By shape where both sides have as many of it (more than one; where one side has more,
    the data flow decides already), then look-alikes (equal `h0`) one side has one more of, both
    at least two: one was dropped or added. `h1` ranks the inputs of those after it one off and
    `exact-h1` would pair each with its neighbour; what each reads that is paired already (its
    moments, its gradient) names its counterpart, and the extra one ties and stays free."""

    def shape_l(a: str) -> object:
        return strip_layout(left.instruction(a).shape)

    def shape_r(b: str) -> object:
        return strip_layout(right.instruction(b).shape)

    _anchored_pass(left, right, m, shape_l, shape_r, lambda x, y: x == y > 1)
    _anchored_pass(
        left,
        right,
        m,
        left.h0.__getitem__,
        right.h0.__getitem__,
        lambda x, y: abs(x - y) == 1 and min(x, y) > 1,
    )


def _anchored_pass(
    left: CanonicalComputation,
    right: CanonicalComputation,
    m: Mappings,
    key_l: Callable[[str], object],
    key_r: Callable[[str], object],
    eligible: Callable[[int, int], bool],
) -> None:
    """The free outputs whose key both sides hold as `eligible` counts, paired where each is the
    other's strict best by anchors shared (and, where the counts are equal, the slot pairs they
    replace share none)."""
    free_l = [o for o in dict.fromkeys(left.outputs) if o not in m.left]
    free_r = [o for o in dict.fromkeys(right.outputs) if o not in m.right]
    k_l = {a: key_l(a) for a in free_l}
    k_r = {b: key_r(b) for b in free_r}
    count_l, count_r = Counter(k_l.values()), Counter(k_r.values())
    shared = {s for s in count_l if s in count_r and eligible(count_l[s], count_r[s])}
    free_l = [a for a in free_l if k_l[a] in shared]
    free_r = [b for b in free_r if k_r[b] in shared]
    if not free_l or not free_r:
        return
    hl, hr = left.h0, right.h0
    seen_l, seen_r = Counter(map(hl.__getitem__, left.order)), Counter(map(hr.__getitem__, right.order))
    once_r = {hr[n]: n for n in right.order if seen_r[hr[n]] == 1}

    def anchor_l(x: str) -> str | None:  # as B's instruction
        if x in m.left:
            return m.left[x]
        if left.operands.get(x) and seen_l[hl[x]] == 1 and seen_r[hl[x]] == 1:
            return once_r[hl[x]]
        return None

    def anchor_r(y: str) -> str | None:
        if y in m.right:
            return y
        if right.operands.get(y) and seen_r[hr[y]] == 1 and seen_l[hr[y]] == 1:
            return y
        return None

    budget = [WALK_BUDGET * (len(left.order) + len(right.order))]

    def anchors(comp: CanonicalComputation, out: str, anchor) -> set[str]:  # type: ignore[no-untyped-def]
        found: set[str] = set()
        seen: set[str] = set()
        stack = [out]
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            budget[0] -= 1
            if budget[0] < 0:
                raise _OverBudget
            a = anchor(x)
            if a is not None:
                found.add(a)
            else:
                stack.extend(comp.operands.get(x, ()))
        return found

    try:
        fl = {a: anchors(left, a, anchor_l) for a in free_l}
        fr = {b: anchors(right, b, anchor_r) for b in free_r}
    except _OverBudget:
        return
    score = {(a, b): len(fl[a] & fr[b]) for a in free_l for b in free_r if k_l[a] == k_r[b]}

    def best(options: list[tuple[str, int]]) -> str | None:
        """The one option with the highest score, above zero (None on a tie)."""
        top = max((s for _, s in options), default=0)
        winners = [o for o, s in options if s == top]
        return winners[0] if top > 0 and len(winners) == 1 else None

    # The pair `outputs-balanced` would make: the k-th of a key with the k-th (where the counts
    # are equal; else none, and no slot to guard).
    slot: dict[str, str] = {}
    for s in shared:
        if count_l[s] == count_r[s]:
            slot.update(
                zip([a for a in free_l if k_l[a] == s], [b for b in free_r if k_r[b] == s], strict=True)
            )
    back = {b: a for a, b in slot.items()}
    for a in free_l:
        b = best([(b, s) for (x, b), s in score.items() if x == a])
        if b is None or best([(x, s) for (x, y), s in score.items() if y == b]) != a:
            continue
        # Only against slots that share nothing: a slot pair that reads anything in common stays.
        if (a not in slot or score[(a, slot[a])] == 0) and (b not in back or score[(back[b], b)] == 0):
            m.add(a, b, "outputs-anchored")
