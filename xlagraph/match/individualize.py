"""Individualization (as in nauty's canonical labelling) of look-alikes that colour refinement
leaves tied: one pair of them is fixed with a fresh colour and refinement runs again, which pairs
what each reads or feeds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xlagraph.match.isomorphic import Chosen, Side, classes
from xlagraph.match.refinement import History, rounds_for

__all__ = ["OUTPUTS", "PARAMS", "Chosen", "HistoryFrom", "Side", "Signature", "individualized", "tied_pick"]

# Refinement of two graphs from given first colours (`refinement.history_from`).
HistoryFrom = Callable[[Any, Any, list[int], list[int]], History]
# Each node's source lines and op names, its own and its neighbours': what the user's code says
# a tensor is, kept by every reordering (not a colour: an edit moves lines).
Signature = Callable[[int], object]

# At most this many pairs are fixed one at a time, and this many nodes refined in all.
_INDIVIDUALS = 64
_BUDGET = 5_000_000
PARAMS, OUTPUTS = 0, 1


def individualized(
    graphs: tuple[Any, Any],
    firsts: tuple[list[int], list[int]],
    sides: tuple[Side, ...],
    history_from: HistoryFrom,
    sig: tuple[Signature, Signature],
) -> tuple[tuple[list[list[int]], list[list[int]]], list[Chosen]]:
    """The history of `graphs` from `firsts` with tied look-alikes individualized one pair at a
    time, and the classes a pair was chosen from: pairs inside one are a choice, not evidence (the
    caller keeps them in place), while what the choice split elsewhere is paired by context.
    The pair fixed is the one whose source lines agree, else the one that keeps its slot (weak
    evidence, but where nothing else differs the only one). Tried twice, fixing inputs first and
    outputs first: the smallest explanation wins (fewest items left unpaired, then fewest moved
    slots; inputs first on a draw, so that an output returning an input follows that input).
    `history_from` refines (the core's rounds; the tests' reference passes its own); `sig` gives
    each node's signature (`correspondence._meta_signature`)."""
    a, b = graphs
    plain = history_from(a, b, *firsts)
    if len(plain[0]) > rounds_for(len(a), len(b)) or not tied_pick(plain, sides, PARAMS, None):
        # Refinement stopped at its last round, not at a stable partition: the look-alikes may
        # be far apart (two layers of a model) and a slot guess would pair them, and what they feed.
        return plain, []
    best: tuple[tuple[int, int], tuple[list[list[int]], list[list[int]]], list[Chosen]] | None = None
    for order in (PARAMS, OUTPUTS):
        fa, fb = list(firsts[0]), list(firsts[1])
        hist = plain
        spent = 0
        chosen: list[Chosen] = []
        # Every tied class of a side at once first: where that leaves nothing unmatched (the
        # look-alikes stayed where they were, or the graphs are the same) one refinement does
        # what one pair at a time would, on a model with hundreds of tied weights.
        for side in (order, 1 - order):
            batch = _tied_classes(hist, sides[side])
            if not batch:
                continue
            ta, tb = list(fa), list(fb)
            for k, (ls, rs) in enumerate(batch):
                ls, rs = list(ls), list(rs)
                while ls:
                    i, j = _best_pair(ls, rs, sides[side], sig)
                    ls.remove(i)
                    rs.remove(j)
                    x, y = sides[side][0][i], sides[side][1][j]
                    salt = hash(("batch", side, k, i))
                    ta[x], tb[y] = hash((ta[x], salt)), hash((tb[y], salt))
            trial = history_from(a, b, ta, tb)
            if _orphans(trial, sides) <= _orphans(hist, sides):
                fa, fb, hist = ta, tb, trial
                chosen += [(side, frozenset(ls), frozenset(rs)) for ls, rs in batch]
        for step in range(_INDIVIDUALS):
            pick = tied_pick(hist, sides, order, sig)
            if not pick or spent > _BUDGET:
                break
            chosen.append(pick[1])  # type: ignore[arg-type]
            x, y = pick[0]  # type: ignore[misc]
            salt = hash(("individual", step))
            fa[x], fb[y] = hash((fa[x], salt)), hash((fb[y], salt))
            hist = history_from(a, b, fa, fb)
            spent += (len(fa) + len(fb)) * len(hist[0])
        cost = _cost(hist, sides)
        if best is None or cost < best[0]:
            best = (cost, hist, chosen)
        if cost == (0, 0):
            break  # every look-alike paired in place: nothing smaller to find
    assert best is not None
    return best[1], best[2]


