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
weights of one layer, or automorphic inputs) and are returned as `tied`, for the caller to keep
in position. Only agreement at every round pairs (`_LOWEST`): partial agreement is no evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from weakref import WeakKeyDictionary

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout

__all__ = ["ROUNDS", "Correspondence", "correspond"]

ROUNDS = 6
# Past this many instructions (a side), fewer rounds: each costs ~2 us an instruction in Python.
_LARGE, _LARGE_ROUNDS = 100_000, 3
_COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor", "ne", "eq"})
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
    two agree; `tied`: left names/slots with look-alikes, for the caller to keep in place."""

    params: Mapping[str, str]
    outputs: Mapping[int, int]
    depth: Mapping[object, int]
    tied: frozenset[object]


# operand starts, operands, sorted?, user starts, users, user operand index, output marks
_Arrays = tuple[list[int], list[int], list[bool], list[int], list[int], list[int], list[int]]


class _Graph:
    """One computation as integer arrays: nodes are live instructions and parameters."""

    def __init__(self, comp: CanonicalComputation) -> None:
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
        inputs = comp.param_number
        operands = comp.operands
        first: dict[tuple[object, ...], tuple[int, int]] = {}  # most instructions repeat a few kinds
        for k, n in enumerate(names):
            ins = by_name[n]
            ops = tuple(index[o] for o in operands.get(n, ()) if o in index)
            self.operands.append(ops)
            commutative = ins.opcode in _COMMUTATIVE
            self.commutative.append(commutative)
            for j, o in enumerate(ops):
                users[o].append((k, -1 if commutative else j))
            key = (n in inputs, ins.opcode, ins.shape, ins.attributes, len(ins.called))
            colours = first.get(key)
            if colours is None:
                colours = first[key] = _first_colours(*key)
            self.loose.append(colours[0])
            self.strict.append(colours[1])
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


def _first_colours(
    is_input: bool, opcode: str, shape: str, attributes: tuple[tuple[str, str], ...], called: int
) -> tuple[int, int]:
    """(loose, strict) first colours of an instruction (see the module docstring)."""
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
    rounds = ROUNDS if max(len(a.names), len(b.names)) <= _LARGE else _LARGE_ROUNDS
    core = _core()
    if core is None:
        return _history_python(a, b, first, rounds)
    ha, hb = core.refine_history(
        a.arrays(), b.arrays(), _unsigned(getattr(a, first)), _unsigned(getattr(b, first)), rounds
    )
    return ha, hb


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
    ha, hb = [getattr(a, first)], [getattr(b, first)]
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
        return _correspond_compiled(core, left, right)
    a, b = _Graph(left), _Graph(right)
    histories: dict[str, _History] = {}

    def history(first: str) -> _History:
        if first not in histories:
            histories[first] = _history(a, b, first)
        return histories[first]

    names = ([a.names[k] for k in a.params], [b.names[k] for k in b.params])
    return _pair(names, (a.params, b.params), (a.outputs, b.outputs), history)


def _pair(
    names: tuple[list[str], list[str]],
    inputs: tuple[list[int], list[int]],
    outputs: tuple[list[int], list[int]],
    history: Callable[[str], _History],
) -> Correspondence:
    """Pairs of inputs (their `names`, nodes `inputs`) and of output slots (nodes `outputs`, -1
    for none) from the colours `history(first)` gives for those nodes."""
    params: dict[str, str] = {}
    slots: dict[int, int] = {}
    depth: dict[object, int] = {}
    tied: set[object] = set()
    sides = (
        (names[0], names[1], inputs[0], inputs[1], params),
        (list(range(len(outputs[0]))), list(range(len(outputs[1]))), outputs[0], outputs[1], slots),
    )
    for lkeys, rkeys, lnodes, rnodes, out in sides:
        # Full shapes and attributes first: what they pair is the same tensor in the same
        # context. What they cannot pair (a size changed, or a neighbour did) gets the colours
        # blind to sizes and numbers.
        open_l = [i for i, k in enumerate(lnodes) if k >= 0]
        open_r = [j for j, k in enumerate(rnodes) if k >= 0]
        for first, lowest in zip(("strict", "loose"), _LOWEST, strict=True):
            if not (open_l and open_r):
                break  # nothing left to pair: the size-blind pass is not even computed
            ha, hb = history(first)
            pairs, d, t = _assign([lnodes[i] for i in open_l], [rnodes[j] for j in open_r], ha, hb, lowest)
            for i, j in pairs.items():
                key = lkeys[open_l[i]]
                out[key] = rkeys[open_r[j]]  # type: ignore[index]
                depth[key] = d[i]
                if i in t:
                    tied.add(key)
            done_l = {open_l[i] for i in pairs}
            done_r = {open_r[j] for j in pairs.values()}
            open_l = [i for i in open_l if i not in done_l]
            open_r = [j for j in open_r if j not in done_r]
    return Correspondence(
        MappingProxyType(params), MappingProxyType(slots), MappingProxyType(depth), frozenset(tied)
    )


# The core's graph of a computation (`refine_graph`), kept while the computation lives: a report
# pairs each graph with several others.
_GRAPHS: WeakKeyDictionary[CanonicalComputation, Any] = WeakKeyDictionary()


def _compiled_graph(core: Any, comp: CanonicalComputation) -> Any:
    found = _GRAPHS.get(comp)
    if found is None:
        found = _GRAPHS[comp] = core.refine_graph(
            comp.computation.by_name,
            comp.order,
            comp.operands,
            comp.param_number,
            comp.outputs,
            _COMMUTATIVE,
            _first_colours,
            _OUTPUT,
        )
    return found


def _correspond_compiled(
    core: Any, left: CanonicalComputation, right: CanonicalComputation
) -> Correspondence:
    """`_correspond` with the graphs built and refined in the core: the same first colours (asked
    of `_first_colours` once per kind of instruction), the same classes at every round, and no
    Python list per node. Only the colours of inputs and outputs come back: `_assign` reads no
    others, so nodes are renumbered as positions in those picks."""
    a, b = _compiled_graph(core, left), _compiled_graph(core, right)
    a_inputs, b_inputs, a_outputs, b_outputs = a.params, b.params, a.outputs, b.outputs
    pick_a = sorted(set(a_inputs) | {k for k in a_outputs if k >= 0})
    pick_b = sorted(set(b_inputs) | {k for k in b_outputs if k >= 0})
    at_a, at_b = {k: i for i, k in enumerate(pick_a)}, {k: i for i, k in enumerate(pick_b)}
    rounds = ROUNDS if max(len(a), len(b)) <= _LARGE else _LARGE_ROUNDS
    histories: dict[str, _History] = {}

    def history(first: str) -> _History:
        if first not in histories:
            histories[first] = core.refine_picked(a, b, first == "strict", rounds, pick_a, pick_b)
        return histories[first]

    return _pair(
        (a.param_names, b.param_names),
        ([at_a[k] for k in a_inputs], [at_b[k] for k in b_inputs]),
        ([at_a.get(k, -1) for k in a_outputs], [at_b.get(k, -1) for k in b_outputs]),
        history,
    )
