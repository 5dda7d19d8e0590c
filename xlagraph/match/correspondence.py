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
from xlagraph.match.individualize import PARAMS, HistoryFrom, individualized, tied_pick
from xlagraph.match.isomorphic import Refine, Refined, explain
from xlagraph.match.output_pairs import Correspondence, Got, Nodes, Opened, got_from, pair_sides, same_value
from xlagraph.match.refinement import (
    GAVE_UP,
    SEARCH,
    U64,
    History,
    budget,
    compiled_graphs,
    history_from,
    rounds_for,
)
from xlagraph.match.reordered_terms import without_reordered_terms
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
        found = inner[right] = without_reordered_terms(left, right, _correspond(left, right))
    return found


def _correspond(left: CanonicalComputation, right: CanonicalComputation) -> Correspondence:
    graphs = compiled_graphs([(left, False), (right, False), (left, True), (right, True)])
    found = _correspond_compiled(left, right, graphs)
    if found is not None:
        return found
    return correspond_graphs(left, right, graphs, history_from, _core_refiner)


# Given strict or loose first colours and both graphs with multiplies by one seen through, the
# refinement until stable that `explain` asks for and its answer before the first round.
Refiner = Callable[[bool, Any, Any], tuple[Refine, Callable[[], Refined]]]


def _core_refiner(strict: bool, sa_: Any, sb_: Any) -> tuple[Refine, Callable[[], Refined]]:
    """Refinement until stable of every node in the core, giving up past `SEARCH` nodes visited."""
    every = (list(range(len(sa_))), list(range(len(sb_))))
    return _until_stable(sa_, sb_, strict, sa_.size + sb_.size, every), _shallow(sa_, sb_, strict, every)


def correspond_graphs(
    left: CanonicalComputation,
    right: CanonicalComputation,
    graphs: tuple[Any, Any, Any, Any],
    history_from: HistoryFrom,
    refiner: Refiner,
) -> Correspondence:
    """`correspond` where look-alikes are left tied, over `graphs` (A, B, then both with
    multiplies by one seen through: the core's, or the tests' reference's), refined by
    `history_from` and `refiner`, with every node's colour at hand."""
    a, b, sa_, sb_ = graphs
    slot_of = (
        ([left.param_number[n] for n in a.param_names], [right.param_number[n] for n in b.param_names]),
        (list(range(len(a.outputs))), list(range(len(b.outputs)))),
    )

    def colours(first: str, nodes: Nodes, opened: Opened) -> Got:
        sides = tuple(
            (lnodes, rnodes, slots[0], slots[1], set(open_l), set(open_r))
            for (lnodes, rnodes), slots, (open_l, open_r) in zip(nodes, slot_of, opened, strict=True)
        )
        strict = first == "strict"
        refine, shallow = refiner(strict, sa_, sb_)
        found = explain(
            refine,
            shallow,
            sides,  # type: ignore[arg-type]
            (_meta_signature(left, sa_), _meta_signature(right, sb_)),
            same_value(left, right),
            (_sizes(left), _sizes(right)),
            (_unread(left), _unread(right)),
            None if a is sa_ and b is sb_ else refiner(strict, a, b)[0],
        )
        if found is not None:
            return got_from(found)
        firsts = (a.first_colours(strict), b.first_colours(strict))
        sig = (_meta_signature(left, a), _meta_signature(right, b))
        hist, chosen = individualized((a, b), firsts, sides, history_from, sig)
        return hist, chosen, frozenset(), frozenset()

    names, rounds = (a.param_names, b.param_names), rounds_for(len(a), len(b))
    found = pair_sides(names, (a.params, b.params), (a.outputs, b.outputs), colours, rounds)
    assert found is not None  # this path always pairs
    return found


