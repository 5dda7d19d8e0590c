"""Inputs and outputs of two computations paired by their whole data-flow context.

Colour refinement (1-dimensional Weisfeiler-Lehman) over each computation's dataflow graph,
with the same hash on both sides so that colours compare across graphs:

* the first colour of an instruction is its opcode, element type, rank and attributes with
  every number taken out: what a changed constant, a changed batch size or a Python int baked in
  an attribute would break is left out (`strict` colours add full shapes and attributes back, as
  a second opinion that only ever splits ties);
* each round hashes an instruction's colour with its operands' colours (in operand order, sorted
  for commutative ops) and its users' colours with the operand index each reads it at (sorted,
  as a multiset); being
  an output adds one mark, not its slot: positions never enter a colour;
* rounds stop when neither partition splits further, or after `ROUNDS`; each is O(E).

Two instructions agree up to the last round whose colours are equal (refinement only splits).
Pairs are made from the deepest round down: a colour held by one input (output) on each side
pairs them; several alike on both sides in equal numbers at the deepest round are
interchangeable (their contexts are identical as far as data flow can tell: the Q, K and V
weights of one layer, or automorphic inputs). Such ties are individualized first
(`_individualized`: one pair fixed, refinement again, as nauty does), so that what each
look-alike reads or feeds is paired; the pairs left to a choice are returned as `tied`, for the
caller to keep in position. Only agreement at every round pairs (`_LOWEST`): partial agreement is no evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any
from weakref import WeakKeyDictionary

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout
from xlagraph.match.identity import Identities, identity_multiplies
from xlagraph.match.isomorphic import Explained, Refined, explain
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["ROUNDS", "Correspondence", "correspond"]

ROUNDS = 6
# Past this many instructions (a side), fewer rounds: each costs ~2 us an instruction in Python.
_LARGE, _LARGE_ROUNDS = 100_000, 3
# Refinement until stable (`isomorphic`) may visit this many nodes and edges of both graphs in
# all (rounds x size): 2,000 rounds for a 3,500-instruction Llama step (which is stable after
# 21 to 31), 66 at 120K (the benchmark pair needs 261: about 0.3 s a pass spent for nothing,
# where two far-apart layers stay alike and the 6-round pairing decides), 6 at 600K.
_VISITS = 30_000_000
# The search for look-alikes (`isomorphic`) may visit this many in all, over every refinement it
# asks for (seconds in the core); past it a refinement reads as unstable and the search gives up
# (the 6-round pairing decides, as before).
_SEARCH = 2_000_000_000
_GAVE_UP = Refined(False, False, (), ())
_CALLS = frozenset({"to_apply", "calls", "body", "condition", "branch_computations", "called_computations"})
# Attributes that name or number things outside the data flow (shardings are compared on their own).
_SKIP = frozenset({"sharding", "frontend_attributes", "backend_config", "channel_id", "metadata"})
_SKIP_INPUT = _SKIP | {"index"}
_DIGITS = re.compile(r"\d+")
_OUTPUT = hash("output")
_U64 = (1 << 64) - 1
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


# operand starts, operands, sorted?, user starts, users, user operand index, output marks
_Arrays = tuple[list[int], list[int], list[bool], list[int], list[int], list[int], list[int]]


class _Graph:
    """One computation as integer arrays: nodes are live instructions and parameters."""

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
        first: dict[tuple[object, ...], tuple[int, int]] = {}  # most instructions repeat a few kinds
        for k, n in enumerate(names):
            ins = by_name[n]
            if n in alias:
                ops: tuple[int, ...] = ()
            else:
                ops = tuple(index[o] for o in (alias.get(o, o) for o in operands.get(n, ())) if o in index)
            self.operands.append(ops)
            commutative = ins.opcode in COMMUTATIVE
            self.commutative.append(commutative)
            for j, o in enumerate(ops):
                users[o].append((k, -1 if commutative else j))
            key = (n in inputs, ins.opcode, ins.shape, ins.attributes, len(ins.called))
            colours = first.get(key)
            if colours is None:
                colours = first[key] = _first_colours(*key)
            self.loose.append(colours[0])
            # A call of one function is not a call of another: the callees' hashes (in the
            # content key) enter the strict colour.
            self.strict.append(hash((colours[1], comp.keys.get(n))) if ins.called else colours[1])
            md = ins.metadata
            self.meta.append(hash((md.op_name, md.source_file, md.source_line)) if md else 0)
        marks = [0] * len(names)
        for o in comp.outputs:
            if o in index:
                marks[index[o]] += _OUTPUT
        # Users as two parallel tuples (who, at which operand index), read at C speed per round.
        self.user_of = [tuple(u for u, _ in us) for us in users]
        self.user_at = [tuple(j for _, j in us) for us in users]
        self.marks = marks
        self.sorted_ops = [c and len(o) > 1 for c, o in zip(self.commutative, self.operands, strict=True)]
        self.outputs = [index.get(o, -1) for o in comp.outputs]
        self.params = [index[p] for p in comp.param_number if p in index]
        self._arrays: (
            tuple[list[int], list[int], list[bool], list[int], list[int], list[int], list[int]] | None
        ) = None

    @property
    def size(self) -> int:
        """Nodes plus operand edges: what one round costs."""
        return len(self.names) + sum(map(len, self.operands))

    def arrays(self) -> _Arrays:
        """The graph as the compiled core's `refine_history` reads it: operands and users as CSR
        (built once: both first colourings refine the same graph)."""
        if self._arrays is None:
            self._arrays = self._build_arrays()
        return self._arrays

    def _build_arrays(self) -> _Arrays:
        op_start, user_start = [0], [0]
        for ops in self.operands:
            op_start.append(op_start[-1] + len(ops))
        for us in self.user_of:
            user_start.append(user_start[-1] + len(us))
        ops = [o for row in self.operands for o in row]
        users = [u for row in self.user_of for u in row]
        at = [j for row in self.user_at for j in row]
        return op_start, ops, self.sorted_ops, user_start, users, at, _unsigned(self.marks)


@lru_cache(maxsize=1 << 16)
def _first_colours(
    is_input: bool, opcode: str, shape: str, attributes: tuple[tuple[str, str], ...], called: int
) -> tuple[int, int]:
    """(loose, strict) first colours of an instruction (see the module docstring). Cached: the
    graphs of one run share most kinds of instruction (the core asks once per kind and graph)."""
    shape = strip_layout(shape).replace(" ", "")
    etype = shape.split("[", 1)[0] if not shape.startswith("(") else "tuple"
    rank = shape.count(",") + 1 if "[]" not in shape else 0
    # An element of a tuple parameter is an input like any other: its index is a position.
    opcode, skip = ("parameter", _SKIP_INPUT) if is_input else (opcode, _SKIP)
    attrs = tuple((key, v) for key, v in attributes if key not in skip and key not in _CALLS)
    loose_attrs = tuple((key, _DIGITS.sub("#", v)) for key, v in attrs)
    return hash((opcode, etype, rank, loose_attrs, called)), hash((opcode, shape, attrs, called))


def _round(g: _Graph, col: list[int]) -> list[int]:
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


def _history(a: _Graph, b: _Graph, first: str) -> tuple[list[list[int]], list[list[int]]]:
    """Colours of both graphs per round, until neither partition splits any more. The compiled
    core's rounds give other colour values but the same classes at every round (all the caller
    reads), ~100x faster; `_history_python` is the reference."""
    return _history_from(a, b, getattr(a, first), getattr(b, first))


def _history_from(
    a: _Graph, b: _Graph, fa: list[int], fb: list[int]
) -> tuple[list[list[int]], list[list[int]]]:
    """`_history` from the first colours `fa` and `fb` (individualized ones among them)."""
    rounds = _rounds(len(a.names), len(b.names))
    core = _core()
    if core is None:
        return _history_python_from(a, b, fa, fb, rounds)
    ha, hb = core.refine_history(a.arrays(), b.arrays(), _unsigned(fa), _unsigned(fb), rounds)
    return ha, hb


def _rounds(na: int, nb: int) -> int:
    """The rounds of the 6-round pairing for graphs of `na` and `nb` nodes. A history as long
    as that plus one stopped at the cap, not at a stable partition (3 rounds past 100K: a
    history of 4 was taken for stable against the cap of 6, and a 120K pair individualized
    its capped ties in Python for minutes)."""
    return ROUNDS if max(na, nb) <= _LARGE else _LARGE_ROUNDS


def _unsigned(colours: list[int]) -> list[int]:
    return [c & _U64 for c in colours]


def _core() -> Any:
    try:
        from xlagraph import _core as core
    except ImportError:  # a source checkout without the compiled core
        return None
    return core if hasattr(core, "refine_history") else None


def _history_python(
    a: _Graph, b: _Graph, first: str, rounds: int = ROUNDS
) -> tuple[list[list[int]], list[list[int]]]:
    return _history_python_from(a, b, getattr(a, first), getattr(b, first), rounds)


def _history_python_from(
    a: _Graph, b: _Graph, fa: list[int], fb: list[int], rounds: int = ROUNDS
) -> tuple[list[list[int]], list[list[int]]]:
    ha, hb = [fa], [fb]
    counts = (len(set(ha[0])), len(set(hb[0])))
    for _ in range(rounds):
        na, nb = _round(a, ha[-1]), _round(b, hb[-1])
        now = (len(set(na)), len(set(nb)))
        if now == counts:
            break  # stable: further rounds rename colours, they split nothing
        ha.append(na)
        hb.append(nb)
        counts = now
    return ha, hb


class _Pruned:
    """A `_Graph` without some outputs (`_refine_python`): one output mark less on each, and the
    nodes no remaining output reaches left out, with their edges."""

    def __init__(self, g: _Graph, unmark: tuple[int, ...]) -> None:
        self.marks = list(g.marks)
        left = list(g.outputs)
        for u in unmark:
            self.marks[u] -= _OUTPUT
            if u in left:
                left.remove(u)
        live = [False] * len(g.names)
        stack = [o for o in left if o >= 0]
        while stack:
            k = stack.pop()
            if not live[k]:
                live[k] = True
                stack += [o for o in g.operands[k] if not live[o]]
        for k in g.params:
            live[k] = True
        self.live = live
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


def _refine_python(
    a: _Graph,
    b: _Graph,
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
    views = (_Pruned(a, unmark_a), _Pruned(b, unmark_b))

    def start(f: list[int], salts: dict[int, int], view: _Pruned) -> list[int]:
        col = [hash((c, salts[k])) if k in salts else c for k, c in enumerate(f)]
        return [c if live else 0 for c, live in zip(col, view.live, strict=True)]

    ca, cb = start(fa, salts_a, views[0]), start(fb, salts_b, views[1])
    count = len(set(ca) | set(cb))
    stable = False
    for _ in range(rounds):
        na = [c if live else 0 for c, live in zip(_round(views[0], ca), views[0].live, strict=True)]  # type: ignore[arg-type]
        nb = [c if live else 0 for c, live in zip(_round(views[1], cb), views[1].live, strict=True)]  # type: ignore[arg-type]
        now = len(set(na) | set(nb))
        if now == count:
            stable = True
            break
        ca, cb, count = na, nb, now
    tally: dict[int, int] = {}
    for c in ca:
        tally[c] = tally.get(c, 0) + 1
    for c in cb:
        tally[c] = tally.get(c, 0) - 1
    balanced = all(v == 0 for c, v in tally.items() if c != 0)
    return Refined(stable, balanced, ca, cb)


def _assign(
    lefts: list[int], rights: list[int], ha: list[list[int]], hb: list[list[int]], lowest: int | None
) -> tuple[dict[int, int], dict[int, int], set[int]]:
    """Pairs (left item -> right item), their depth, and the tied left items. `lefts`/`rights`
    are node indices in slot order; items are positions in those lists."""
    free_l, free_r = set(range(len(lefts))), set(range(len(rights)))
    pairs: dict[int, int] = {}
    depth: dict[int, int] = {}
    tied: set[int] = set()
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
        for ls, rs in groups.values():
            if not rs:
                continue
            if len(ls) == len(rs) == 1:
                pairs[ls[0]], depth[ls[0]] = rs[0], r
            elif len(ls) == len(rs) and r == deepest:
                for i, j in zip(ls, rs, strict=True):  # interchangeable: in slot order
                    pairs[i], depth[i] = j, r
                    tied.add(i)
            else:
                continue
            free_l.difference_update(ls)
            free_r.difference_update(rs)
    return pairs, depth, tied


# Individualization (as in nauty's canonical labelling): where refinement leaves look-alikes
# tied, one pair of them is fixed with a fresh colour and refinement runs again, which pairs
# what each reads or feeds. At most this many pairs, and this many nodes refined in all.
_INDIVIDUALS = 64
_BUDGET = 5_000_000
_PARAMS, _OUTPUTS = 0, 1
# One side (inputs or outputs): nodes of A and B by position, their slots, the open positions.
_Side = tuple[list[int], list[int], list[int], list[int], set[int], set[int]]
# A class a pair was individualized from: its side and its open positions in A and in B.
_Chosen = tuple[int, frozenset[int], frozenset[int]]


def _signatures(g: _Graph) -> list[int]:
    """Each node's source lines and op names, its own and its neighbours': what the user's
    code says a tensor is, kept by every reordering (not a colour: an edit moves lines)."""
    meta = g.meta
    return [
        hash((meta[k], tuple(sorted(meta[u] for u in us)), tuple(sorted(meta[o] for o in ops))))
        for k, (us, ops) in enumerate(zip(g.user_of, g.operands, strict=True))
    ]


def _classes(
    ca: list[int], cb: list[int], lnodes: list[int], rnodes: list[int], open_l: set[int], open_r: set[int]
) -> dict[int, tuple[list[int], list[int]]]:
    """Open positions of one side (inputs or outputs) grouped by their last colour."""
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for i in sorted(open_l):
        groups.setdefault(ca[lnodes[i]], ([], []))[0].append(i)
    for j in sorted(open_r):
        groups.setdefault(cb[rnodes[j]], ([], []))[1].append(j)
    return groups


def _individualized(
    a: _Graph,
    b: _Graph,
    first: str,
    sides: tuple[_Side, ...],
) -> tuple[tuple[list[list[int]], list[list[int]]], list[_Chosen]]:
    """The history of `first` colours with tied look-alikes individualized one pair at a time,
    and the classes a pair was chosen from: pairs inside one are a choice, not evidence (the
    caller keeps them in place), while what the choice split elsewhere is paired by context.
    The pair fixed is the one whose source lines agree, else the one that keeps its slot (weak
    evidence, but where nothing else differs the only one). Tried twice, fixing inputs first and
    outputs first: the smallest explanation wins (fewest items left unpaired, then fewest moved
    slots; inputs first on a draw, so that an output returning an input follows that input)."""
    plain = _history(a, b, first)
    if len(plain[0]) > _rounds(len(a.names), len(b.names)) or not _tied_pick(plain, sides, _PARAMS, None):
        # Refinement stopped at its last round, not at a stable partition: the look-alikes may
        # be far apart (two layers of a model) and a slot guess would pair them, and what they feed.
        return plain, []
    sig = (_signatures(a), _signatures(b))
    best: tuple[tuple[int, int], tuple[list[list[int]], list[list[int]]], list[_Chosen]] | None = None
    for order in (_PARAMS, _OUTPUTS):
        fa, fb = list(getattr(a, first)), list(getattr(b, first))
        hist = plain
        spent = 0
        chosen: list[_Chosen] = []
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
            trial = _history_from(a, b, ta, tb)
            if _orphans(trial, sides) <= _orphans(hist, sides):
                fa, fb, hist = ta, tb, trial
                chosen += [(side, frozenset(ls), frozenset(rs)) for ls, rs in batch]
        for step in range(_INDIVIDUALS):
            pick = _tied_pick(hist, sides, order, sig)
            if not pick or spent > _BUDGET:
                break
            chosen.append(pick[1])  # type: ignore[arg-type]
            x, y = pick[0]  # type: ignore[misc]
            salt = hash(("individual", step))
            fa[x], fb[y] = hash((fa[x], salt)), hash((fb[y], salt))
            hist = _history_from(a, b, fa, fb)
            spent += (len(fa) + len(fb)) * len(hist[0])
        cost = _cost(hist, sides)
        if best is None or cost < best[0]:
            best = (cost, hist, chosen)
        if cost == (0, 0):
            break  # every look-alike paired in place: nothing smaller to find
    assert best is not None
    return best[1], best[2]


def _tied_pick(
    hist: tuple[list[list[int]], list[list[int]]],
    sides: tuple[_Side, ...],
    order: int,
    sig: tuple[list[int], list[int]] | None,
) -> list[tuple[int, int]]:
    """The pair of nodes to individualize next (empty: no tie left), from the first tied class
    of side `order` (else of the other side)."""
    ca, cb = hist[0][-1], hist[1][-1]
    for side in (order, 1 - order):
        lnodes, rnodes, _, _, open_l, open_r = sides[side]
        for ls, rs in _classes(ca, cb, lnodes, rnodes, open_l, open_r).values():
            if len(ls) != len(rs) or len(ls) < 2:
                # Paired already, or not the same look-alikes on both sides: inputs added or
                # removed among them, whose pairing by slot would be a guess the rest follows.
                continue
            if sig is None:
                return [(-1, -1)]
            i, j = _best_pair(ls, rs, sides[side], sig)
            return [(lnodes[i], rnodes[j]), (side, frozenset(ls), frozenset(rs))]  # type: ignore[list-item]
    return []


def _tied_classes(
    hist: tuple[list[list[int]], list[list[int]]], side: _Side
) -> list[tuple[list[int], list[int]]]:
    """The tied classes of one side: the same look-alikes, two or more, on both sides."""
    lnodes, rnodes, _, _, open_l, open_r = side
    groups = _classes(hist[0][-1], hist[1][-1], lnodes, rnodes, open_l, open_r).values()
    return [(ls, rs) for ls, rs in groups if len(ls) == len(rs) > 1]


def _orphans(hist: tuple[list[list[int]], list[list[int]]], sides: tuple[_Side, ...]) -> int:
    """Items whose class holds another number of items on the other side."""
    ca, cb = hist[0][-1], hist[1][-1]
    return sum(
        len(ls) + len(rs)
        for lnodes, rnodes, _, _, open_l, open_r in sides
        for ls, rs in _classes(ca, cb, lnodes, rnodes, open_l, open_r).values()
        if len(ls) != len(rs)
    )


def _best_pair(
    ls: list[int], rs: list[int], side: _Side, sig: tuple[list[int], list[int]]
) -> tuple[int, int]:
    """The pair of one tied class to fix: source lines agreeing first; then slots in order (the
    k-th look-alike of A with the k-th of B: an input inserted before them shifts their numbers,
    not their order), then the nearest slot."""
    lnodes, rnodes, lsl, rsl = side[:4]
    sa, sb = sig
    rank_l = {i: k for k, i in enumerate(sorted(ls, key=lsl.__getitem__))}
    rank_r = {j: k for k, j in enumerate(sorted(rs, key=rsl.__getitem__))}

    def key(p: tuple[int, int]) -> tuple[bool, int, int, int, int]:
        i, j = p
        same = sa[lnodes[i]] == sb[rnodes[j]]
        return (not same, abs(rank_l[i] - rank_r[j]), abs(lsl[i] - rsl[j]), lsl[i], rsl[j])

    return min(((i, j) for i in ls for j in rs), key=key)


def _cost(
    hist: tuple[list[list[int]], list[list[int]]],
    sides: tuple[_Side, ...],
) -> tuple[int, int]:
    """(items not paired one to one, paired items that moved) at the last round."""
    ca, cb = hist[0][-1], hist[1][-1]
    unpaired = moved = 0
    for lnodes, rnodes, lslot, rslot, open_l, open_r in sides:
        for ls, rs in _classes(ca, cb, lnodes, rnodes, open_l, open_r).values():
            if len(ls) == len(rs) == 1:
                moved += lslot[ls[0]] != rslot[rs[0]]
            else:
                unpaired += len(ls) + len(rs)
    return unpaired, moved


# Both sides' colours are kept for as long as the computations live: `diff` asks twice (the
# matcher, then the interface), a report compares each graph with several others.
_CACHE: WeakKeyDictionary[CanonicalComputation, WeakKeyDictionary[CanonicalComputation, Correspondence]] = (
    WeakKeyDictionary()
)


def correspond(left: CanonicalComputation, right: CanonicalComputation) -> Correspondence:
    """Inputs and outputs of `left` and `right` paired by context (see the module docstring)."""
    inner = _CACHE.setdefault(left, WeakKeyDictionary())
    found = inner.get(right)
    if found is None:
        found = inner[right] = _correspond(left, right)
    return found


_History = tuple[list[list[int]], list[list[int]]]


def _correspond(left: CanonicalComputation, right: CanonicalComputation) -> Correspondence:
    core = _core()
    if core is not None and hasattr(core, "refine_graph"):
        found = _correspond_compiled(core, left, right)
        if found is not None:
            return found
    else:
        core = None
    a, b = _Graph(left), _Graph(right)
    seen = (_Graph(left, True), _Graph(right, True))  # the same nodes, multiplies by one seen through
    # Where the core is there, refinement until stable runs there (on these very nodes: the
    # core builds its graph in `_Graph`'s order); the rounds in Python are the reference.
    compiled = tuple(_compiled_graphs(core, [(left, True), (right, True)])) if core is not None else None
    every = (list(range(len(a.names))), list(range(len(b.names))))
    slot_of = (
        (
            [left.param_number[a.names[k]] for k in a.params],
            [right.param_number[b.names[k]] for k in b.params],
        ),
        (list(range(len(a.outputs))), list(range(len(b.outputs)))),
    )

    def colours(first: str, nodes: _Nodes, opened: _Opened) -> _Got:
        sides = tuple(
            (lnodes, rnodes, slots[0], slots[1], set(open_l), set(open_r))
            for (lnodes, rnodes), slots, (open_l, open_r) in zip(nodes, slot_of, opened, strict=True)
        )
        sa_, sb_ = seen
        fa, fb = getattr(sa_, first), getattr(sb_, first)
        size = sa_.size + sb_.size
        spent = [0]

        def refine(
            sa: dict[int, int], sb: dict[int, int], ua: tuple[int, ...], ub: tuple[int, ...]
        ) -> Refined:
            if compiled is not None:  # the same nodes in the same order: the core refines them
                if spent[0] > _SEARCH:
                    return _GAVE_UP
                ca, cb = compiled
                got = ca.refine_with(
                    cb,
                    first == "strict",
                    _budget(size),
                    every[0],
                    every[1],
                    [(k, v & _U64) for k, v in sa.items()],
                    [(k, v & _U64) for k, v in sb.items()],
                    list(ua),
                    list(ub),
                    stable_only=True,  # `explain` reads an unstable answer only as such
                )
                spent[0] += (got[0] + 1) * size
                return Refined(got[1], got[2], got[3], got[4])
            return _refine_python(sa_, sb_, fa, fb, sa, sb, ua, ub, _budget(size))

        def shallow() -> Refined:
            return _refine_python(sa_, sb_, fa, fb, {}, {}, (), (), 0)

        sig = _signatures(sa_), _signatures(sb_)
        found = explain(
            refine,
            shallow,
            sides,  # type: ignore[arg-type]
            (sig[0].__getitem__, sig[1].__getitem__),
            _same_value(left, right),
        )
        if found is not None:
            return _got(found)
        hist, chosen = _individualized(a, b, first, sides)
        return hist, chosen, frozenset(), frozenset()

    found = _pair(
        ([a.names[k] for k in a.params], [b.names[k] for k in b.params]),
        (a.params, b.params),
        (a.outputs, b.outputs),
        colours,
    )
    assert found is not None  # the Python path always pairs
    return found


# Each side's nodes (inputs, outputs) of A and B, and the positions still open on each side.
_Nodes = tuple[tuple[list[int], list[int]], ...]
_Opened = list[tuple[list[int], list[int]]]


_Got = tuple[_History, list[_Chosen], frozenset[int], frozenset[int]]


def _pair(
    names: tuple[list[str], list[str]],
    inputs: tuple[list[int], list[int]],
    outputs: tuple[list[int], list[int]],
    colours: Callable[[str, _Nodes, _Opened], _Got | None],
) -> Correspondence | None:
    """Pairs of inputs (their `names`, nodes `inputs`) and of output slots (nodes `outputs`, -1
    for none) from the colours each pass gets (`colours(first, nodes, opened)`: the history and
    the classes a pair was chosen from, or None to give up). Full shapes and attributes first:
    what they pair is the same tensor in the same context. What they cannot pair (a size
    changed, or a neighbour did) gets the colours blind to sizes and numbers."""
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
    for first, lowest in zip(("strict", "loose"), _LOWEST, strict=True):
        if not any(open_l and open_r for open_l, open_r in opened):
            break  # nothing left to pair: the size-blind pass is not even computed
        got = colours(first, nodes, opened)
        if got is None:
            return None
        (ha, hb), chosen, gone_l, gone_r = got
        if gone_l or gone_r:  # outputs whose removal made the graphs alike: no counterpart
            dropped |= gone_l
            born |= gone_r
            open_l, open_r = opened[1]
            opened[1] = ([i for i in open_l if i not in gone_l], [j for j in open_r if j not in gone_r])
        for n, (lkeys, rkeys, lnodes, rnodes, out) in enumerate(sides):
            open_l, open_r = opened[n]
            if not (open_l and open_r):
                continue
            pairs, d, t = _assign([lnodes[i] for i in open_l], [rnodes[j] for j in open_r], ha, hb, lowest)
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


# The core's graph of a computation (`refine_graph`), kept while the computation lives: a report
# pairs each graph with several others.
_GRAPHS: WeakKeyDictionary[CanonicalComputation, Any] = WeakKeyDictionary()
# The same with multiplies by one seen through (`_Graph(comp, see_through=True)`), where it has any.
_SEEN: WeakKeyDictionary[CanonicalComputation, Any] = WeakKeyDictionary()


def _compiled_graph(core: Any, comp: CanonicalComputation, see_through: bool = False) -> Any:
    return _compiled_graphs(core, [(comp, see_through)])[0]


def _compiled_graphs(core: Any, wanted: list[tuple[CanonicalComputation, bool]]) -> list[Any]:
    """The core's graph of each `(computation, multiplies by one seen through)`: those not kept
    yet are built in one call, on two threads where large (`refine_graphs_of`)."""
    slots = []
    for comp, see_through in wanted:
        # The multiplies by one are looked for only where they are seen through.
        identities = identity_multiplies(comp) if see_through else _AS_THEY_ARE
        if identities.by_name:
            slots.append((comp, _SEEN, identities))
        else:
            slots.append((comp, _GRAPHS, _AS_THEY_ARE))
    if hasattr(core, "refine_graphs_of"):
        missing: dict[tuple[int, int], tuple[CanonicalComputation, Any, Identities]] = {}
        for comp, cache, identities in slots:
            if comp.core is not None and comp not in cache:
                missing.setdefault((id(comp), id(cache)), (comp, cache, identities))
        if missing:
            built = core.refine_graphs_of(
                [(comp.core, list(ids.by_index)) for comp, _, ids in missing.values()],
                COMMUTATIVE,
                _first_colours,
                _OUTPUT,
            )
            for (comp, cache, _), graph in zip(missing.values(), built, strict=True):
                cache[comp] = graph
    return [_built(core, comp, cache, identities) for comp, cache, identities in slots]


_AS_THEY_ARE = Identities({}, ())


def _built(
    core: Any,
    comp: CanonicalComputation,
    cache: WeakKeyDictionary[CanonicalComputation, Any],
    identities: Identities,
) -> Any:
    found = cache.get(comp)
    if found is None and comp.core is not None and hasattr(core, "refine_graph_of"):
        # Built from the core's own handle on `comp` (rust/src/matching/from_handle.rs): the same graph.
        found = cache[comp] = core.refine_graph_of(
            comp.core, COMMUTATIVE, _first_colours, _OUTPUT, list(identities.by_index)
        )
    if found is None:
        found = cache[comp] = core.refine_graph(
            comp.computation.by_name,
            comp.order,
            comp.operands,
            comp.param_number,
            comp.outputs,
            COMMUTATIVE,
            _first_colours,
            _OUTPUT,
            comp.keys,
            identities.by_name,
        )
    return found


def _correspond_compiled(
    core: Any, left: CanonicalComputation, right: CanonicalComputation
) -> Correspondence | None:
    """`_correspond` with the graphs built and refined in the core: the same first colours (asked
    of `_first_colours` once per kind of instruction), the same classes at every round, and no
    Python list per node. Only the colours of inputs and outputs come back: `_assign` reads no
    others, so nodes are renumbered as positions in those picks. None where look-alikes are left
    tied: the Python graphs individualize them."""
    a, b, *seen = _compiled_graphs(core, [(left, False), (right, False), (left, True), (right, True)])
    a_inputs, b_inputs, a_outputs, b_outputs = a.params, b.params, a.outputs, b.outputs
    pick_a = sorted(set(a_inputs) | {k for k in a_outputs if k >= 0})
    pick_b = sorted(set(b_inputs) | {k for k in b_outputs if k >= 0})
    at_a, at_b = {k: i for i, k in enumerate(pick_a)}, {k: i for i, k in enumerate(pick_b)}
    rounds = _rounds(len(a), len(b))
    histories: dict[str, _History] = {}

    def history(first: str) -> _History:
        if first not in histories:
            histories[first] = core.refine_picked(a, b, first == "strict", rounds, pick_a, pick_b)
        return histories[first]

    def untied(first: str, nodes: _Nodes, opened: _Opened) -> _Got | None:
        # Graphs refinement cannot tell apart (up to an output dropped or added) are paired by
        # `isomorphic` here; otherwise look-alikes tied at a stable partition are individualized
        # by the Python graphs only; where none is left, the two paths pair alike.
        sides = tuple(
            (lnodes, rnodes, slots[0], slots[1], set(o[0]), set(o[1]))
            for (lnodes, rnodes), slots, o in zip(nodes, slot_of, opened, strict=True)
        )
        strict = first == "strict"
        sa_, sb_ = seen  # refinement until stable sees multiplies by one through
        size = sa_.size + sb_.size
        budget = _budget(size)
        spent = [0]

        def refine(
            sa: dict[int, int], sb: dict[int, int], ua: tuple[int, ...], ub: tuple[int, ...]
        ) -> Refined:
            if spent[0] > _SEARCH:
                return _GAVE_UP
            got = sa_.refine_with(
                sb_,
                strict,
                budget,
                pick_a,
                pick_b,
                [(pick_a[k], v & _U64) for k, v in sa.items()],
                [(pick_b[k], v & _U64) for k, v in sb.items()],
                [pick_a[k] for k in ua],
                [pick_b[k] for k in ub],
                stable_only=True,  # `explain` reads an unstable answer only as such
            )
            spent[0] += (got[0] + 1) * size
            return Refined(got[1], got[2], got[3], got[4])

        def shallow() -> Refined:
            got = sa_.refine_with(sb_, strict, 0, pick_a, pick_b)
            return Refined(got[1], got[2], got[3], got[4])

        found = explain(
            refine,
            shallow,
            sides,  # type: ignore[arg-type]
            _compiled_signatures(left, right, pick_a, pick_b),
            _same_value(left, right),
        )
        if found is not None:
            return _got(found)
        hist = history(first)
        probe = tuple(
            (lnodes, rnodes, lnodes, rnodes, set(o[0]), set(o[1]))
            for (lnodes, rnodes), o in zip(nodes, opened, strict=True)
        )
        if len(hist[0]) <= rounds and _tied_pick(hist, probe, _PARAMS, None):
            return None
        return hist, [], frozenset(), frozenset()

    inputs = ([at_a[k] for k in a_inputs], [at_b[k] for k in b_inputs])
    outputs = ([at_a.get(k, -1) for k in a_outputs], [at_b.get(k, -1) for k in b_outputs])
    slot_of = (
        ([left.param_number[n] for n in a.param_names], [right.param_number[n] for n in b.param_names]),
        (list(range(len(a_outputs))), list(range(len(b_outputs)))),
    )
    return _pair((a.param_names, b.param_names), inputs, outputs, untied)


def _got(found: Explained) -> _Got:
    """`isomorphic`'s answer as `_pair` reads it: one round of colours, the classes chosen from."""
    ca, cb = found.colours
    return ([list(ca)], [list(cb)]), list(found.chosen), found.dropped, found.born


