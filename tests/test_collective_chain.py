"""torch_xla's token chain of all-reduces (rust/src/matching/collective_chain.rs): the core finds
the edges its reference finds (tests/oracles/collective_chain_reference.py) on every computation
of every module the fixture pairs diff, and the correspondence that leaves them out pairs the
users of buckets issued in another order with their own counterparts, on real captures
(fixtures/torch_xla/ranks/heldout/bucket_order: each rank all-reduces three gradient buckets
starting at bucket `RANK % 3`, torch_xla 2.9 under torchrun, `@torch_xla.compile` step)."""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import FIXTURE_PAIRS, FIXTURES, pair_spec
from tests.oracles.collective_chain_reference import chain_edges_reference
from xlagraph import _core
from xlagraph.canonical import canonicalize
from xlagraph.diagnose import CauseKind
from xlagraph.diff import diff_files
from xlagraph.ir import name_at
from xlagraph.parse.sources import load_module
from xlagraph.report import build_report, load_runs
from xlagraph.report.ranks import rank_view
from xlagraph.runlog import RunLog

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
            name, got = name_at(comp.computation.instructions), {}
            for reader, at in _core.collective_chain_of(comp.core):
                got.setdefault(name(reader), set()).add(at)
            assert {n: frozenset(js) for n, js in got.items()} == want, (spec, comp.name)
            chained += bool(want)
    assert chained or batch  # the fixtures hold chained all-reduces


def _rank(process: str) -> str:
    (hlo,) = (BUCKETS / process / "hlo").iterdir()
    return str(hlo)


@pytest.mark.parametrize(
    ("other", "moved"), [("vm-1995", "A's all-reduce 1 is B's 3"), ("vm-1996", "is B's 1")]
)
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


# fixtures/torch_xla/ranks/bucket_turns (generate.py bucket_turns): lazy mode, four buckets, each
# rank starting at bucket RANK % 4 and walking them backwards on odd steps.
TURNS = FIXTURES / "torch_xla" / "ranks" / "bucket_turns" / "capture"


@cache
def _turns() -> tuple[RunLog, ...]:
    return tuple(sorted(load_runs(str(TURNS)), key=lambda log: log.process))


def test_four_buckets_in_another_order_on_each_rank_are_one_collective_cause_each() -> None:
    view = rank_view(_turns())
    assert view is not None and view.divergence is not None and view.divergence.step == 0
    assert [d.variant for d in view.divergence.diffs] == ["B", "C", "D"]
    for d in view.divergence.diffs:
        (cause,) = d.causes
        assert cause.kind is CauseKind.COLLECTIVE and cause.fix_id == "collective.order", cause
        assert "the same 4 all-reduce (3, 3, 3, 3 operands), 4 of 4 in another place" in cause.summary
        # The graphs are named as the strip names them.
        assert f"A's all-reduce 1 is {d.variant}'s " in cause.summary, cause.summary
        assert all(f"{x}'s" not in cause.summary for x in "BCD" if x != d.variant), cause.summary
        # Where the all-reduces are issued, then the loop and the lines that order it.
        assert cause.sources[:2] == ("bucket_turns.py:33", "bucket_turns.py:32"), cause.sources
        assert {"bucket_turns.py:29", "bucket_turns.py:31"} <= set(cause.sources), cause.sources
    assert view.collectives is not None and view.collectives.step == 0


def test_the_buckets_reversed_within_one_process_are_one_collective_cause() -> None:
    for log in _turns():
        report = build_report(log)
        (r,) = report.recompiles
        assert (r.variant, r.baseline.variant if r.baseline else None) == ("B", "A")
        assert [c.fix_id for c in r.causes] == ["collective.order"], r.causes
        (cause,) = r.causes
        # The cause itself carries where the all-reduces are issued (diagnose decides the lines,
        # the attribution displays them).
        assert cause.sources[:2] == ("bucket_turns.py:33", "bucket_turns.py:32"), cause.sources
        # Reversed: every one of the four in another place, each paired with its own bucket.
        moved = "4 of 4 in another place (A's all-reduce 1 is B's 4, A's all-reduce 2 is B's 3,"
        assert moved in cause.summary, cause.summary
        (att,) = r.attribution
        assert len(att.items) == 4 and all(" is now " in item for item in att.items)
        # Where the all-reduces are issued, and the lines that order them (the loop, the rank's
        # rotation, the odd steps' reversal), before the sync that compiled the graph.
        assert att.lines[:2] == ("bucket_turns.py:33", "bucket_turns.py:32"), att.lines
        assert {"bucket_turns.py:29", "bucket_turns.py:30", "bucket_turns.py:31"} <= set(att.lines)
        assert report.steady_turns is not None and report.steady_turns.line == "bucket_turns.py:33"


def test_bucket_order_cites_where_the_order_is_decided() -> None:
    view = rank_view(tuple(load_runs(str(BUCKETS))))
    assert view is not None and view.divergence is not None
    for d in view.divergence.diffs:
        (cause,) = d.causes
        assert cause.sources[:4] == (
            "bucket_order.py:54",
            "bucket_order.py:73",
            "bucket_order.py:52",
            "bucket_order.py:48",
        ), cause.sources
        assert f"is {d.variant}'s" in cause.summary
