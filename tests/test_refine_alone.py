"""A plain refinement of a pair answered from each graph's refinement alone
(`rust/src/matching/refine_alone.rs`) is the joint refinement's answer: the same rounds, stability,
balance and colours, on the entry computations of the fixture pairs the tests diff, each graph
paired with several others (so that the runs kept on a graph are reused), at budgets small
enough that the shortcut answers and large enough that the graphs stabilize."""

from __future__ import annotations

from itertools import permutations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURE_PAIRS, pair_spec
from xlagraph import _core as core
from xlagraph.canonical import CanonicalComputation
from xlagraph.diff import canonical_of, diff_files
from xlagraph.match import refinement
from xlagraph.match.multiply_by_one import identity_multiplies
from xlagraph.opcodes import COMMUTATIVE
from xlagraph.parse.hlo import parse_hlo

PAIRS = FIXTURE_PAIRS


_spec = pair_spec


def _picks(g) -> list[int]:
    return sorted(set(g.params) | {k for k in g.outputs if k >= 0})


def _graph(comp: CanonicalComputation, see_through: bool = False) -> Any:
    """The core's graph of `comp`."""
    return refinement.compiled_graphs([(comp, see_through)])[0]


@pytest.mark.parametrize("batch", range(4))
def test_plain_refinement_from_each_graph_alone_is_the_joint_one(batch: int) -> None:
    results = [diff_files(_spec(a), _spec(b)) for a, b in PAIRS[batch::4][:12]]
    comps = [c for r in results for c in (r.left.entry, r.right.entry)]
    graphs = [_graph(c) for c in comps if c.core is not None]
    assert len(graphs) >= 8
    shortcut = 0
    for a, b in permutations(graphs[:8], 2):
        pa, pb = _picks(a), _picks(b)
        for strict in (True, False):
            for rounds in (1, 2, 3, refinement.ROUNDS, refinement.budget(a.size + b.size)):
                got = a.refine_with(b, strict, rounds, pa, pb)
                assert got == a.refine_with(b, strict, rounds, pa, pb, alone=False)
                shortcut += not got[1]
    assert shortcut > 0  # the unstable answers are the ones taken from the runs alone


@pytest.mark.parametrize("batch", range(2))
def test_picked_rounds_from_each_graph_alone_are_the_joint_ones(batch: int) -> None:
    """`refine_picked` (the 6-round history of the inputs' and outputs' colours) from each
    graph's rounds alone, kept on it, against the joint run, each graph paired with others."""
    results = [diff_files(_spec(a), _spec(b)) for a, b in PAIRS[batch::2][:12]]
    comps = [c for r in results for c in (r.left.entry, r.right.entry)]
    graphs = [_graph(c) for c in comps if c.core is not None]
    lengths = set()
    for a, b in permutations(graphs[:8], 2):
        pa, pb = _picks(a), _picks(b)
        for strict in (True, False):
            for rounds in (1, 3, refinement.ROUNDS, refinement.LARGE_ROUNDS):
                got = core.refine_picked(a, b, strict, rounds, pa, pb, alone=True)
                assert got == core.refine_picked(a, b, strict, rounds, pa, pb, alone=False)
                lengths.add(len(got[0]))
    assert len(lengths) > 2  # stopped at the cap and before it


def _every_graph(batch: int, batches: int) -> list:
    """The core's graphs of every computation (entries and the computations they call) of the
    fixture pairs in `batch`, as they are and with multiplies by one seen through."""
    graphs = []
    for a, b in PAIRS[batch::batches]:
        result = diff_files(_spec(a), _spec(b))
        for canon in (result.left, result.right):
            for comp in canon.computations.values():
                if comp.core is not None:
                    graphs.append(_graph(comp))
                    graphs.append(_graph(comp, True))
    return graphs


@pytest.mark.parametrize("batch", range(4))
def test_split_rounds_on_classes_are_those_on_colours(batch: int) -> None:
    """`refine_split.rs` re-signs only the nodes next to a class that split: whether a graph's
    partition splits at every round, and when it stops, are those of refining every node's
    colour every round, on every computation of the fixture pairs, at budgets below and past
    the round where each stabilizes."""
    stopped = splitting = 0
    for g in _every_graph(batch, 4):
        for strict in (True, False):
            naive = g.split_rounds(strict, 400, naive=True)
            budgets = {0, 1, 2, 3, naive[1], naive[1] + 1, max(naive[1] - 1, 0), 400}
            for rounds in sorted(budgets):
                assert g.split_rounds(strict, rounds) == g.split_rounds(strict, rounds, naive=True)
            stopped += not naive[0]
            splitting += naive[1] > 3
    assert stopped > 100 and splitting > 10  # graphs that stabilize, some after many rounds


