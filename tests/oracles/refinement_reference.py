"""Colour refinement in Python: the reference of the core's rounds (rust/src/refine*.rs) that
`xlagraph.match.refinement` calls, and `correspond` with these rounds in place of the core's."""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.match.correspondence import Correspondence, correspond_graphs
from xlagraph.match.isomorphic import Refine, Refined
from xlagraph.match.refinement import OUTPUT, ROUNDS, Graph, History, balanced, budget, reached, rounds_for

__all__ = ["correspond_reference", "history_python", "history_python_from", "refine_python", "round_python"]


def correspond_reference(left: CanonicalComputation, right: CanonicalComputation) -> Correspondence:
    """`correspondence.correspond` with every refinement run here: the core's answer, exactly."""
    return correspond_graphs(left, right, _history_from, _refiner)


def _history_from(a: Graph, b: Graph, fa: list[int], fb: list[int]) -> History:
    return history_python_from(a, b, fa, fb, rounds_for(len(a.names), len(b.names)))


def _refiner(first: str, sa_: Graph, sb_: Graph) -> Refine:
    fa, fb = getattr(sa_, first), getattr(sb_, first)
    rounds = budget(sa_.size + sb_.size)

    def refine(sa: dict[int, int], sb: dict[int, int], ua: tuple[int, ...], ub: tuple[int, ...]) -> Refined:
        return refine_python(sa_, sb_, fa, fb, sa, sb, ua, ub, rounds)

    return refine


class Pruned:
    """A `Graph` without some outputs (`refine_python`): one
    output mark less on each, and the nodes no remaining output reaches left out, with their
    edges."""

    def __init__(self, g: Graph, unmark: tuple[int, ...]) -> None:
        self.marks = list(g.marks)
        left = list(g.outputs)
        for u in unmark:
            self.marks[u] -= OUTPUT
            if u in left:
                left.remove(u)
        live = self.live = reached(g, left)
        self.operands = [
            tuple(o for o in ops if live[o]) if live[k] else () for k, ops in enumerate(g.operands)
        ]
        self.sorted_ops = g.sorted_ops
        pairs = [
            [(u, j) for u, j in zip(uo, ua, strict=True) if live[u] and live[k]]
            for k, (uo, ua) in enumerate(zip(g.user_of, g.user_at, strict=True))
        ]
        self.user_of = [tuple(u for u, _ in row) for row in pairs]
        self.user_at = [tuple(j for _, j in row) for row in pairs]


def round_python(g: Graph, col: list[int]) -> list[int]:
    """One refinement step. Users enter as a sorted tuple of (colour, operand index) (a multiset,
    in any order), operands as a tuple (in order; sorted for commutative ops). Not a sum of the
    users' hashes: Python's tuple hash is nearly additive in its last item, so {(A, 1), (B, 0)}
    and {(A, 0), (B, 1)} summed alike for some hash seeds, and a model's input `x` passed as
    operand 0 of its users was not told from weights passed as operand 1."""
    get = col.__getitem__
    out = []
    rows = zip(col, g.operands, g.sorted_ops, g.user_of, g.user_at, g.marks, strict=True)
    for c, ops, srt, uo, ua, mark in rows:
        oc = tuple(sorted(map(get, ops))) if srt else tuple(map(get, ops))
        uc = tuple(sorted(zip(map(get, uo), ua, strict=True))) if uo else ()
        out.append(hash((c, oc, uc, mark)))
    return out


def history_python(
    a: Graph, b: Graph, first: str, rounds: int = ROUNDS
) -> tuple[list[list[int]], list[list[int]]]:
    return history_python_from(a, b, getattr(a, first), getattr(b, first), rounds)


def history_python_from(
    a: Graph, b: Graph, fa: list[int], fb: list[int], rounds: int = ROUNDS
) -> tuple[list[list[int]], list[list[int]]]:
    ha, hb = [fa], [fb]
    counts = (len(set(ha[0])), len(set(hb[0])))
    for _ in range(rounds):
        na, nb = round_python(a, ha[-1]), round_python(b, hb[-1])
        now = (len(set(na)), len(set(nb)))
        if now == counts:
            break  # stable: further rounds rename colours, they split nothing
        ha.append(na)
        hb.append(nb)
        counts = now
    return ha, hb


def refine_python(
    a: Graph,
    b: Graph,
    fa: list[int],
    fb: list[int],
    salts_a: dict[int, int],
    salts_b: dict[int, int],
    unmark_a: tuple[int, ...],
    unmark_b: tuple[int, ...],
    rounds: int,
) -> Refined:
    """The reference of the core's `RefineGraph.refine_with`: refinement of both graphs together
    until the joint partition is stable (or `rounds`), with salted first colours and outputs
    dropped; nodes left out get colour 0."""
    views = (Pruned(a, unmark_a), Pruned(b, unmark_b))

    def start(f: list[int], salts: dict[int, int], view: Pruned) -> list[int]:
        col = [hash((c, salts[k])) if k in salts else c for k, c in enumerate(f)]
        return [c if live else 0 for c, live in zip(col, view.live, strict=True)]

    ca, cb = start(fa, salts_a, views[0]), start(fb, salts_b, views[1])
    count = len(set(ca) | set(cb))
    stable = False
    for _ in range(rounds):
        na = [c if live else 0 for c, live in zip(round_python(views[0], ca), views[0].live, strict=True)]  # type: ignore[arg-type]
        nb = [c if live else 0 for c, live in zip(round_python(views[1], cb), views[1].live, strict=True)]  # type: ignore[arg-type]
        now = len(set(na) | set(nb))
        if now == count:
            stable = True
            break
        ca, cb, count = na, nb, now
    return Refined(stable, balanced(ca, cb), ca, cb)


def same_classes(h1: list[list[int]], h2: list[list[int]]) -> bool:
    """Two colourings of one node list make the same classes at every round."""
    if len(h1) != len(h2):
        return False
    for c1, c2 in zip(h1, h2, strict=True):
        forward: dict[int, int] = {}
        backward: dict[int, int] = {}
        for x, y in zip(c1, c2, strict=True):
            if forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:
                return False
    return True
