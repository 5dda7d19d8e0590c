"""Two Python scalars that meet (equal as uploaded, so torch_xla passes one input for both) on a
warm-up step whose graph first takes the optimizer's buffers (issue 37). On real torch_xla 2.9
captures (CPU device):

* held_out_50's quokka (scored, its false cause fixed after scoring): label smoothing annealed
  0.12 - 0.02 * step; at step 1 cross_entropy's 1 - eps and Nesterov SGD's momentum are both 0.9,
  on the step that first takes the momentum buffers. That step compiles anyway for the state, so
  the meeting is expected (info), as the split on step 2 already was; the bug (eps reaching 0.0 at
  step 6) is still named on its own;
* fixtures/torch_xla/shared_scalar_warm (its generate.py): an MLP whose fit-vs-L2 mix w is
  annealed; w meets the momentum at step 1 (the state's recompile names it alone), and at step 4,
  after warm-up, w = 1 - w = 0.5 meet: that recompile is no warm-up and stays a cause to fix."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

_QUOKKA = FIXTURES / "torch_xla" / "corpus" / "captures" / "h50_quokka_lazy_smoothing_decay"
_MIX = FIXTURES / "torch_xla" / "shared_scalar_warm" / "fit_meets_momentum_lazy_capture"


def _kinds(report, step: int) -> list[tuple[str, str, bool]]:  # type: ignore[no-untyped-def]
    (recompile,) = [r for r in report.recompiles if r.step == step]
    return [(c.kind.value, c.fix_id, c.info) for c in recompile.causes]


def test_a_meeting_on_the_step_that_makes_state_is_expected() -> None:
    report = capture_report(_QUOKKA)
    assert _kinds(report, 1) == [
        ("state_init", "state_init", True),
        ("parameter_removed", "parameter_added.shared_scalar", True),
    ]
    assert _kinds(report, 2) == [("parameter_added", "parameter_added.shared_scalar", True)]
    assert _kinds(report, 6) == [("conditional_work", "conditional_work.switched_on", False)]


def test_a_meeting_after_warm_up_is_still_a_cause() -> None:
    report = capture_report(_MIX)
    assert _kinds(report, 1) == [("state_init", "state_init", True)]
    ((kind, _, info),) = _kinds(report, 4)
    assert (kind, info) == ("parameter_removed", False)
