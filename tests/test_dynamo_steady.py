"""The steady state starts after torch.compile's last compile too (issue 37). A retrace whose graphs
XLA had cached compiles nothing in XLA, but its step runs the openxla bridge's warm-up graphs again;
counted as steady, that step made the run's graphs look as if they took turns ("4 graphs take turns:
other tensors kept alive"). Real torch_xla 2.9 capture (CPU): fixtures/torch_xla/dynamo_steady."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.report.model import RunReport

CAPTURE = FIXTURES / "torch_xla" / "dynamo_steady" / "temperature_retrace_capture"


def test_a_retrace_without_an_xla_compile_ends_the_warm_up() -> None:
    report: RunReport = capture_report(CAPTURE)
    assert report.dynamo is not None
    retraced = [c.step for c in report.dynamo.recompiles]
    assert retraced and report.steady_from_step is not None, (retraced, report.steady_from_step)
    assert report.steady_from_step > max(retraced), (report.steady_from_step, retraced)
    assert report.steady_turns is None, report.steady_turns
    assert not report.recompiles  # XLA compiled nothing anew
