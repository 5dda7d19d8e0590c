"""A sum's terms in another order on a real torch_xla 2.9 capture (issue 37):
fixtures/torch_xla/sum_terms, made by its generate.py. `penalties.py` sums four penalty terms of
different shapes in a dict's order and, at step 2, pops one name and stores it again: the term
moves from first to last and the graph compiles again. The matcher pairs the sum's terms by
content (`sum-terms`), and the diff names exactly that reordering, at the pop and the call that
re-registers: no changed size or constant, no `structure`, never `identical`."""

from __future__ import annotations

from tests.conftest import FIXTURES
from xlagraph.canonical.engine import canonicalize
from xlagraph.diagnose import CauseKind
from xlagraph.diagnose.fixes import fix
from xlagraph.diff import diff_files
from xlagraph.match._compiled import sum_chains
from xlagraph.parse.sources import load_module

HERE = FIXTURES / "torch_xla" / "sum_terms"
SCRIPT = "fixtures/torch_xla/sum_terms/penalties.py"


def _diff():  # type: ignore[no-untyped-def]
    return diff_files(str(HERE / "step0.hlo"), str(HERE / "step1.hlo"))


def test_the_reordered_sum_is_named_as_a_reordering() -> None:
    result = _diff()
    assert result.verdict == "different"
    assert [c.kind for c in result.causes] == [CauseKind.PARAMETER_PERMUTATION], [
        c.summary for c in result.causes
    ]
    (cause,) = result.causes
    assert cause.hint == fix("parameter_permutation.sum_terms")
    # Where the order moved: the pop, then the call that re-registers inside the loop.
    assert cause.sources[:2] == (f"{SCRIPT}:23", f"{SCRIPT}:34")


def test_the_terms_pair_by_content() -> None:
    result = _diff()
    matching = result.pairs[0].matching
    assert matching is not None
    tagged = [a for a, phase in matching.matcher.items() if phase == "sum-terms"]
    entry_l = result.left.entry.computation.by_name
    # The loss's chain (f32[]) and the first layer's gradient, which sums the moved term's
    # gradient with the others' in the new order too (f32[12,8]).
    assert sum(entry_l[a].opcode == "add" for a in tagged) >= 2
    shapes = {entry_l[a].shape.split("{")[0] for a in tagged}
    assert shapes == {"f32[]", "f32[12,8]"}


def test_the_core_gives_each_chain_with_the_values_its_terms_stand_for() -> None:
    """`sum_chains` (sum_terms.rs `chains`, which `match/reordered_terms.py` reads): the loss's
    chain once, from its root (`add.83`; its inner adds are no chain's root), its five terms left
    to right; each term torch scaled by `alpha` (a scalar constant) stands for the value it
    scales, and `constant * constant` (both scalars) stays as written."""
    comp = canonicalize(load_module(str(HERE / "step0.hlo"))).computations["SyncTensorsGraph.249"]
    chains = {root: (terms, values) for root, terms, values in sum_chains(comp)}
    assert not {"add.77", "add.79", "add.81"} & chains.keys()
    assert chains["add.83"] == (
        ["convert.75", "multiply.76", "multiply.78", "multiply.80", "multiply.82"],
        ["convert.75", "multiply.76", "multiply.54", "convert.36", "reduce.13"],
    )