def _correspond_compiled(
    left: CanonicalComputation, right: CanonicalComputation, graphs: tuple[Any, Any, Any, Any]
) -> Correspondence | None:
    """`_correspond` with the graphs built and refined in the core: the same first colours (asked
    of `first_colours` once per kind of instruction), the same classes at every round, and no
    Python list per node. Only the colours of inputs and outputs come back: `_assign` reads no
    others, so nodes are renumbered as positions in those picks. None where look-alikes are left
    tied: `correspond_graphs` individualizes them."""
    a, b, *seen = graphs
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
        # by `correspond_graphs` only; where none is left, the two paths pair alike.
        sides = tuple(
            (lnodes, rnodes, slots[0], slots[1], set(o[0]), set(o[1]))
            for (lnodes, rnodes), slots, o in zip(nodes, slot_of, opened, strict=True)
        )
        strict = first == "strict"
        sa_, sb_ = seen  # refinement until stable sees multiplies by one through
        found = explain(
            _until_stable(sa_, sb_, strict, sa_.size + sb_.size, (pick_a, pick_b)),
            _shallow(sa_, sb_, strict, (pick_a, pick_b)),
            sides,  # type: ignore[arg-type]
            (_meta_signature(left, sa_, pick_a), _meta_signature(right, sb_, pick_b)),
            same_value(left, right),
            (_sizes(left, pick_a), _sizes(right, pick_b)),
            (_unread(left, pick_a), _unread(right, pick_b)),
            # The graphs as written, where multiplies by one were seen through: a tie-break.
            None if a is sa_ and b is sb_ else _until_stable(a, b, strict, a.size + b.size, (pick_a, pick_b)),
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
    return pair_sides((a.param_names, b.param_names), inputs, outputs, untied, rounds)


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


def _shallow(ga: Any, gb: Any, strict: bool, picks: tuple[list[int], list[int]]) -> Callable[[], Refined]:
    """`explain`'s refinement before its first round: the first colours of the nodes an output
    reads (0 for the others), never stable, and whether every colour is as frequent in A as in B."""

    def shallow() -> Refined:
        got = ga.refine_with(gb, strict, 0, *picks)
        return Refined(got[1], got[2], got[3], got[4])

    return shallow


def _name_at(comp: CanonicalComputation, pick: list[int] | None = None) -> Callable[[int], str]:
    """Each node's name by position (in `pick`'s order where given), in the order of the core's
    graphs; the list of every node is made on the first ask (in most diffs, never)."""
    names: list[list[str]] = []

    def name(pos: int) -> str:
        if not names:
            names.append(list(comp.order) + [p for p in comp.param_number if p not in comp.operands])
        return names[0][pick[pos] if pick is not None else pos]

    return name


def _sizes(comp: CanonicalComputation, pick: list[int] | None = None) -> Callable[[int], list[int] | None]:
    """Each node's dimensions by position (in `pick`'s order where given), on demand: only
    look-alikes left tied and the removals compared ask for them."""
    by_name, name = comp.computation.by_name, _name_at(comp, pick)
    return lambda pos: dims(by_name[name(pos)].shape)


def _unread(comp: CanonicalComputation, pick: list[int] | None = None) -> Callable[[int], bool]:
    """Whether each node (by position, in `pick`'s order where given) is an input nothing reads
    and no output returns, on demand like `_sizes`: only removals compared ask."""
    read: list[set[str]] = []
    name_at = _name_at(comp, pick)

    def unread(pos: int) -> bool:
        if not read:
            read.append({o for ops in comp.operands.values() for o in ops} | set(comp.outputs))
        name = name_at(pos)
        return name in comp.param_number and name not in read[0]

    return unread


def _meta_signature(
    comp: CanonicalComputation, graph: Any, pick: list[int] | None = None
) -> Callable[[int], tuple[int, int]]:
    """Each node's (by position, in `pick`'s order where given) `individualize.Signature` and its
    own metadata's hash, on demand, over the edges of `graph` (the core's graph of `comp`)."""
    memo: dict[int, tuple[int, int]] = {}
    name = _name_at(comp)

    def meta(k: int) -> int:
        md = comp.computation.by_name[name(k)].metadata
        return hash((md.op_name, md.source_file, md.source_line)) if md else 0

    def signature(pos: int) -> tuple[int, int]:
        if pos not in memo:
            k = pick[pos] if pick is not None else pos
            ops, users = graph.neighbours(k)
            own = meta(k)
            memo[pos] = hash((own, tuple(sorted(map(meta, users))), tuple(sorted(map(meta, ops))))), own
        return memo[pos]

    return signature