def _same_value(left: CanonicalComputation, right: CanonicalComputation) -> Callable[[int, int, int], bool]:
    """Whether output slots i and j of A (side 0) or of B (1) compute the same value: the same
    structural hash, parameter numbers included."""

    def same(side: int, i: int, j: int) -> bool:
        comp = left if side == 0 else right
        return comp.h1.get(comp.outputs[i]) == comp.h1.get(comp.outputs[j])

    return same


def _budget(size: int) -> int:
    """Rounds allowed to refinement until stable over graphs of `size` nodes and edges."""
    return max(ROUNDS, _VISITS // max(size, 1))


def _compiled_signatures(
    left: CanonicalComputation, right: CanonicalComputation, pick_a: list[int], pick_b: list[int]
) -> tuple[Callable[[int], int], Callable[[int], int]]:
    """`_signatures` of the picked nodes (by position), computed on demand from the canonical
    form: only look-alikes left tied ask for them."""
    return _meta_signature(left, pick_a), _meta_signature(right, pick_b)


def _meta_signature(comp: CanonicalComputation, pick: list[int]) -> Callable[[int], int]:
    memo: dict[int, int] = {}
    state: dict[str, Any] = {}

    def meta(n: str) -> int:
        md = comp.computation.by_name[n].metadata
        return hash((md.op_name, md.source_file, md.source_line)) if md else 0

    def signature(pos: int) -> int:
        if pos not in memo:
            if not state:
                names = list(comp.order) + [p for p in comp.param_number if p not in comp.operands]
                alias = identity_multiplies(comp).by_name  # the edges `_Graph` has
                users: dict[str, list[str]] = {}
                for u, ops in comp.operands.items():
                    if u not in alias:
                        for o in ops:
                            users.setdefault(alias.get(o, o), []).append(u)
                state["names"], state["users"], state["alias"] = names, users, alias
            n = state["names"][pick[pos]]
            alias = state["alias"]
            ops = () if n in alias else tuple(alias.get(o, o) for o in comp.operands.get(n, ()))
            memo[pos] = hash(
                (
                    meta(n),
                    tuple(sorted(meta(u) for u in state["users"].get(n, ()))),
                    tuple(sorted(meta(o) for o in ops)),
                )
            )
        return memo[pos]

    return signature
