"""Updates chained through a shared value (a drift meter, a budget each update adds to) in an order
that changes between steps (issue 37, held_out_50 koala): the matcher pairs each update by its place
in the chain, so the ops' sizes and the means' divisors trade places. That is the reordering, named
as one (`output_permutation`, the inputs with it), never `attribute` plus `structure`. Proved on the
corpus capture (three trackers round-robin, a cycle of three) and on a new real torch_xla capture
beside it (fixtures/torch_xla/reorder_shapes/chained_budget: three statistics reversed on odd
steps, module-level functions chained through a budget)."""

from __future__ import annotations

import json

from tests.conftest import FIXTURES
from xlagraph.api import report
from xlagraph.diagnose import CauseKind
from xlagraph.diff import diff_files

CHAINED = FIXTURES / "torch_xla" / "reorder_shapes" / "chained_budget"
KOALA = FIXTURES / "torch_xla" / "corpus" / "captures" / "h50_koala_lazy_tracker_roundrobin"
MANIFEST = json.loads((CHAINED.parent / "MANIFEST.json").read_text())


def test_chained_updates_reversed_are_one_reordering() -> None:
    result = diff_files(str(CHAINED / "step1.hlo"), str(CHAINED / "step2.hlo"))
    assert [c.kind for c in result.causes] == [CauseKind.OUTPUT_PERMUTATION], [
        c.summary for c in result.causes
    ]
    moved = {(m.left, m.right) for m in result.causes[0].mapping if m.what == "output" and m.left != m.right}
    assert moved == {tuple(m) for m in MANIFEST["chained_budget"]["pairs"]["step1-step2"]["output_moves"]}


def test_koala_cycle_of_three_is_named_at_the_loop() -> None:
    run = report(str(KOALA))
    # Against the first graph (the trackers computed from constants) the reordering is named beside
    # the expected warm-up, and the zeros' unpaired reshapes go with that warm-up.
    first = run.recompiles[0]
    assert first.kinds == ("output_permutation", "state_init"), first.kinds
    assert first.causes[0].sources[0].endswith("h50_koala_lazy_tracker_roundrobin.py:54")
    later = [r for r in run.recompiles if r.step >= 2]
    assert len(later) == 2
    for r in later:
        kinds = [c.kind for c in r.causes]
        assert kinds == [CauseKind.OUTPUT_PERMUTATION], kinds
        assert r.causes[0].sources[0].endswith("h50_koala_lazy_tracker_roundrobin.py:54")


def test_marmot_flip_stored_by_one_method_is_cited_at_the_loop() -> None:
    # Graph C's live tensors were recorded without frames (the report skipped under its budget):
    # only the statement that stores every meter's total (`self.total = self.total + v`) is known,
    # run once per meter, so the loop that calls its method (line 49) ordered them.
    run = report(str(FIXTURES / "torch_xla" / "corpus" / "captures" / "h50_marmot_lazy_gpt2_meter_flip"))
    for r in run.recompiles:
        (order,) = [c for c in r.causes if c.kind is CauseKind.OUTPUT_PERMUTATION]
        assert order.sources[0].endswith("h50_marmot_lazy_gpt2_meter_flip.py:49"), (r.step, order.sources)


def test_ledgers_stored_by_one_method_are_cited_at_the_loop() -> None:
    # The new capture beside marmot (fixtures/torch_xla/meter_turns, a transformer encoder whose
    # later live-tensor reports are skipped): ledgers rotated in place each step, a cycle of three.
    run = report(str(FIXTURES / "torch_xla" / "meter_turns" / "ledger_rotate_capture"))
    assert len(run.recompiles) == 3
    for r in run.recompiles:
        (order,) = [c for c in r.causes if c.kind is CauseKind.OUTPUT_PERMUTATION]
        assert order.sources[0] == "fixtures/torch_xla/meter_turns/ledger_rotate.py:45", (
            r.step,
            order.sources,
        )
