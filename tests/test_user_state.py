"""The warm-up of state made by an update rule the user wrote (not torch.optim's): a momentum made
from the first gradient on the first step and read back, decayed by a scalar the first step did not
read, from the second on. The graph changes once: `state_init` alone (issue 37: no false cause
beside the expected warm-up). Real torch_xla 2.9 captures (CPU device):

* `fixtures/torch_xla/user_state/heavy_ball_compile`: torch_xla.compile of a step whose heavy-ball
  momentum is written in the script (`v = g.clone() if v is None else beta * v + g`);
* `fixtures/torch_xla/user_state/lion_lazy`: a lazy loop with a Lion rule of the user's (a control:
  its momentum is read back with factors the first step read too);
* held_out_45's cobalt (scored; its warm-up's false cause fixed after its first run): a tabular
  model with a hand-written momentum and layer-wise LR warm-up under torch_xla.compile."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

HERE = FIXTURES / "torch_xla" / "user_state"
CAPTURES = {
    "heavy_ball_compile": HERE / "heavy_ball_compile_capture",
    "lion_lazy": HERE / "lion_lazy_capture",
    "cobalt": FIXTURES / "torch_xla" / "corpus" / "captures" / "h45_cobalt_compiled_warmup_groups",
}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_the_users_own_update_state_is_its_warm_up_alone(name: str) -> None:
    report = capture_report(CAPTURES[name])
    (warm,) = [r for r in report.recompiles if r.step == 1]
    assert warm.expected and warm.kinds == ("state_init",), warm.kinds
