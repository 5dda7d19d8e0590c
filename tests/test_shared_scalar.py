"""A Python scalar that changes from step to step meets another scalar the step uses (issue 37: a
Python value named with its lines): torch_xla uploads equal Python scalars once, so on that step
the graph reads one input for both. On real torch_xla 2.9 captures (CPU device,
fixtures/torch_xla/shared_scalar/generate.py):

* `kl_anneal_compile`: a VAE under torch_xla.compile whose KL weight 0.1 * (step + 1) is 0.5 on
  step 4, the 0.5 of `(0.5 * logvar).exp()`; the gradient of the loss, a broadcast 1 that both
  graphs read beside the weight, is no baked twin of it (no `constant_value`);
* `aux_weight_lazy`: a lazy loop whose auxiliary loss weight 1 / (step + 2) is 0.25 on step 2, a
  residual branch's scale;
* `margin_eager`: eager mode with a compiled step, a contrastive margin 0.125 * (step + 1) that is
  0.5 on the loop's fourth step, the weight of the user's average of two losses.

Each recompile is one `parameter_removed` that names both inputs and both lines, with the fix
`parameter_removed.shared_scalar`; no permutation of the renumbered inputs, no `structure` at the
readers, beside it."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.report.model import RunReport

HERE = FIXTURES / "torch_xla" / "shared_scalar"
CITED = "fixtures/torch_xla/shared_scalar"
# capture -> (step of the recompile, the line that reads the changing value, the other scalar's)
CASES = {
    "kl_anneal_compile": (4, "loss = rec + beta * kl", "z = mu + torch.randn_like(mu)"),
    "aux_weight_lazy": (2, "+ aux_weight * F.cross_entropy", "return h + BRANCH_SCALE * self.branch(h)"),
    # the margin is read by `margin - d`, whose only frame torch_xla records is Tensor.__rsub__'s
    # (torch/_tensor.py): the user's line cited is the call that passes it, the average's 0.5
    "margin_eager": (4, "loss = 0.5 * (contrastive", "loss = 0.5 * (contrastive"),
}


def _line(name: str, text: str) -> str:
    lines = (HERE / f"{name}.py").read_text(encoding="utf-8").splitlines()
    return f"{CITED}/{name}.py:{next(i for i, line in enumerate(lines, 1) if text in line)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_two_equal_scalars_on_one_step_are_one_input_named_with_both_lines(name: str) -> None:
    step, reads, other = CASES[name]
    report: RunReport = capture_report(HERE / f"{name}_capture")
    # an optimizer's state made on the first step (Adam) is the one other recompile: warm-up
    (recompile,) = [r for r in report.recompiles if not r.expected]
    assert {c.kind.value for r in report.recompiles if r.expected for c in r.causes} <= {"state_init"}
    assert recompile.step == step
    (cause,) = recompile.causes
    assert (cause.kind.value, cause.fix_id) == ("parameter_removed", "parameter_removed.shared_scalar")
    assert "two Python scalars were equal on this step" in cause.summary
    assert {_line(name, reads), _line(name, other)} <= set(cause.sources), cause.sources


# On the step an optimizer makes its state the user's scalar rides on the state's equal new input
# (SGD's momentum 0.9): part of the state's expected warm-up, cited at the user's line.
_JASPER = "h43_jasper_eager_meters_json_resume"  # held_out_43 (scored); its false cause fixed after
WARM_UP = {
    "ema_momentum_lazy": (
        HERE / "ema_momentum_lazy_capture",
        f"{CITED}/ema_momentum_lazy.py",
        "smoothed = SMOOTHING * smoothed",
    ),
    "jasper": (
        FIXTURES / "torch_xla" / "corpus" / "captures" / _JASPER,
        f"scripts/{_JASPER}.py",
        "meters[name] = 0.9 * meters[name] + 0.1 * loss",
    ),
}


@pytest.mark.parametrize("name", sorted(WARM_UP))
def test_a_scalar_riding_on_new_state_is_that_states_warm_up(name: str) -> None:
    capture, cited, text = WARM_UP[name]
    report: RunReport = capture_report(capture)
    (warm_up,) = [r for r in report.recompiles if any(c.kind.value == "state_init" for c in r.causes)]
    assert warm_up.expected, warm_up.causes
    (cause,) = warm_up.causes
    assert "read in" in cause.summary and "new state input of equal value" in cause.summary
    script = FIXTURES.parent / cited if cited.startswith("fixtures/") else capture.parents[1] / cited
    lines = script.read_text(encoding="utf-8").splitlines()
    line = next(i for i, t in enumerate(lines, 1) if text in t)
    assert f"{cited}:{line}" in cause.sources, cause.sources


def test_under_torch_compile_the_forward_and_backward_graphs_name_the_shared_upload() -> None:
    """`loss_weight_openxla`: a weight passed as a float (a dynamo guard on each value; the bridge
    uploads it as data, so torch_xla's graphs replay) is 0.5 on step 3, the model's hidden scale. Both
    scalars cite only torch/_ops.py, the line of every op's scalar in torch.compile's graphs: the
    forward's and the backward's graphs of that step are each the shared upload, not a removed input
    with the state-reset fix."""
    name = "loss_weight_openxla"
    report: RunReport = capture_report(HERE / f"{name}_capture")
    fixed = [r for r in report.recompiles if not r.expected]
    assert [r.step for r in fixed] == [3, 3]
    for r in fixed:
        (cause,) = r.causes
        assert cause.fix_id == "parameter_removed.shared_scalar"
        # the graphs cite torch/_ops.py only; the report places them at the compiled function's
        # line that reads the weight (through dynamo's frames)
        assert r.lines[0] == _line(name, "return F.mse_loss(net(x), y) * weight"), r.lines


_HERON = "h45_heron_eager_meter_lists"  # held_out_45 (scored); its warm-up's false cause fixed after


@pytest.mark.parametrize(
    "capture",
    [
        HERE / "meters_momentum_compile_capture",
        HERE / "meters_momentum_eager_capture",
        FIXTURES / "torch_xla" / "corpus" / "captures" / _HERON,
    ],
    ids=["compile", "eager", "heron"],
)
def test_meters_decayed_by_the_momentums_value_are_only_the_states_warm_up(capture) -> None:  # type: ignore[no-untyped-def]
    """Meters decayed by 0.9 beside SGD's momentum 0.9, made on the second step: the warm-up says
    `state_init` alone. In heron the meters' readers of their 0.9 are left unpaired by the matcher
    (they read the momentum's input, which the update reads too): each has a twin of its opcode and
    shape that reads the new scalar state input."""
    report: RunReport = capture_report(capture)
    warm = [r for r in report.recompiles if any(c.kind.value == "state_init" for c in r.causes)]
    assert warm and all(r.expected for r in warm), [(r.step, r.kinds) for r in warm]
