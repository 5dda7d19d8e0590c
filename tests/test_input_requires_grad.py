"""An input whose requires_grad the loop switches under torch.compile (issue 37, the dynamo half
joined to the XLA graphs), on real torch_xla 2.9 CPU captures: dynamo's guard
`requires_grad mismatch` fails, the forward is traced again and the backward returns the input's
gradient. The graphs of that retrace cite the line that switches it (`x.requires_grad_()`) before
the compiled call, with the guard's fix (pass inputs of one requires_grad), not where the tensor
was made with the generic text of a tensor kept alive.

* corpus h47 fjord: images switched on from step 4 for a saliency map (a CNN);
* retrace_steps/input_grad_probe: token embeddings switched on from step 5 for an attribution
  probe (a text classifier).
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

CASES = (
    (
        "fixtures/torch_xla/corpus/captures/h47_fjord_openxla_saliency_input",
        "fixtures/torch_xla/corpus/scripts/h47_fjord_openxla_saliency_input.py",
        "images.requires_grad_(True)",
        4,
    ),
    (
        "fixtures/torch_xla/retrace_steps/input_grad_probe_capture",
        "fixtures/torch_xla/retrace_steps/input_grad_probe.py",
        "    embedded.requires_grad_()",
        5,
    ),
)


@pytest.mark.parametrize(("capture", "script", "switch", "step"), CASES)
def test_switched_input_gradient_cites_the_switch(capture: str, script: str, switch: str, step: int) -> None:
    report = capture_report(FIXTURES.parent / capture)
    line = script_line(script, switch).removeprefix("fixtures/torch_xla/corpus/")
    first = next(r for r in report.recompiles if r.step == step)
    assert first.kinds == ("output_added",)
    attribution = next(a for a in first.attribution if a.kind == "output_added")
    assert attribution.lines[0] == line
    assert "requires_grad" in first.causes[attribution.cause].hint