def tied_pick(
    hist: tuple[list[list[int]], list[list[int]]],
    sides: tuple[Side, ...],
    order: int,
    sig: tuple[Signature, Signature] | None,
) -> list[tuple[int, int]]:
    """The pair of nodes to individualize next (empty: no tie left), from the first tied class
    of side `order` (else of the other side)."""
    for side in (order, 1 - order):
        tied = _tied_classes(hist, sides[side])
        if not tied:
            continue
        if sig is None:
            return [(-1, -1)]
        (ls, rs), (lnodes, rnodes) = tied[0], sides[side][:2]
        i, j = _best_pair(ls, rs, sides[side], sig)
        return [(lnodes[i], rnodes[j]), (side, frozenset(ls), frozenset(rs))]  # type: ignore[list-item]
    return []


def _tied_classes(
    hist: tuple[list[list[int]], list[list[int]]], side: Side
) -> list[tuple[list[int], list[int]]]:
    """The tied classes of one side: the same look-alikes, two or more, on both sides (not a class
    paired already, nor one of other sizes: inputs added or removed among them, whose pairing by
    slot would be a guess the rest follows)."""
    lnodes, rnodes, _, _, open_l, open_r = side
    groups = classes(hist[0][-1], hist[1][-1], lnodes, rnodes, open_l, open_r).values()
    return [(ls, rs) for ls, rs in groups if len(ls) == len(rs) > 1]


def _orphans(hist: tuple[list[list[int]], list[list[int]]], sides: tuple[Side, ...]) -> int:
    """Items whose class holds another number of items on the other side."""
    ca, cb = hist[0][-1], hist[1][-1]
    return sum(
        len(ls) + len(rs)
        for lnodes, rnodes, _, _, open_l, open_r in sides
        for ls, rs in classes(ca, cb, lnodes, rnodes, open_l, open_r).values()
        if len(ls) != len(rs)
    )


def _best_pair(ls: list[int], rs: list[int], side: Side, sig: tuple[Signature, Signature]) -> tuple[int, int]:
    """The pair of one tied class to fix: source lines agreeing first; then slots in order (the
    k-th look-alike of A with the k-th of B: an input inserted before them shifts their numbers,
    not their order), then the nearest slot."""
    lnodes, rnodes, lsl, rsl = side[:4]
    sa, sb = sig
    rank_l = {i: k for k, i in enumerate(sorted(ls, key=lsl.__getitem__))}
    rank_r = {j: k for k, j in enumerate(sorted(rs, key=rsl.__getitem__))}

    def key(p: tuple[int, int]) -> tuple[bool, int, int, int, int]:
        i, j = p
        same = sa(lnodes[i]) == sb(rnodes[j])
        return (not same, abs(rank_l[i] - rank_r[j]), abs(lsl[i] - rsl[j]), lsl[i], rsl[j])

    return min(((i, j) for i in ls for j in rs), key=key)


def _cost(
    hist: tuple[list[list[int]], list[list[int]]],
    sides: tuple[Side, ...],
) -> tuple[int, int]:
    """(items not paired one to one, paired items that moved) at the last round."""
    ca, cb = hist[0][-1], hist[1][-1]
    unpaired = moved = 0
    for lnodes, rnodes, lslot, rslot, open_l, open_r in sides:
        for ls, rs in classes(ca, cb, lnodes, rnodes, open_l, open_r).values():
            if len(ls) == len(rs) == 1:
                moved += lslot[ls[0]] != rslot[rs[0]]
            else:
                unpaired += len(ls) + len(rs)
    return unpaired, moved
