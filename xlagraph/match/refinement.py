"""Colour refinement of two computations' dataflow graphs, in the compiled core.

The core (rust/src/matching/refine*.rs) builds one computation's graph (nodes are live
instructions and parameters) and its first colours from the computation's handle
(`compiled_graphs`) and runs the rounds (`history_from`, `refine_with`). The graph and its rounds
in Python, the reference the core is tested against, are in
`tests/oracles/refinement_reference.py`. See `correspondence` for what the colours pair.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any
from weakref import WeakKeyDictionary

from xlagraph import _core
from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout
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
    "History",
    "budget",
    "compiled_graphs",
    "first_colours",
    "history_from",
    "rounds_for",
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


@lru_cache(maxsize=1 << 16)
def first_colours(
    is_input: bool, opcode: str, shape: str, attributes: tuple[tuple[str, str], ...], called: int
) -> tuple[int, int]:
    """(loose, strict) first colours of an instruction (docs/matching.md). Cached: the
    graphs of one run share most kinds of instruction (the core asks once per kind and graph)."""
    shape = strip_layout(shape).replace(" ", "")
    etype = shape.split("[", 1)[0] if not shape.startswith("(") else "tuple"
    rank = shape.count(",") + 1 if "[]" not in shape else 0
    # An element of a tuple parameter is an input like any other: its index is a position.
    opcode, skip = ("parameter", _SKIP_INPUT) if is_input else (opcode, _SKIP)
    attrs = tuple((key, v) for key, v in attributes if key not in skip and key not in _CALLS)
    loose_attrs = tuple((key, _DIGITS.sub("#", v)) for key, v in attrs)
    return hash((opcode, etype, rank, loose_attrs, called)), hash((opcode, shape, attrs, called))


def history_from(a: Any, b: Any, fa: list[int], fb: list[int]) -> History:
    """Colours of both graphs per round from the first colours `fa` and `fb` (individualized ones
    among them), until neither partition splits any more, refined in the core
    (`tests/oracles/refinement_reference.py` holds the rounds in Python: other colour values, the
    same classes at every round, which is all the caller reads)."""
    return _core.refine_history(a, b, unsigned(fa), unsigned(fb), rounds_for(len(a), len(b)))


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


# The core's graph of a computation (`refine_graph`), kept while the computation lives: a report
# pairs each graph with several others.
_GRAPHS: WeakKeyDictionary[CanonicalComputation, Any] = WeakKeyDictionary()
# The same with multiplies by one seen through, where it has any.
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
