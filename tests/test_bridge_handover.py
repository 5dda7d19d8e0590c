"""torch.compile's openxla bridge runs a full sync at its first compile (step 0), which computes the
lazy forward's activations (and the transposed weights its backward reads) in the bridge's graph:
the user's sync graph of step 0 reads them as inputs, the one of step 1 computes them itself. That
hand-over is the bridge's warm-up, folded into its expected `state_init` (issue 37: held_out_40's
false `parameter_removed` on h40_relay_openxla_aux_losses_grow). An input the step really stopped
feeding after the warm-up is never folded. All real captures (fixtures/torch_xla/bridge_handover/
generate.py and the held_out_40 corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlagraph.capture.reader import read_capture
from xlagraph.diagnose.fixes import fix_id
from xlagraph.diagnose.recompile import Recompile
from xlagraph.report.build import build_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch_xla"
HERE = FIXTURES / "bridge_handover"
RELAY = FIXTURES / "corpus" / "captures" / "h40_relay_openxla_aux_losses_grow"


def _capture(name: str) -> Path:
    (proc,) = (HERE / f"{name}_capture").iterdir()
    return proc


def _user_step1(path: Path) -> Recompile:
    report = build_report(read_capture(str(path))[0])
    (user,) = [r for r in report.recompiles if r.trigger != "dynamo" and r.step == 1]
    return user


@pytest.mark.parametrize(
    "path", [RELAY, _capture("mlp_adam_compiled_loss"), _capture("mlp_sgd_compiled_loss")]
)
def test_the_bridge_handing_activations_over_is_its_warm_up(path: Path) -> None:
    user = _user_step1(path)
    kinds = [str(c.kind) for c in user.causes]
    assert "parameter_removed" not in kinds
    assert user.expected and all(c.info for c in user.causes)
    assert "state_init.bridge_sync" in [fix_id(c.hint) for c in user.causes]


def test_an_input_no_longer_fed_after_the_warm_up_stays_removed() -> None:
    user = _user_step1(_capture("mlp_stops_feeding"))
    assert not user.expected
    assert "parameter_removed" in [str(c.kind) for c in user.causes if not c.info]
    assert "state_init.bridge_sync" not in [fix_id(c.hint) for c in user.causes]


def test_work_only_step_0_does_after_the_warm_up_is_not_the_bridges() -> None:
    user = _user_step1(_capture("mlp_stops_feeding_bias"))
    assert not user.expected
    assert "conditional_work" in [str(c.kind) for c in user.causes if not c.info]
    assert "state_init.bridge_sync" not in [fix_id(c.hint) for c in user.causes]


def _user_sync(path: Path, step: int) -> Recompile:
    report = build_report(read_capture(str(path))[0])
    (user,) = [r for r in report.recompiles if r.trigger != "dynamo" and r.step == step]
    return user


@pytest.mark.parametrize("path, step", [(RELAY, 4), (_capture("probe_joins_at_compile"), 3)])
def test_a_shape_change_pending_beside_the_hand_over_is_new_state_in_its_place(path: Path, step: int) -> None:
    """The step after a bridge's full sync that also trained a weight for the first time (the
    relay's probe, enabled on the step dynamo recompiles; a probe whose compiled loss is first
    called on the step it joins): the handed-over activations (f32[8,16]) and the probe's new Adam
    moments (f32[4,16]) pair by number as a shape change, which is neither switched weights nor a
    dropped input."""
    user = _user_sync(path, step)
    kinds = [str(c.kind) for c in user.causes]
    assert "parameter_shape" not in kinds and "parameter_removed" not in kinds
    assert user.expected and all(c.info for c in user.causes)
    assert "state_init.bridge_sync" in [fix_id(c.hint) for c in user.causes]


def test_the_mid_run_flush_is_told_by_its_case_not_its_words() -> None:
    """The dynamo join finds `bridge_sync`'s mid-run cause by the case the recognizer sets
    (`Cause.case`), which a renderer's rewording cannot lose; a cause that only says its words is
    not it, and a fold that adds to the cause keeps its case."""
    from dataclasses import replace

    from xlagraph.diagnose.causes import Cause, CauseKind
    from xlagraph.diagnose.dynamo_join.handover import _flushed
    from xlagraph.diagnose.recognizers._causes import fold_into
    from xlagraph.diagnose.recognizers.bridge_sync import HINT, MID_RUN

    words = "torch.compile's openxla bridge synced all pending work earlier in this step"
    said = Cause(CauseKind.STATE_INIT, words, HINT, info=True)
    assert not _flushed(said)
    flushed = replace(said, summary="the bridge ran the pending loss in its own graph", case=MID_RUN)
    assert _flushed(flushed)
    other = Cause(CauseKind.OUTPUT_REMOVED, "1 output fewer", HINT)
    (folded,) = fold_into((flushed, other), 0, [1], "and an output with it").causes
    assert _flushed(folded)
