"""Gradients rescaled only when their norm, read on the host, passes a limit (issue 37: data-
dependent control flow named at its `if`). On real torch_xla 2.9 captures (CPU device):

* held_out_50's pangolin (scored, its miss fixed after scoring): a GRU forecaster, `value =
  norm.item()`, `if value > MAX_NORM:` over `for p in params: p.grad.mul_(MAX_NORM / value)`, SGD.
  The factor is a scalar input and SGD's learning rate another: the matcher paired the factor with
  the learning rate, so the scaling showed as changed ops (`structure`) and the learning rate as a
  new input (`parameter_added`); both are the `if`'s work (`_factor_paired_elsewhere`);
* fixtures/torch_xla/host_clip (its generate.py): a plain loop that damps with
  `torch._foreach_mul_` under `if gnorm >= CAP:` (a Conv1d regressor, mse_loss, SGD): the same
  pairing of the factor with the learning rate (before the rule: a false `parameter_added` beside
  the `if`); and a Trainer class whose `rescale` scales with `g.mul_` under `if spike >
  self.limit:` (an EmbeddingBag tagger), where the factor keeps its own input: a neighbour that
  was right before and must stay so.

Each is one `conditional_work` cited first at the `if`, with the fix `conditional_work.host_branch`
(choose on the device with torch.where); no `structure`, no new input beside it."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.report.model import RunReport

_PANGOLIN = "h50_pangolin_lazy_manual_clip_item"
_HERE = "fixtures/torch_xla/host_clip"
CASES = {
    "pangolin": (
        FIXTURES / "torch_xla" / "corpus" / "captures" / _PANGOLIN,
        f"fixtures/torch_xla/corpus/scripts/{_PANGOLIN}.py",
        f"scripts/{_PANGOLIN}.py",
        6,
        "    if value > MAX_NORM:",
    ),
    "trainer": (
        FIXTURES / "torch_xla" / "host_clip" / "rescale_on_spike_lazy_capture",
        f"{_HERE}/rescale_on_spike_lazy.py",
        f"{_HERE}/rescale_on_spike_lazy.py",
        5,
        "        if spike > self.limit:",
    ),
    "foreach": (
        FIXTURES / "torch_xla" / "host_clip" / "damp_conv_regressor_lazy_capture",
        f"{_HERE}/damp_conv_regressor_lazy.py",
        f"{_HERE}/damp_conv_regressor_lazy.py",
        2,
        "        if gnorm >= CAP:",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rescale_a_host_read_decides_is_named_at_its_if(name: str) -> None:
    capture, script, cited, step, text = CASES[name]
    report: RunReport = capture_report(capture)
    scored = [r for r in report.recompiles if not r.expected]
    (recompile,) = scored
    assert recompile.step == step, recompile.step
    assert [(c.kind.value, c.fix_id) for c in recompile.causes] == [
        ("conditional_work", "conditional_work.host_branch")
    ], recompile.causes
    (cause,) = recompile.causes
    assert cause.sources[0] == script_line(script, text).replace(script, cited), cause.sources
