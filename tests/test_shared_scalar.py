"""A Python scalar that changes from step to step meets another scalar the step uses (issue 37: a
Python value named with its lines): torch_xla uploads equal Python scalars once, so on that step
the graph reads one input for both. On real torch_xla 2.9 captures (CPU device,
fixtures/torch_xla/shared_scalar/generate.py):

* `kl_anneal_compile`: a VAE under torch_xla.compile whose KL weight 0.1 * (step + 1) is 0.5 on
  step 4, the 0.5 of `(0.5 * logvar).exp()`; the gradient of the loss, a broadcast 1 that both
  graphs read beside the weight, is no baked twin of it (no `constant_value`);
* `aux_weight_lazy`: a lazy loop whose auxiliary loss weight 1 / (step + 2) is 0.25 on step 2, a
  residual branch's scale.

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
}


def _line(name: str, text: str) -> str:
    lines = (HERE / f"{name}.py").read_text(encoding="utf-8").splitlines()
    return f"{CITED}/{name}.py:{next(i for i, line in enumerate(lines, 1) if text in line)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_two_equal_scalars_on_one_step_are_one_input_named_with_both_lines(name: str) -> None:
    step, reads, other = CASES[name]
    report: RunReport = capture_report(HERE / f"{name}_capture")
    (recompile,) = report.recompiles
    assert (recompile.step, recompile.expected) == (step, False)
    (cause,) = recompile.causes
    assert (cause.kind.value, cause.fix_id) == ("parameter_removed", "parameter_removed.shared_scalar")
    assert "two Python scalars were equal on this step" in cause.summary
    assert {_line(name, reads), _line(name, other)} <= set(cause.sources), cause.sources
