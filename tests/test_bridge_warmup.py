"""torch.compile's openxla bridge syncs all pending work when it first compiles a graph (step 0), so
the user's own sync graph of step 1 returns the loss (and what feeds it) that the bridge's graph ran
on step 0. On a step that also creates optimizer state, that difference sits beside `state_init` and
the state's update work: it is the bridge's warm-up, expected, and no recompile is left to fix. Two
real captures of the compiled held-out rounds (an Adam CNN with a clean loop; an SGD MLP whose
graph break is elsewhere) had it named `output_added` with a kept-alive fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlagraph.capture.reader import read_capture
from xlagraph.diagnose.fixes import fix_id
from xlagraph.report.build import build_report

BASE = Path(__file__).resolve().parents[1] / "fixtures" / "torch_xla" / "compiled"


@pytest.mark.parametrize(
    ("held", "name"),
    [("heldout_captures", "fixed_shape_cnn_train"), ("heldout2_captures", "norm_clip_break_train")],
)
def test_the_bridge_warm_up_beside_optimizer_state_is_expected(held: str, name: str) -> None:
    report = build_report(read_capture(str(BASE / held / name / "capture"))[0])
    (user,) = [r for r in report.recompiles if r.trigger != "dynamo"]
    assert user.step == 1 and user.expected
    assert [str(c.kind) for c in user.causes] == ["state_init", "state_init"]
    assert all(c.info for c in user.causes)
    assert fix_id(user.causes[1].hint) == "state_init.bridge_sync"
