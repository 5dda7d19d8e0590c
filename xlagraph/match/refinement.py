"""Colour refinement of two computations' dataflow graphs, in the compiled core.

`Graph` is one computation as integer arrays (nodes are live instructions and parameters) with
the first colours of each node; the core (rust/src/refine*.rs) builds the same graph from the
computation's handle (`compiled_graphs`) and runs the rounds (`history_from`, `refine_with`). The
rounds in Python, the reference the core is tested against, are in
`tests/oracles/refinement_reference.py`. See `correspondence` for what the colours pair.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any
from weakref import WeakKeyDictionary

from xlagraph import _core
from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import name_at, strip_layout
from xlagraph.match.isomorphic import Refined
from xlagraph.match.multiply_by_one import Identities, identity_multiplies
from xlagraph.opcodes import COMMUTATIVE

__all__ = [
    "GAVE_UP",
    "LARGE_ROUNDS",
    "OUTPUT",
    "ROUNDS",
    "SEARCH",
    "U64",
    "Graph",
    "History",
    "balanced",
    "budget",
    "chain_edges",
    "compiled_graphs",
    "first_colours",
    "history_from",
    "reached",
    "rounds_for",
    "shallow",
    "unsigned",
]

ROUNDS = 6
# Past this many instructions (a side), fewer rounds: each costs ~2 us an instruction in Python.
LARGE, LARGE_ROUNDS = 100_000, 3
# Refinement until stable (`isomorphic`) may visit this many nodes and edges of both graphs in
# all (rounds x size): 2,000 rounds for a 3,500-instruction Llama step (which is stable after
# 21 to 31), 66 at 120K (the benchmark pair needs 261: about 0.3 s a pass spent for nothing,
# where two far-apart layers stay alike and the 6-round pairing decides), 6 at 600K.
_VISITS = 30_000_000
# The search for look-alikes (`isomorphic`) may visit this many in all, over every refinement it
# asks for (seconds in the core); past it a refinement reads as unstable and the search gives up
# (the 6-round pairing decides, as before).
SEARCH = 2_000_000_000
GAVE_UP = Refined(False, False, (), ())
_CALLS = frozenset({"to_apply", "calls", "body", "condition", "branch_computations", "called_computations"})
# Attributes that name or number things outside the data flow (shardings are compared on their own).
_SKIP = frozenset({"sharding", "frontend_attributes", "backend_config", "channel_id", "metadata"})
_SKIP_INPUT = _SKIP | {"index"}
_DIGITS = re.compile(r"\d+")
OUTPUT = hash("output")
U64 = (1 << 64) - 1

History = tuple[list[list[int]], list[list[int]]]

# operand starts, operands, sorted?, user starts, users, user operand index, output marks
_Arrays = tuple[list[int], list[int], list[bool], list[int], list[int], list[int], list[int]]


class Graph:
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
        cut = chain_edges(comp)  # torch_xla's token chain: the order, not what is reduced
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
        return op_start, ops, self.sorted_ops, user_start, users, at, unsigned(self.marks)


def chain_edges(comp: CanonicalComputation) -> dict[str, frozenset[int]]:
    """The operand positions, per reader, of torch_xla's token chain of all-reduces, which the
    correspondence leaves out (rust/src/matching/collective_chain.rs)."""
    found = _CHAINS.get(comp)
    if found is None:
        edges = _core.collective_chain_of(comp.core)
        name = name_at(comp.computation.instructions)
        grouped: dict[str, set[int]] = {}
        for reader, at in edges:
            grouped.setdefault(name(reader), set()).add(at)
        found = _CHAINS[comp] = {n: frozenset(js) for n, js in grouped.items()}
    return found


_CHAINS: WeakKeyDictionary[CanonicalComputation, dict[str, frozenset[int]]] = WeakKeyDictionary()


@lru_cache(maxsize=1 << 16)
def first_colours(
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


def history_from(a: Graph, b: Graph, fa: list[int], fb: list[int]) -> tuple[list[list[int]], list[list[int]]]:
    """Colours of both graphs per round from the first colours `fa` and `fb` (individualized ones
    among them), until neither partition splits any more, refined in the core
    (`tests/oracles/refinement_reference.py` holds the rounds in Python: other colour values, the
    same classes at every round, which is all the caller reads)."""
    rounds = rounds_for(len(a.names), len(b.names))
    ha, hb = _core.refine_history(a.arrays(), b.arrays(), unsigned(fa), unsigned(fb), rounds)
    return ha, hb


def rounds_for(na: int, nb: int) -> int:
    """The rounds of the 6-round pairing for graphs of `na` and `nb` nodes. A history as long
    as that plus one stopped at the cap, not at a stable partition (3 rounds past 100K: a
    history of 4 was taken for stable against the cap of 6, and a 120K pair individualized
    its capped ties in Python for minutes)."""
    return ROUNDS if max(na, nb) <= LARGE else LARGE_ROUNDS


def unsigned(colours: list[int]) -> list[int]:
    return [c & U64 for c in colours]


def budget(size: int) -> int:
    """Rounds allowed to refinement until stable over graphs of `size` nodes and edges."""
    return max(ROUNDS, _VISITS // max(size, 1))


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


def shallow(a: Graph, b: Graph, fa: list[int], fb: list[int]) -> Refined:
    """Refinement's answer before its first round: the first colours of the nodes an output
    reads (0 for the others), never stable, and whether every colour is as frequent in A as in B."""
    ca = [c if live else 0 for c, live in zip(fa, reached(a, a.outputs), strict=True)]
    cb = [c if live else 0 for c, live in zip(fb, reached(b, b.outputs), strict=True)]
    return Refined(False, balanced(ca, cb), ca, cb)


def balanced(ca: list[int], cb: list[int]) -> bool:
    """Every colour but 0 (unreached) is as frequent in A as in B."""
    tally: dict[int, int] = {}
    for c in ca:
        tally[c] = tally.get(c, 0) + 1
    for c in cb:
        tally[c] = tally.get(c, 0) - 1
    return all(v == 0 for c, v in tally.items() if c != 0)


# The core's graph of a computation (`refine_graph`), kept while the computation lives: a report
# pairs each graph with several others.
_GRAPHS: WeakKeyDictionary[CanonicalComputation, Any] = WeakKeyDictionary()
# The same with multiplies by one seen through (`Graph(comp, see_through=True)`), where it has any.
_SEEN: WeakKeyDictionary[CanonicalComputation, Any] = WeakKeyDictionary()


def compiled_graphs(wanted: list[tuple[CanonicalComputation, bool]]) -> list[Any]:
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
    missing: dict[tuple[int, int], tuple[CanonicalComputation, Any, Identities]] = {}
    for comp, cache, identities in slots:
        if comp not in cache:
            missing.setdefault((id(comp), id(cache)), (comp, cache, identities))
    if missing:
        built = _core.refine_graphs_of(
            [(comp.core, list(ids.by_index)) for comp, _, ids in missing.values()],
            COMMUTATIVE,
            first_colours,
            OUTPUT,
        )
        for (comp, cache, _), graph in zip(missing.values(), built, strict=True):
            cache[comp] = graph
    return [cache[comp] for comp, cache, _ in slots]  # every one built above, or kept


_AS_THEY_ARE = Identities({}, ())
