"""A plain refinement of a pair answered from each graph's refinement alone
(`rust/src/refine_alone.rs`) is the joint refinement's answer: the same rounds, stability,
balance and colours, on the entry computations of the fixture pairs the tests diff, each graph
paired with several others (so that the runs kept on a graph are reused), at budgets small
enough that the shortcut answers and large enough that the graphs stabilize."""

from __future__ import annotations

from itertools import permutations

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from xlagraph.diff import diff_files
from xlagraph.match import correspondence as cr

pytest.importorskip("xlagraph._core")
if cr._core() is None:
    pytest.skip("the compiled core has no refinement", allow_module_level=True)

PAIRS = FIXTURE_PAIRS


_spec = pair_spec


def _picks(g) -> list[int]:
    return sorted(set(g.params) | {k for k in g.outputs if k >= 0})


@pytest.mark.parametrize("batch", range(4))
def test_plain_refinement_from_each_graph_alone_is_the_joint_one(batch: int) -> None:
    core = cr._core()
    results = [diff_files(_spec(a), _spec(b)) for a, b in PAIRS[batch::4][:12]]
    comps = [c for r in results for c in (r.left.entry, r.right.entry)]
    graphs = [cr._compiled_graph(core, c) for c in comps if c.core is not None]
    assert len(graphs) >= 8
    shortcut = 0
    for a, b in permutations(graphs[:8], 2):
        pa, pb = _picks(a), _picks(b)
        for strict in (True, False):
            for rounds in (1, 2, 3, cr.ROUNDS, cr._budget(a.size + b.size)):
                got = a.refine_with(b, strict, rounds, pa, pb)
                assert got == a.refine_with(b, strict, rounds, pa, pb, alone=False)
                shortcut += not got[1]
    assert shortcut > 0  # the unstable answers are the ones taken from the runs alone


@pytest.mark.parametrize("batch", range(2))
def test_picked_rounds_from_each_graph_alone_are_the_joint_ones(batch: int) -> None:
    """`refine_picked` (the 6-round history of the inputs' and outputs' colours) from each
    graph's rounds alone, kept on it, against the joint run, each graph paired with others."""
    core = cr._core()
    results = [diff_files(_spec(a), _spec(b)) for a, b in PAIRS[batch::2][:12]]
    comps = [c for r in results for c in (r.left.entry, r.right.entry)]
    graphs = [cr._compiled_graph(core, c) for c in comps if c.core is not None]
    lengths = set()
    for a, b in permutations(graphs[:8], 2):
        pa, pb = _picks(a), _picks(b)
        for strict in (True, False):
            for rounds in (1, 3, cr.ROUNDS, cr._LARGE_ROUNDS):
                got = core.refine_picked(a, b, strict, rounds, pa, pb, alone=True)
                assert got == core.refine_picked(a, b, strict, rounds, pa, pb, alone=False)
                lengths.add(len(got[0]))
    assert len(lengths) > 2  # stopped at the cap and before it
