"""torch_xla's token chain of all-reduces (rust/src/matching/collective_chain.rs): the core finds
the edges its reference finds (tests/oracles/collective_chain_reference.py) on every computation
of every module the fixture pairs diff, and the correspondence that leaves them out pairs the
users of buckets issued in another order with their own counterparts, on real captures
(fixtures/torch_xla/ranks/heldout/bucket_order: each rank all-reduces three gradient buckets
starting at bucket `RANK % 3`, torch_xla 2.9 under torchrun, `@torch_xla.compile` step)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURE_PAIRS, FIXTURES, pair_spec
from tests.oracles.collective_chain_reference import chain_edges_reference
from xlagraph.canonical import canonicalize
from xlagraph.diagnose import CauseKind
from xlagraph.diff import diff_files
from xlagraph.match.refinement import chain_edges
from xlagraph.parse.sources import load_module

SPECS = sorted({spec for pair in FIXTURE_PAIRS for spec in pair})
BUCKETS = FIXTURES / "torch_xla" / "ranks" / "heldout" / "bucket_order" / "capture"


@pytest.mark.parametrize("batch", range(2))
def test_the_core_cuts_the_chain_its_reference_cuts(batch: int) -> None:
    chained = 0
    for spec in SPECS[batch::2]:
        module = load_module(pair_spec(spec))
        if module.format != "hlo":
            continue
        for comp in canonicalize(module).computations.values():
            want = chain_edges_reference(comp)
            assert chain_edges(comp) == want, (spec, comp.name)
            chained += bool(want)
    assert chained or batch  # the fixtures hold chained all-reduces


def _rank(process: str) -> str:
    (hlo,) = (BUCKETS / process / "hlo").iterdir()
    return str(hlo)


@pytest.mark.parametrize(("other", "moved"), [("vm-1995", "A's all-reduce 1 is B's 3"), ("vm-1996", "is B's 1")])
def test_buckets_issued_in_another_order_are_one_collective_cause(other: str, moved: str) -> None:
    result = diff_files(_rank("vm-1994"), _rank(other))
    (cause,) = result.causes
    assert cause.kind is CauseKind.COLLECTIVE and cause.fix_id == "collective.order", cause
    assert "the same 3 all-reduce (3, 3, 3 operands), 3 of 3 in another place" in cause.summary
    assert moved in cause.summary
    # The SGD update of each parameter pairs with the same parameter's: the users of a bucket's
    # reduced gradients follow the bucket, wherever the chain put it.
    m = result.pairs[0].matching
    assert m is not None
    left, right = result.left.entry, result.right.entry
    for a, b in m.left.items():
        if left.instruction(a).opcode == "add" and a in left.outputs:
            assert left.operands[a][0] == right.operands[b][0], (a, b)  # the same parameter
