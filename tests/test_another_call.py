"""One `torch_xla.compile`d function called from a second line for more of its values (issue 37:
look-alike outputs that come and go), on real torch_xla 2.9 CPU captures. Both graphs carry the
name `torch_xla.compile` gave the function, so the second call's first graph is a changed graph
of that function (its outputs, added under an `if` on a Python argument), not new code at a new
call site (an evaluation pass's `own_graph`, expected).

* corpus h47 ember: eager mode, a denoising autoencoder's step that returns the noisy input and
  the reconstruction on logging iterations, called from the logging branch;
* returned_items/probe_call_site: lazy, a regressor's step that returns the hidden activations and
  per-row errors every 4th step, called from that branch.
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

CASES = (
    (
        "fixtures/torch_xla/corpus/captures/h47_ember_eager_recon_on_log",
        "fixtures/torch_xla/corpus/scripts/h47_ember_eager_recon_on_log.py",
        "if with_images:",
        4,
    ),
    (
        "fixtures/torch_xla/returned_items/probe_call_site_capture",
        "fixtures/torch_xla/returned_items/probe_call_site.py",
        "if want_probe:",
        3,
    ),
)


@pytest.mark.parametrize(("capture", "script", "branch", "step"), CASES)
def test_second_call_site_returns_more(capture: str, script: str, branch: str, step: int) -> None:
    report = capture_report(FIXTURES.parent / capture)
    line = script_line(script, branch).removeprefix("fixtures/torch_xla/corpus/")
    first = next(r for r in report.recompiles if r.step == step)
    assert first.kinds == ("output_added",)
    assert not first.expected
    assert line in first.attribution[0].lines
