"""Inputs and output slots of two computations paired from their colours, deepest round first."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from xlagraph.canonical import CanonicalComputation
from xlagraph.match.individualize import Chosen
from xlagraph.match.isomorphic import Explained
from xlagraph.match.refinement import History

__all__ = ["Correspondence", "Got", "Nodes", "Opened", "got_from", "pair_sides", "same_value"]

# The shallowest round whose agreement pairs: only agreement at every depth counts (None). A
# shallower one pairs look-alikes that are not the same tensor: blocks of other widths look alike
# around their weights, and a pipeline stage that holds other blocks must not have them paired
# with its own. What it leaves unpaired the matcher and the positions decide, as before.
_LOWEST: tuple[int | None, ...] = (None, None)


@dataclass(frozen=True)
class Correspondence:
    """`params`: left parameter name -> right one; `outputs`: left output slot -> right slot;
    `depth`: for each paired left name (inputs) or slot (outputs), the deepest round at which the
    two agree; `tied`: left names/slots with look-alikes, for the caller to keep in place;
    `dropped`/`born`: output slots of A / B that have no counterpart (an output dropped, added)."""

    params: Mapping[str, str]
    outputs: Mapping[int, int]
    depth: Mapping[object, int]
    tied: frozenset[object]
    # Output slots of A (`dropped`) and of B (`born`) whose removal made the graphs alike.
    dropped: frozenset[int] = frozenset()
    born: frozenset[int] = frozenset()


# Each side's nodes (inputs, outputs) of A and B, and the positions still open on each side.
Nodes = tuple[tuple[list[int], list[int]], ...]
Opened = list[tuple[list[int], list[int]]]


Got = tuple[History, list[Chosen], frozenset[int], frozenset[int]]


def pair_sides(
    names: tuple[list[str], list[str]],
    inputs: tuple[list[int], list[int]],
    outputs: tuple[list[int], list[int]],
    colours: Callable[[str, Nodes, Opened], Got | None],
    rounds: int,
    defer: bool = True,
) -> Correspondence | None:
    """Pairs of inputs (their `names`, nodes `inputs`) and of output slots (nodes `outputs`, -1
    for none) from the colours each pass gets (`colours(first, nodes, opened)`: the history and
    the classes a pair was chosen from, or None to give up). Full shapes and attributes first:
    what they pair is the same tensor in the same context. What they cannot pair (a size
    changed, or a neighbour did) gets the colours blind to sizes and numbers.

    A history longer than `rounds` stopped at the cap, not at a stable partition: look-alikes
    still alike there are not shown interchangeable (two layers' statistics alike for 11 hops
    under a changed batch), so the full-shape pass leaves them (`defer`) to the size-blind one,
    which refines until stable where the graphs balance. Where it stops at the cap too, the
    pairing is made again without deferring: a capped tie in slot order, as before."""
    params: dict[str, str] = {}
    slots: dict[int, int] = {}
    depth: dict[object, int] = {}
    tied: set[object] = set()
    sides = (
        (names[0], names[1], inputs[0], inputs[1], params),
        (list(range(len(outputs[0]))), list(range(len(outputs[1]))), outputs[0], outputs[1], slots),
    )
    nodes = tuple((lnodes, rnodes) for _, _, lnodes, rnodes, _ in sides)
    opened = [
        ([i for i, k in enumerate(lnodes) if k >= 0], [j for j, k in enumerate(rnodes) if k >= 0])
        for lnodes, rnodes in nodes
    ]
    dropped: set[int] = set()
    born: set[int] = set()
    deferred = False
    for first, lowest in zip(("strict", "loose"), _LOWEST, strict=True):
        if not any(open_l and open_r for open_l, open_r in opened):
            break  # nothing left to pair: the size-blind pass is not even computed
        got = colours(first, nodes, opened)
        if got is None:
            return None
        (ha, hb), chosen, gone_l, gone_r = got
        if first == "loose" and deferred and len(ha) > rounds:
            return pair_sides(names, inputs, outputs, colours, rounds, defer=False)
        if gone_l or gone_r:  # outputs whose removal made the graphs alike: no counterpart
            dropped |= gone_l
            born |= gone_r
            open_l, open_r = opened[1]
            opened[1] = ([i for i in open_l if i not in gone_l], [j for j in open_r if j not in gone_r])
        for n, (lkeys, rkeys, lnodes, rnodes, out) in enumerate(sides):
            open_l, open_r = opened[n]
            if not (open_l and open_r):
                continue
            in_order = not defer or first == "loose" or len(ha) <= rounds
            lefts, rights = [lnodes[i] for i in open_l], [rnodes[j] for j in open_r]
            pairs, d, t, left_tied = _assign(lefts, rights, ha, hb, lowest, in_order)
            deferred |= left_tied
            for i, j in pairs.items():
                key = lkeys[open_l[i]]
                out[key] = rkeys[open_r[j]]  # type: ignore[index]
                depth[key] = d[i]
                if i in t or any(
                    side == n and open_l[i] in ls and open_r[j] in rs for side, ls, rs in chosen
                ):
                    tied.add(key)
            done_l = {open_l[i] for i in pairs}
            done_r = {open_r[j] for j in pairs.values()}
            opened[n] = ([i for i in open_l if i not in done_l], [j for j in open_r if j not in done_r])
    return Correspondence(
        MappingProxyType(params),
        MappingProxyType(slots),
        MappingProxyType(depth),
        frozenset(tied),
        frozenset(dropped),
        frozenset(born),
    )


def _assign(
    lefts: list[int],
    rights: list[int],
    ha: list[list[int]],
    hb: list[list[int]],
    lowest: int | None,
    in_order: bool,
) -> tuple[dict[int, int], dict[int, int], set[int], bool]:
    """Pairs (left item -> right item), their depth, the tied left items, and whether look-alikes
    were left unpaired. `lefts`/`rights` are node indices in slot order; items are positions in
    those lists. Look-alikes as many on both sides at the deepest round pair in slot order only
    where `in_order`."""
    free_l, free_r = set(range(len(lefts))), set(range(len(rights)))
    pairs: dict[int, int] = {}
    depth: dict[int, int] = {}
    tied: set[int] = set()
    left_tied = False
    # Past the last round the partition is stable: agreeing there is agreeing at every depth.
    if lowest is None:
        lowest = len(ha) - 1
    deepest = max(len(ha) - 1, lowest)
    for r in range(deepest, lowest - 1, -1):
        ca, cb = ha[min(r, len(ha) - 1)], hb[min(r, len(hb) - 1)]
        groups: dict[int, tuple[list[int], list[int]]] = {}
        for i in sorted(free_l):
            groups.setdefault(ca[lefts[i]], ([], []))[0].append(i)
        for j in sorted(free_r):
            g = groups.get(cb[rights[j]])
            if g is not None:
                g[1].append(j)
        for colour, (ls, rs) in groups.items():
            if not rs or colour == 0:  # left out of the refinement (an output set aside): no pair
                continue
            if len(ls) == len(rs) == 1:
                pairs[ls[0]], depth[ls[0]] = rs[0], r
            elif len(ls) == len(rs) and r == deepest:
                if not in_order:
                    left_tied = True
                    continue
                for i, j in zip(ls, rs, strict=True):  # interchangeable: in slot order
                    pairs[i], depth[i] = j, r
                    tied.add(i)
            else:
                continue
            free_l.difference_update(ls)
            free_r.difference_update(rs)
    return pairs, depth, tied, left_tied


def got_from(found: Explained) -> Got:
    """`isomorphic`'s answer as `pair_sides` reads it: one round of colours, the classes chosen from."""
    ca, cb = found.colours
    return ([list(ca)], [list(cb)]), list(found.chosen), found.dropped, found.born


def same_value(left: CanonicalComputation, right: CanonicalComputation) -> Callable[[int, int, int], bool]:
    """Whether output slots i and j of A (side 0) or of B (1) compute the same value: the same
    structural hash, parameter numbers included."""

    def same(side: int, i: int, j: int) -> bool:
        comp = left if side == 0 else right
        return comp.h1.get(comp.outputs[i]) == comp.h1.get(comp.outputs[j])

    return same
