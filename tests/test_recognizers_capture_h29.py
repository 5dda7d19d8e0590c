"""held_out_29's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def test_work_back_from_the_bridge_s_first_sync_with_its_gradients_is_warm_up() -> None:
    """torch.compile(openxla): on step 0 the bridge's first compile of the backward synced all
    pending work (the loss, the regularizer terms, their backward) in a graph of its own, and the
    user's `mark_step` graph read the gradients it computed as inputs. On step 1 that work is back
    in the user's graph: the gradient inputs (each of a weight's shape) are gone and the loss's
    inputs and work are new. torch.compile's warm-up, expected (was parameter_added and
    parameter_removed, two false causes); the reordered regularizer at step 4 is still named."""
    report = capture_report(CAPTURES / "h29_ner_openxla_regularizer_reinsert")
    by_step = {r.step: r for r in report.recompiles if r.trigger != "dynamo"}
    warm = by_step[1]
    assert warm.expected and [c.fix_id for c in warm.causes] == ["state_init.bridge_sync"], warm.causes
    assert [str(c.kind) for c in by_step[4].causes if not c.info] == ["parameter_permutation"]


def test_a_step_the_compiled_program_no_longer_runs_is_not_the_bridge_s_warm_up() -> None:
    """The same shape of difference where dynamo gave up on the function (its recompile limit, a
    Python float specialized every step): the whole step runs lazily in the user's graph at step
    8, with no bridge sync on that step. No work of the bridge's came back there: not warm-up."""
    capture = FIXTURES / "torch_xla" / "compiled" / "heldout5_captures" / "mixup_mixer_train" / "capture"
    report = capture_report(capture)
    (late,) = [r for r in report.recompiles if r.step == 8]
    assert not late.expected
    assert "state_init.bridge_sync" not in [c.fix_id for c in late.causes]
