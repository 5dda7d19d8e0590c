"""Inputs and outputs of two computations paired by their whole data-flow context.

Colour refinement (1-dimensional Weisfeiler-Lehman) over each computation's dataflow graph, with
one hash for both sides so that colours compare across graphs; what a colour holds and leaves
out, and why, is docs/matching.md (1, 2). Refinement only splits, so two instructions agree up to
the last round whose colours are equal. Pairs are made from the deepest round down: a colour held
by one input (output) on each side pairs them; look-alikes in equal numbers are individualized
(`individualize`, as nauty does) and the pairs left to a choice are returned as `tied`, for the
caller to keep in position. Only agreement at every round pairs (`output_pairs._LOWEST`): partial
agreement is no evidence. The rounds run in the core (`refinement`), the pairing from the colours
is `output_pairs`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from xlagraph import _core
from xlagraph.canonical import CanonicalComputation
from xlagraph.match.individualize import PARAMS, HistoryFrom, individualized, signatures, tied_pick
from xlagraph.match.isomorphic import Refine, Refined, Signatures, explain
from xlagraph.match.multiply_by_one import identity_multiplies
from xlagraph.match.output_pairs import Correspondence, Got, Nodes, Opened, got_from, pair_sides, same_value
from xlagraph.match.refinement import (
    GAVE_UP,
    SEARCH,
    U64,
    Graph,
    History,
    budget,
    chain_edges,
    compiled_graphs,
    history_from,
    rounds_for,
    shallow,
)
from xlagraph.match.shapes import dims

__all__ = ["Correspondence", "correspond", "correspond_graphs"]

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


def _correspond(left: CanonicalComputation, right: CanonicalComputation) -> Correspondence:
    found = _correspond_compiled(left, right)
    if found is not None:
        return found
    return correspond_graphs(left, right, history_from, _core_refiner(left, right))


# Given the first colours' name ("strict" or "loose") and both graphs with multiplies by one seen
# through, the refinement until stable that `explain` asks for.
Refiner = Callable[[str, Graph, Graph], Refine]


def _core_refiner(left: CanonicalComputation, right: CanonicalComputation) -> Refiner:
    """Refinement until stable in the core, on the very nodes of `Graph(comp, True)` (the core
    builds its graph in `Graph`'s order), giving up past `SEARCH` nodes visited in all."""

    def refiner(first: str, sa_: Graph, sb_: Graph) -> Refine:
        ca, cb = compiled_graphs([(left, True), (right, True)])
        every = (list(range(len(sa_.names))), list(range(len(sb_.names))))
        return _until_stable(ca, cb, first == "strict", sa_.size + sb_.size, every)

    return refiner


def correspond_graphs(
    left: CanonicalComputation, right: CanonicalComputation, history_from: HistoryFrom, refiner: Refiner
) -> Correspondence:
    """`correspond` over the Python graphs, where look-alikes are left tied: refinement by
    `history_from` and `refiner` (the core's; the tests' reference passes its own rounds)."""
    a, b = Graph(left), Graph(right)
    seen = (Graph(left, True), Graph(right, True))  # the same nodes, multiplies by one seen through
    slot_of = (
        (
            [left.param_number[a.names[k]] for k in a.params],
            [right.param_number[b.names[k]] for k in b.params],
        ),
        (list(range(len(a.outputs))), list(range(len(b.outputs)))),
    )

    def colours(first: str, nodes: Nodes, opened: Opened) -> Got:
        sides = tuple(
            (lnodes, rnodes, slots[0], slots[1], set(open_l), set(open_r))
            for (lnodes, rnodes), slots, (open_l, open_r) in zip(nodes, slot_of, opened, strict=True)
        )
        sa_, sb_ = seen
        fa, fb = getattr(sa_, first), getattr(sb_, first)
        refine = refiner(first, sa_, sb_)
        sig = signatures(sa_), signatures(sb_)
        found = explain(
            refine,
            lambda: shallow(sa_, sb_, fa, fb),
            sides,  # type: ignore[arg-type]
            (lambda k: (sig[0][k], sa_.meta[k]), lambda k: (sig[1][k], sb_.meta[k])),
            same_value(left, right),
            (_sizes(left, lambda: sa_.names), _sizes(right, lambda: sb_.names)),
            (_unread(left, lambda: sa_.names), _unread(right, lambda: sb_.names)),
        )
        if found is not None:
            return got_from(found)
        hist, chosen = individualized(a, b, first, sides, history_from)
        return hist, chosen, frozenset(), frozenset()

    found = pair_sides(
        ([a.names[k] for k in a.params], [b.names[k] for k in b.params]),
        (a.params, b.params),
        (a.outputs, b.outputs),
        colours,
    )
    assert found is not None  # the Python path always pairs
    return found


def _correspond_compiled(left: CanonicalComputation, right: CanonicalComputation) -> Correspondence | None:
    """`_correspond` with the graphs built and refined in the core: the same first colours (asked
    of `first_colours` once per kind of instruction), the same classes at every round, and no
    Python list per node. Only the colours of inputs and outputs come back: `_assign` reads no
    others, so nodes are renumbered as positions in those picks. None where look-alikes are left
    tied: the Python graphs individualize them (`correspond_graphs`)."""
    a, b, *seen = compiled_graphs([(left, False), (right, False), (left, True), (right, True)])
    a_inputs, b_inputs, a_outputs, b_outputs = a.params, b.params, a.outputs, b.outputs
    pick_a = sorted(set(a_inputs) | {k for k in a_outputs if k >= 0})
    pick_b = sorted(set(b_inputs) | {k for k in b_outputs if k >= 0})
    at_a, at_b = {k: i for i, k in enumerate(pick_a)}, {k: i for i, k in enumerate(pick_b)}
    rounds = rounds_for(len(a), len(b))
    histories: dict[str, History] = {}

    def history(first: str) -> History:
        if first not in histories:
            histories[first] = _core.refine_picked(a, b, first == "strict", rounds, pick_a, pick_b)
        return histories[first]

    def untied(first: str, nodes: Nodes, opened: Opened) -> Got | None:
        # Graphs refinement cannot tell apart (up to an output dropped or added) are paired by
        # `isomorphic` here; otherwise look-alikes tied at a stable partition are individualized
        # by the Python graphs only; where none is left, the two paths pair alike.
        sides = tuple(
            (lnodes, rnodes, slots[0], slots[1], set(o[0]), set(o[1]))
            for (lnodes, rnodes), slots, o in zip(nodes, slot_of, opened, strict=True)
        )
        strict = first == "strict"
        sa_, sb_ = seen  # refinement until stable sees multiplies by one through
        refine = _until_stable(sa_, sb_, strict, sa_.size + sb_.size, (pick_a, pick_b))

        def shallow() -> Refined:
            got = sa_.refine_with(sb_, strict, 0, pick_a, pick_b)
            return Refined(got[1], got[2], got[3], got[4])

        found = explain(
            refine,
            shallow,
            sides,  # type: ignore[arg-type]
            _compiled_signatures(left, right, pick_a, pick_b),
            same_value(left, right),
            (
                _sizes(left, lambda: _node_names(left), pick_a),
                _sizes(right, lambda: _node_names(right), pick_b),
            ),
            (
                _unread(left, lambda: _node_names(left), pick_a),
                _unread(right, lambda: _node_names(right), pick_b),
            ),
        )
        if found is not None:
            return got_from(found)
        hist = history(first)
        probe = tuple(
            (lnodes, rnodes, lnodes, rnodes, set(o[0]), set(o[1]))
            for (lnodes, rnodes), o in zip(nodes, opened, strict=True)
        )
        if len(hist[0]) <= rounds and tied_pick(hist, probe, PARAMS, None):
            return None
        return hist, [], frozenset(), frozenset()

    inputs = ([at_a[k] for k in a_inputs], [at_b[k] for k in b_inputs])
    outputs = ([at_a.get(k, -1) for k in a_outputs], [at_b.get(k, -1) for k in b_outputs])
    slot_of = (
        ([left.param_number[n] for n in a.param_names], [right.param_number[n] for n in b.param_names]),
        (list(range(len(a_outputs))), list(range(len(b_outputs)))),
    )
    return pair_sides((a.param_names, b.param_names), inputs, outputs, untied)


def _until_stable(ga: Any, gb: Any, strict: bool, size: int, picks: tuple[list[int], list[int]]) -> Refine:
    """`explain`'s refinement until stable of the core's graphs `ga` and `gb`, from the salts and
    the outputs it names by position in `picks`; past `SEARCH` nodes visited in all it gives up."""
    pick_a, pick_b = picks
    allowed = budget(size)
    spent = [0]

    def refine(sa: dict[int, int], sb: dict[int, int], ua: tuple[int, ...], ub: tuple[int, ...]) -> Refined:
        if spent[0] > SEARCH:
            return GAVE_UP
        got = ga.refine_with(
            gb,
            strict,
            allowed,
            pick_a,
            pick_b,
            [(pick_a[k], v & U64) for k, v in sa.items()],
            [(pick_b[k], v & U64) for k, v in sb.items()],
            [pick_a[k] for k in ua],
            [pick_b[k] for k in ub],
            stable_only=True,  # `explain` reads an unstable answer only as such
        )
        spent[0] += (got[0] + 1) * size
        return Refined(got[1], got[2], got[3], got[4])

    return refine


def _compiled_signatures(
    left: CanonicalComputation, right: CanonicalComputation, pick_a: list[int], pick_b: list[int]
) -> Signatures:
    """`signatures` of the picked nodes (by position), computed on demand from the canonical
    form: only look-alikes left tied ask for them."""
    return _meta_signature(left, pick_a), _meta_signature(right, pick_b)


def _node_names(comp: CanonicalComputation) -> list[str]:
    """Node names in `Graph`'s order, which the core's graphs share."""
    return list(comp.order) + [p for p in comp.param_number if p not in comp.operands]


def _sizes(
    comp: CanonicalComputation, names_of: Callable[[], list[str]], pick: list[int] | None = None
) -> Callable[[int], list[int] | None]:
    """Each node's dimensions by position (in `pick`'s order where given), on demand: only
    look-alikes left tied and the removals compared ask for them. The node names too are made
    on the first ask (a list of every node, made in every diff, mostly for nothing)."""
    by_name = comp.computation.by_name
    names: list[list[str]] = []

    def sizes(pos: int) -> list[int] | None:
        if not names:
            names.append(names_of())
        return dims(by_name[names[0][pick[pos] if pick is not None else pos]].shape)

    return sizes


def _unread(
    comp: CanonicalComputation, names_of: Callable[[], list[str]], pick: list[int] | None = None
) -> Callable[[int], bool]:
    """Whether each node (by position, in `pick`'s order where given) is an input nothing reads
    and no output returns, on demand like `_sizes`: only removals compared ask."""
    state: list[tuple[list[str], set[str]]] = []

    def unread(pos: int) -> bool:
        if not state:
            read = {o for ops in comp.operands.values() for o in ops} | set(comp.outputs)
            state.append((names_of(), read))
        names, read = state[0]
        name = names[pick[pos] if pick is not None else pos]
        return name in comp.param_number and name not in read

    return unread


def _meta_signature(comp: CanonicalComputation, pick: list[int]) -> Callable[[int], tuple[int, int]]:
    memo: dict[int, tuple[int, int]] = {}
    state: dict[str, Any] = {}

    def meta(n: str) -> int:
        md = comp.computation.by_name[n].metadata
        return hash((md.op_name, md.source_file, md.source_line)) if md else 0

    def signature(pos: int) -> int:
        if pos not in memo:
            if not state:
                names = _node_names(comp)
                alias = identity_multiplies(comp).by_name  # the edges `Graph` has
                cut = chain_edges(comp)
                users: dict[str, list[str]] = {}
                for u, ops in comp.operands.items():
                    if u not in alias:
                        for j, o in enumerate(ops):
                            if j not in cut.get(u, ()):
                                users.setdefault(alias.get(o, o), []).append(u)
                state["names"], state["users"], state["alias"], state["cut"] = names, users, alias, cut
            n = state["names"][pick[pos]]
            alias, skip = state["alias"], state["cut"].get(n, ())
            read = comp.operands.get(n, ())
            ops = () if n in alias else tuple(alias.get(o, o) for j, o in enumerate(read) if j not in skip)
            memo[pos] = (
                hash(
                    (
                        meta(n),
                        tuple(sorted(meta(u) for u in state["users"].get(n, ()))),
                        tuple(sorted(meta(o) for o in ops)),
                    )
                ),
                meta(n),
            )
        return memo[pos]

    return signature
