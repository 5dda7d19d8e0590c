"""Colour refinement in Python: the reference of the core's rounds (rust/src/refine*.rs) that
`xlagraph.match.refinement` calls, and `correspond` with these rounds in place of the core's."""

from __future__ import annotations

from collections.abc import Callable

from tests.oracles.collective_chain_reference import chain_edges_reference
from xlagraph.canonical import CanonicalComputation
from xlagraph.match.correspondence import Correspondence, correspond_graphs
from xlagraph.match.isomorphic import Refine, Refined
from xlagraph.match.multiply_by_one import identity_multiplies
from xlagraph.match.refinement import OUTPUT, ROUNDS, History, budget, first_colours, rounds_for
from xlagraph.opcodes import COMMUTATIVE

__all__ = [
    "Graph",
    "correspond_reference",
    "history_python",
    "history_python_from",
    "refine_python",
    "round_python",
]


def correspond_reference(left: CanonicalComputation, right: CanonicalComputation) -> Correspondence:
    """`correspondence.correspond` with every graph built and refined here: the core's answer, exactly."""
    graphs = (Graph(left), Graph(right), Graph(left, True), Graph(right, True))
    return correspond_graphs(left, right, graphs, _history_from, _refiner)


def _history_from(a: Graph, b: Graph, fa: list[int], fb: list[int]) -> History:
    return history_python_from(a, b, fa, fb, rounds_for(len(a), len(b)))


def _refiner(strict: bool, sa_: Graph, sb_: Graph) -> tuple[Refine, Callable[[], Refined]]:
    fa, fb = sa_.first_colours(strict), sb_.first_colours(strict)
    rounds = budget(sa_.size + sb_.size)

    def refine(sa: dict[int, int], sb: dict[int, int], ua: tuple[int, ...], ub: tuple[int, ...]) -> Refined:
        return refine_python(sa_, sb_, fa, fb, sa, sb, ua, ub, rounds)

    def shallow() -> Refined:
        """The first colours of the nodes an output reads (0 for the others), never stable."""
        ca = [c if live else 0 for c, live in zip(fa, reached(sa_, sa_.outputs), strict=True)]
        cb = [c if live else 0 for c, live in zip(fb, reached(sb_, sb_.outputs), strict=True)]
        return Refined(False, balanced(ca, cb), ca, cb)

    return refine, shallow


class Graph:
    """One computation as integer arrays: nodes are live instructions and parameters. The
    reference of the core's `RefineGraph` (rust/src/matching/from_handle.rs), node for node."""

    def __init__(self, comp: CanonicalComputation, see_through: bool = False) -> None:
        names = list(comp.order) + [p for p in comp.param_number if p not in comp.operands]
        index = {n: k for k, n in enumerate(names)}
        by_name = comp.computation.by_name
        self.names = names
        self.index = index
        self.operands: list[tuple[int, ...]] = []
        self.commutative: list[bool] = []
        users: list[list[tuple[int, int]]] = [[] for _ in names]
        self.loose: list[int] = []
        self.strict: list[int] = []
        self.meta: list[int] = []
        inputs = comp.param_number
        operands = comp.operands
        # `see_through`: `x * 1` is `x` (torch_xla's alpha on an add's second operand), such a
        # multiply keeps no edge and its users read x, so the order of a commutative add's terms
        # changes nothing. Only where refinement is run until stable (`isomorphic`): the 6-round
        # pairing of graphs that differ (a pipeline stage's moved blocks) reads the graph as it is.
        alias = identity_multiplies(comp).by_name if see_through else {}
        cut = chain_edges_reference(comp)  # torch_xla's token chain: the order, not what is reduced
        first: dict[tuple[object, ...], tuple[int, int]] = {}  # most instructions repeat a few kinds
        for k, n in enumerate(names):
            ins = by_name[n]
            if n in alias:
                ops: tuple[int, ...] = ()
            else:
                read = operands.get(n, ())
                if n in cut:
                    read = tuple(o for j, o in enumerate(read) if j not in cut[n])
                ops = tuple(index[o] for o in (alias.get(o, o) for o in read) if o in index)
            self.operands.append(ops)
            commutative = ins.opcode in COMMUTATIVE
            self.commutative.append(commutative)
            for j, o in enumerate(ops):
                users[o].append((k, -1 if commutative else j))
            key = (n in inputs, ins.opcode, ins.shape, ins.attributes, len(ins.called))
            colours = first.get(key)
            if colours is None:
                colours = first[key] = first_colours(*key)
            self.loose.append(colours[0])
            # A call of one function is not a call of another: the callees' hashes (in the
            # content key) enter the strict colour.
            self.strict.append(hash((colours[1], comp.keys.get(n))) if ins.called else colours[1])
            md = ins.metadata
            self.meta.append(hash((md.op_name, md.source_file, md.source_line)) if md else 0)
        marks = [0] * len(names)
        for o in comp.outputs:
            if o in index:
                marks[index[o]] += OUTPUT
        # Users as two parallel tuples (who, at which operand index), read at C speed per round.
        self.user_of = [tuple(u for u, _ in us) for us in users]
        self.user_at = [tuple(j for _, j in us) for us in users]
        self.marks = marks
        self.sorted_ops = [c and len(o) > 1 for c, o in zip(self.commutative, self.operands, strict=True)]
        self.outputs = [index.get(o, -1) for o in comp.outputs]
        self.params = [index[p] for p in comp.param_number if p in index]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def param_names(self) -> list[str]:
        return [self.names[k] for k in self.params]

    def first_colours(self, strict: bool) -> list[int]:
        return self.strict if strict else self.loose

    def neighbours(self, k: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return self.operands[k], self.user_of[k]

    @property
    def size(self) -> int:
        """Nodes plus operand edges: what one round costs."""
        return len(self.names) + sum(map(len, self.operands))


def reached(g: Graph, outputs: list[int]) -> list[bool]:
    """Per node, whether one of `outputs` (-1: none) reads it, or it is an input."""
    live = [False] * len(g.names)
    stack = [o for o in outputs if o >= 0]
    while stack:
        k = stack.pop()
        if not live[k]:
            live[k] = True
            stack += [o for o in g.operands[k] if not live[o]]
    for k in g.params:
        live[k] = True
    return live


def balanced(ca: list[int], cb: list[int]) -> bool:
    """Every colour but 0 (unreached) is as frequent in A as in B."""
    tally: dict[int, int] = {}
    for c in ca:
        tally[c] = tally.get(c, 0) + 1
    for c in cb:
        tally[c] = tally.get(c, 0) - 1
    return all(v == 0 for c, v in tally.items() if c != 0)


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