@pytest.mark.parametrize("batch", range(2))
def test_stable_only_answers_as_the_full_refinement(batch: int) -> None:
    """`stable_only=True` skips the colours of a plain refinement that cannot be stable: where
    the full answer is stable it is returned whole, and where not, the same rounds and `False`."""
    results = [diff_files(_spec(a), _spec(b)) for a, b in PAIRS[batch::2][:12]]
    comps = [c for r in results for c in (r.left.entry, r.right.entry)]
    graphs = [_graph(c) for c in comps if c.core is not None]
    skipped = 0
    for a, b in permutations(graphs[:8], 2):
        pa, pb = _picks(a), _picks(b)
        for strict in (True, False):
            for rounds in (1, 2, 3, refinement.ROUNDS, refinement.budget(a.size + b.size)):
                full = a.refine_with(b, strict, rounds, pa, pb, alone=False)
                got = a.refine_with(b, strict, rounds, pa, pb, stable_only=True)
                if full[1]:
                    assert got == full
                else:
                    assert got[:2] == full[:2]
                    skipped += got[3:] == ([], [])
    assert skipped > 0


_UNARY = ("negate", "exponential", "tanh")
_BINARY = ("add", "multiply", "maximum", "subtract", "divide")  # commutative and not


@st.composite
def _dataflow_modules(draw: st.DrawFn) -> str:
    """HLO text of a random dataflow graph (written here, not produced by XLA: the property is
    about graphs, whatever made them): a few inputs, maybe parallel chains of one op from them,
    then ops over earlier values. Chains, few opcodes a module and operands mostly among the
    latest values make look-alikes whose classes split over many rounds (a node is told apart by
    its distance from the graph's ends, as in a deep model's alike blocks): up to ~20 here."""
    unary = draw(st.lists(st.sampled_from(_UNARY), min_size=1, max_size=2, unique=True))
    binary = draw(st.lists(st.sampled_from(_BINARY), min_size=1, max_size=2, unique=True))
    names = [f"p{k}" for k in range(draw(st.integers(1, 4)))]
    lines = [f"  {n} = f32[4] parameter({k})" for k, n in enumerate(names)]

    def operand() -> str:
        recent = names[-draw(st.integers(1, min(3, len(names)))) :]
        return draw(st.sampled_from(recent) if draw(st.integers(0, 4)) else st.sampled_from(names))

    if draw(st.booleans()):  # parallel chains of one op (equal lengths are look-alikes)
        op = unary[0]
        for c, start in enumerate(list(names)):
            prev = start
            for k in range(draw(st.integers(1, 25))):
                lines.append(f"  c{c}_{k} = f32[4] {op}({prev})")
                prev = f"c{c}_{k}"
            names.append(prev)
    for k in range(draw(st.integers(1, 60))):
        if draw(st.booleans()):
            op, args = draw(st.sampled_from(unary)), [operand()]
        else:
            op, args = draw(st.sampled_from(binary)), [operand(), operand()]
        lines.append(f"  v{k} = f32[4] {op}({', '.join(args)})")
        names.append(f"v{k}")
    outputs = [names[-1], *draw(st.lists(st.sampled_from(names), max_size=3))]
    shape = ", ".join(["f32[4]"] * len(outputs))
    lines.append(f"  ROOT out = ({shape}) tuple({', '.join(outputs)})")
    return "HloModule m\n\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


@settings(max_examples=300, deadline=None)
@given(_dataflow_modules())
def test_split_rounds_on_generated_graphs(text: str) -> None:
    """The class algorithm's answer is the colour algorithm's on any dataflow graph, at every
    budget from none to past stability, strict and loose, with multiplies by one seen through."""
    entry = canonical_of(parse_hlo(text)).entry
    for g in (_graph(entry), _graph(entry, True)):
        for strict in (True, False):
            stable_at = g.split_rounds(strict, 100, naive=True)[1]
            for rounds in range(stable_at + 3):
                assert g.split_rounds(strict, rounds) == g.split_rounds(strict, rounds, naive=True)


@pytest.mark.parametrize("parallel", [True, False])
def test_graphs_built_together_are_the_graphs_built_alone(parallel: bool) -> None:
    """`refine_graphs_of` (a pair's graphs in one call, on two threads where large; forced here)
    builds each graph as it does alone: the same nodes, and the same refinements."""
    results = [diff_files(_spec(a), _spec(b)) for a, b in PAIRS[:10]]
    comps = [c for r in results for c in (r.left.entry, r.right.entry) if c.core is not None]
    wanted = []
    for comp in comps:
        wanted.append((comp.core, []))
        seen = identity_multiplies(comp).by_index
        if seen:
            wanted.append((comp.core, list(seen)))
    first, output = refinement.first_colours, refinement.OUTPUT
    together = core.refine_graphs_of(wanted, COMMUTATIVE, first, output, parallel)
    alone = [core.refine_graphs_of([w], COMMUTATIVE, first, output, False)[0] for w in wanted]
    assert len(together) == len(alone) >= 16
    for a, b in zip(together, alone, strict=True):
        assert (a.params, a.param_names, a.outputs, len(a), a.size) == (
            b.params,
            b.param_names,
            b.outputs,
            len(b),
            b.size,
        )
        pa = _picks(a)
        for strict in (True, False):
            rounds = refinement.ROUNDS
            assert a.refine_with(a, strict, rounds, pa, pa) == b.refine_with(b, strict, rounds, pa, pa)
