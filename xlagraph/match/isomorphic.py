"""Pairing where refinement cannot tell the two graphs apart: look-alikes told apart by search.

Refinement until the joint partition is stable; where every class is *balanced* (as many nodes
of A as of B), a tie is settled by individualization, as nauty does, and a pair another candidate
could replace too is *tied* (its slots decide); where an output dropped (or added) unbalances the
graphs, the smallest removal that balances them again explains it. The rules, their order and
why are docs/matching.md (2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

__all__ = ["Chosen", "Explained", "Refined", "Side", "classes", "explain"]


@dataclass(frozen=True)
class Refined:
    """One refinement: stable (the joint partition stopped splitting within the rounds allowed),
    balanced (every class as large in A as in B), and the last colours by position."""

    stable: bool
    balanced: bool
    a: Sequence[int]
    b: Sequence[int]


# (salts of A's positions, of B's, A's outputs dropped, B's outputs dropped (positions)) -> colours
Refine = Callable[[dict[int, int], dict[int, int], tuple[int, ...], tuple[int, ...]], Refined]
# One side (inputs or outputs): positions of A and B by item, their slots, the open items.
Side = tuple[list[int], list[int], list[int], list[int], set[int], set[int]]
# A class a pair was chosen from: its side and its items in A and in B.
Chosen = tuple[int, frozenset[int], frozenset[int]]
# Each node's source lines and op names by position in A and in B: (its own and its neighbours',
# its own alone).
Signatures = tuple[Callable[[int], tuple[int, int]], Callable[[int], tuple[int, int]]]
# Each node's dimensions (by position) in A and in B; None for a tuple or a token.
Sizes = tuple[Callable[[int], list[int] | None], Callable[[int], list[int] | None]]
_NO_SIZES: Sizes = (lambda _: None, lambda _: None)
# Whether a node (by position) of A, of B is an input nothing reads and no output returns.
Unread = tuple[Callable[[int], bool], Callable[[int], bool]]
_NONE_UNREAD: Unread = (lambda _: False, lambda _: False)


@dataclass(frozen=True)
class Explained:
    colours: tuple[Sequence[int], Sequence[int]]
    chosen: tuple[Chosen, ...]
    dropped: frozenset[int]  # A's output items with no counterpart
    born: frozenset[int]  # B's output items with no counterpart


_OUTPUTS = 1
# At most this many candidates for a dropped output, and this many individualized pairs.
_CANDIDATES = 12
_INDIVIDUALS = 64


def explain(
    refine: Refine,
    shallow: Callable[[], Refined],
    sides: tuple[Side, Side],
    sig: Signatures,
    same: Callable[[int, int, int], bool] = lambda side, i, j: i == j,
    sizes: Sizes = _NO_SIZES,
    unread: Unread = _NONE_UNREAD,
    written: Refine | None = None,
) -> Explained | None:
    """The colours with look-alikes individualized (see the module docstring), or None where
    refinement did not stabilize or no removal `_removals` tries balances the graphs.
    `shallow()`: the first colours, before any round (which outputs could be the dropped one);
    `same(side, i, j)`: output items i and j of A (side 0) or B (1) compute the same value;
    `sizes`: each node's dimensions, which the size-blind colours leave out; `unread`: inputs
    nothing reads, whose slot is all that pairs them; `written`: `refine` over the graphs as
    written (`refine`'s see multiplies by one through), which may tell look-alikes apart."""
    plain = refine({}, {}, (), ())
    if not plain.stable:
        return None
    if plain.balanced:
        return _individualized(refine, sides, sig, sizes, (), (), written)
    found = [
        (_cost(got, sides, sizes, unread), got)
        for drop_a, drop_b in _removals(refine, shallow(), sides)
        if (got := _individualized(refine, sides, sig, sizes, drop_a, drop_b, written)) is not None
    ]
    if not found:
        return None
    least = min(cost for cost, _ in found)
    best = [got for cost, got in found if cost == least]
    # Two removals that explain the graphs equally well (look-alikes the colours cannot tell
    # apart: values of other sizes or constants) leave which one went unsettled, unless the two
    # compute the same value (two zero buffers: either is right).
    first = best[0]
    for other in best[1:]:
        for side, a, b in ((0, first.dropped, other.dropped), (1, first.born, other.born)):
            if len(a) != len(b) or not all(any(same(side, i, j) for j in b) for i in a):
                return None
    if first.dropped and first.born:
        # One output of each side set aside is as well one output computed another way
        # (resharded, retyped): the rest is paired by these colours, those two are left open.
        return Explained(first.colours, first.chosen, frozenset(), frozenset())
    return first


def _removals(
    refine: Refine, shallow: Refined, sides: tuple[Side, Side]
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Outputs (items of A, of B) whose removal balances the graphs: one on the side that has
    more outputs of a first colour than the other, or one on each side; where none does and a
    side has exactly two outputs more (two look-alikes dropped: a family's first and middle
    member, an SGD update of each of two experts), two of that side."""
    lpos, rpos, _, _, open_l, open_r = sides[_OUTPUTS]
    (surplus_a, extra_a), (surplus_b, extra_b) = _surplus(shallow, lpos, rpos, open_l, open_r)
    if len(surplus_a) > _CANDIDATES or len(surplus_b) > _CANDIDATES or not (surplus_a or surplus_b):
        return []
    trials: list[tuple[tuple[int, ...], tuple[int, ...]]] = [((i,), ()) for i in surplus_a]
    trials += [((), (j,)) for j in surplus_b]
    if surplus_a and surplus_b and len(surplus_a) * len(surplus_b) <= _CANDIDATES:
        trials += [((i,), (j,)) for i in surplus_a for j in surplus_b]
    out = _balancing(refine, lpos, rpos, trials)
    if not out:
        twos: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        if extra_a == 2 and not surplus_b:
            twos = [(da, ()) for da in combinations(surplus_a, 2)]
        elif extra_b == 2 and not surplus_a:
            twos = [((), db) for db in combinations(surplus_b, 2)]
        out = _balancing(refine, lpos, rpos, twos)
    return out


def _balancing(
    refine: Refine, lpos: list[int], rpos: list[int], trials: list[tuple[tuple[int, ...], tuple[int, ...]]]
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The trials (outputs of A, of B to remove) after which the graphs refine alike."""
    out = []
    for da, db in trials:
        got = refine({}, {}, tuple(lpos[i] for i in da), tuple(rpos[j] for j in db))
        if got.stable and got.balanced:
            out.append((da, db))
    return out


def _surplus(
    shallow: Refined, lpos: list[int], rpos: list[int], open_l: set[int], open_r: set[int]
) -> tuple[tuple[list[int], int], tuple[list[int], int]]:
    """Output items in classes (by first colour) that hold more items on their side, and how
    many more each side holds in all."""
    count: dict[int, int] = {}
    for i in open_l:
        count[shallow.a[lpos[i]]] = count.get(shallow.a[lpos[i]], 0) + 1
    for j in open_r:
        count[shallow.b[rpos[j]]] = count.get(shallow.b[rpos[j]], 0) - 1
    more_a, more_b = sum(c for c in count.values() if c > 0), -sum(c for c in count.values() if c < 0)
    return (
        (sorted(i for i in open_l if count[shallow.a[lpos[i]]] > 0), more_a),
        (sorted(j for j in open_r if count[shallow.b[rpos[j]]] < 0), more_b),
    )


def _individualized(
    refine: Refine,
    sides: tuple[Side, Side],
    sig: Signatures,
    sizes: Sizes,
    drop_a: tuple[int, ...],
    drop_b: tuple[int, ...],
    written: Refine | None = None,
) -> Explained | None:
    lout, rout = sides[_OUTPUTS][0], sides[_OUTPUTS][1]
    unmark = (tuple(lout[i] for i in drop_a), tuple(rout[j] for j in drop_b))
    gone = ((set(), set()), (set(drop_a), set(drop_b)))  # set aside, by side: outputs only
    open_sides = [
        (lp, rp, ls, rs, ol - gone[n][0], orr - gone[n][1])
        for n, (lp, rp, ls, rs, ol, orr) in enumerate(sides)
    ]
    got = refine({}, {}, *unmark)
    if not (got.stable and got.balanced):
        return None
    search = (refine, open_sides, sig, sizes, unmark, written)
    found = _search(search, got, {}, {})
    if found is None:
        return None
    # Look-alikes that only sizes or source lines tell apart, in one tied class, while another
    # class of them is tied by nothing but slots (a batch change makes every size of two swapped
    # updates differ; their scalar divisors have no size): the search fixes the first class by
    # slot and the rest follows that guess, crossing what the evidence paired. Where the answer
    # crosses such a pair, the named pairs are fixed first and the search runs on what is left.
    evidence = [
        (n, i, j)
        for n, side in enumerate(open_sides)
        for ls, rs in _tied(got, side)
        for i, j in _named(ls, rs, side, sig, sizes).items()
    ]
    if evidence and not _honours(found[0], open_sides, evidence):
        ta = {open_sides[n][0][i]: hash(("named", n, i)) for n, i, _ in evidence}
        tb = {open_sides[n][1][j]: hash(("named", n, i)) for n, i, j in evidence}
        first = refine(ta, tb, *unmark)
        if first.stable and first.balanced:
            again = _search(search, first, ta, tb)
            if again is not None and _honours(again[0], open_sides, evidence):
                found = again
    got, chosen = found
    return Explained((got.a, got.b), tuple(chosen), frozenset(drop_a), frozenset(drop_b))


def _honours(got: Refined, sides: list[Side], pairs: list[tuple[int, int, int]]) -> bool:
    """Whether every pair (side, item of A, item of B) ends in one class of `got`'s colours."""
    return all(got.a[sides[n][0][i]] == got.b[sides[n][1][j]] for n, i, j in pairs)


# `_individualized`'s refinement, open sides, signatures, sizes, outputs set aside, and `written`.
_Search = tuple[Refine, list[Side], Signatures, Sizes, tuple[tuple[int, ...], tuple[int, ...]], Refine | None]


def _search(
    search: _Search, got: Refined, salts_a: dict[int, int], salts_b: dict[int, int]
) -> tuple[Refined, list[Chosen]] | None:
    """The colours from `got` (refined from the salts given) with every tied class individualized,
    and the classes a pair was chosen from; None where no pair of a class keeps the graphs alike."""
    refine, open_sides, sig, sizes, unmark, written = search
    salts_a, salts_b = dict(salts_a), dict(salts_b)
    # Whether the graphs as written are alike at all (else they tell no look-alikes apart):
    # asked once, where a tie first has two candidates.
    as_written: bool | None = None if written is not None else False
    chosen: list[Chosen] = []
    # Inputs before outputs, so that an output returning an input follows that input. Every
    # tied class of a side at once first: where the look-alikes stayed in place that keeps the
    # balance in one refinement, on a model with hundreds of tied weights.
    for side in (0, _OUTPUTS):
        batch = _tied(got, open_sides[side])
        if not batch:
            continue
        ta, tb = dict(salts_a), dict(salts_b)
        choice: list[Chosen] = []
        for k, (ls, rs) in enumerate(batch):
            ls, rs = list(ls), list(rs)
            named = _named(ls, rs, open_sides[side], sig, sizes)
            choice.append(
                (side, frozenset(i for i in ls if i not in named), frozenset(rs) - set(named.values()))
            )
            while ls:
                i, j = _best_pair(ls, rs, open_sides[side], sig, sizes)
                ls.remove(i)
                rs.remove(j)
                salt = hash(("batch", side, k, i))
                ta[open_sides[side][0][i]] = tb[open_sides[side][1][j]] = salt
        trial = refine(ta, tb, *unmark)
        if trial.stable and trial.balanced:
            salts_a, salts_b, got = ta, tb, trial
            chosen += choice
    for step in range(_INDIVIDUALS):
        pick = next(((side, c) for side in (0, _OUTPUTS) for c in _tied(got, open_sides[side])), None)
        if pick is None:
            break
        side, (ls, rs) = pick
        lp, rp = open_sides[side][0], open_sides[side][1]
        key = _pair_key(ls, rs, open_sides[side], sig, sizes)
        i = min(((a, b) for a in ls for b in rs), key=key)[0]
        order = sorted(rs, key=lambda j: key((i, j)))
        kept: list[tuple[int, Refined]] = []
        for j in order:
            salt = hash(("individual", step))
            trial = refine({**salts_a, lp[i]: salt}, {**salts_b, rp[j]: salt}, *unmark)
            if trial.stable and trial.balanced:
                kept.append((j, trial))
                if len(kept) == 2:
                    break
        if not kept:
            return None  # no pair of the class keeps the graphs alike: not a tie search can settle
        j, got = kept[0]
        if as_written is None and len(kept) > 1:
            as_written = _alike(written({}, {}, *unmark))  # type: ignore[misc]
        if as_written and len(kept) > 1:
            # Look-alikes once `x * 1` is read as `x` (two crops summed, one term scaled by
            # torch's alpha of 1) may not be alike as written, where the `* 1` stays on the same
            # one in both graphs: the pair the graphs as written keep alike, where it is the one.
            salt = hash(("individual", step))
            agree = [
                (k, g)
                for k, g in kept
                if _alike(written({**salts_a, lp[i]: salt}, {**salts_b, rp[k]: salt}, *unmark))  # type: ignore[misc]
            ]
            if len(agree) == 1:
                j, got = agree[0]
        salts_a[lp[i]] = salts_b[rp[j]] = hash(("individual", step))
        if len(kept) > 1 and _named(ls, rs, open_sides[side], sig, sizes).get(i) != j:
            # Another choice would do as well and neither the source lines nor the sizes name
            # this one: interchangeable as far as data flow can tell, a choice.
            chosen.append((side, frozenset(ls), frozenset(rs)))
    return got, chosen


def _alike(got: Refined) -> bool:
    return got.stable and got.balanced


def _named(ls: list[int], rs: list[int], side: Side, sig: Signatures, sizes: Sizes) -> dict[int, int]:
    """Pairs of a tied class whose source lines (their own and their neighbours') are the same
    and held by no other item of the class: the user's code says which is which. Then, of the
    rest, by their own lines alone (an output dropped took a look-alike's users with it); then
    pairs each the other's one nearest in size (fewest dimensions differing, fewer than with
    another): look-alikes to the size-blind colours whose shapes say which is which."""
    lp, rp = side[0], side[1]
    named: dict[int, int] = {}
    rest_l, rest_r = list(ls), list(rs)
    for part in (0, 1):
        by_a: dict[int, list[int]] = {}
        by_b: dict[int, list[int]] = {}
        for i in rest_l:
            by_a.setdefault(sig[0](lp[i])[part], []).append(i)
        for j in rest_r:
            by_b.setdefault(sig[1](rp[j])[part], []).append(j)
        named.update(
            {v[0]: by_b[k][0] for k, v in by_a.items() if k and len(v) == 1 and len(by_b.get(k, ())) == 1}
        )
        rest_l = [i for i in ls if i not in named]
        rest_r = [j for j in rs if j not in named.values()]
    apart = {(i, j): _apart(sizes[0](lp[i]), sizes[1](rp[j])) for i in rest_l for j in rest_r}

    def nearest(far: list[tuple[int, int]]) -> int | None:  # (dimensions apart, item)
        far.sort()
        return far[0][1] if len(far) > 1 and far[0][0] < far[1][0] else None

    for i in rest_l:
        j = nearest([(apart[i, j], j) for j in rest_r])
        if j is not None and nearest([(apart[k, j], k) for k in rest_l]) == i:
            named[i] = j
    return named


def classes(
    ca: Sequence[int],
    cb: Sequence[int],
    lnodes: list[int],
    rnodes: list[int],
    open_l: set[int],
    open_r: set[int],
) -> dict[int, tuple[list[int], list[int]]]:
    """Open positions of one side (inputs or outputs) grouped by their last colour."""
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for i in sorted(open_l):
        groups.setdefault(ca[lnodes[i]], ([], []))[0].append(i)
    for j in sorted(open_r):
        groups.setdefault(cb[rnodes[j]], ([], []))[1].append(j)
    return groups


def _tied(got: Refined, side: Side) -> list[tuple[list[int], list[int]]]:
    """Classes of open items with two or more on both sides (equal numbers: balanced)."""
    groups = classes(got.a, got.b, *side[:2], *side[4:]).values()
    return [(ls, rs) for ls, rs in groups if len(ls) > 1 and len(rs) > 1]


def _apart(x: list[int] | None, y: list[int] | None) -> int:
    """Dimensions that differ between two shapes of one rank (0 where either is unknown): look-alikes
    to the size-blind colours are told apart by the sizes a changed batch left as they were (a
    slice of width 1 and one of width 2 stay so)."""
    if x is None or y is None or len(x) != len(y):
        return 0
    return sum(p != q for p, q in zip(x, y, strict=True))


def _best_pair(ls: list[int], rs: list[int], side: Side, sig: Signatures, sizes: Sizes) -> tuple[int, int]:
    return min(((i, j) for i in ls for j in rs), key=_pair_key(ls, rs, side, sig, sizes))


def _pair_key(
    ls: list[int], rs: list[int], side: Side, sig: Signatures, sizes: Sizes
) -> Callable[[tuple[int, int]], tuple[bool, bool, int, int, int, int, int, int]]:
    """How well a pair of a tied class agrees, least first: source lines agreeing first (their own
    and their neighbours', then their own alone); then the fewest dimensions differing; then slots
    in order (the k-th look-alike of A with the k-th of B: an input inserted before them shifts
    their numbers, not their order); then the nearest slot."""
    lp, rp, lsl, rsl = side[:4]
    rank_l = {i: k for k, i in enumerate(sorted(ls, key=lsl.__getitem__))}
    rank_r = {j: k for k, j in enumerate(sorted(rs, key=rsl.__getitem__))}
    sa, sb = {i: sig[0](lp[i]) for i in ls}, {j: sig[1](rp[j]) for j in rs}

    def key(p: tuple[int, int]) -> tuple[bool, bool, int, int, int, int, int, int]:
        i, j = p
        apart = _apart(sizes[0](lp[i]), sizes[1](rp[j]))
        return (
            sa[i][0] != sb[j][0],
            sa[i][1] != sb[j][1],
            apart,
            abs(rank_l[i] - rank_r[j]),
            abs(lsl[i] - rsl[j]),
            rsl[j],
            i,
            j,
        )

    return key


def _cost(
    found: Explained, sides: tuple[Side, Side], sizes: Sizes, unread: Unread
) -> tuple[int, int, int, int, int]:
    """(items not paired one to one, dimensions that differ between paired items, unread inputs
    paired with another slot, pairs of paired items that cross, paired items whose slot changed):
    an output dropped shifts the later slots, it reorders nothing; nor does it change a size the
    rest keeps, nor move an input it leaves unread (B keeps it where it was, unread)."""
    unpaired = moved = apart = astray = 0
    pairs: list[tuple[int, int]] = []
    for n, (lp, rp, lsl, rsl, open_l, open_r) in enumerate(sides):
        gone_l = found.dropped if n == _OUTPUTS else frozenset()
        gone_r = found.born if n == _OUTPUTS else frozenset()
        for ls, rs in classes(*found.colours, lp, rp, open_l - gone_l, open_r - gone_r).values():
            if len(ls) == len(rs) == 1:
                i, j = ls[0], rs[0]
                moved += lsl[i] != rsl[j]
                apart += _apart(sizes[0](lp[i]), sizes[1](rp[j]))
                astray += n != _OUTPUTS and lsl[i] != rsl[j] and (unread[0](lp[i]) or unread[1](rp[j]))
                pairs.append((n * (1 << 32) + lsl[i], n * (1 << 32) + rsl[j]))
            elif len(ls) != len(rs):
                unpaired += abs(len(ls) - len(rs))
    pairs.sort()
    crossing = sum(1 for k, (_, b) in enumerate(pairs) for _, d in pairs[k + 1 :] if d < b)
    return unpaired, apart, astray, crossing, moved
