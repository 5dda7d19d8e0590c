"""A `while` whose test reads a value from the device (`while seen.item() < budget`, `while
bool(count < target)`) decides on the host how many times its body runs in a step: lazy tracing
unrolls it, so each count is a graph of its own, for the step and for the read of the test at each
iteration (issue 37: data-dependent control flow named at its line). On real torch_xla 2.9 captures
(CPU device):

* `fixtures/torch_xla/while_on_device/pixel_budget_lazy`: a segmentation CNN accumulating crops
  until enough annotated pixels were seen (an implicit sync at `bool(...)`), 2 crops then 3;
* held_out_44's kestrel (scored; its false cause fixed after its first run): a token tagger
  accumulating micro-batches `while seen.item() < 24`, 2 then 3.

Each recompile of the new count is one `conditional_work` at the `while`, with the fix that runs a
fixed number of iterations; no `structure`, `attribute` or `parameter_added` beside it."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

_KESTREL = "h44_kestrel_lazy_label_budget_while"
CASES = {
    "pixel_budget_lazy": (
        FIXTURES / "torch_xla" / "while_on_device" / "pixel_budget_lazy_capture",
        "fixtures/torch_xla/while_on_device/pixel_budget_lazy.py",
        4,
    ),
    "kestrel": (FIXTURES / "torch_xla" / "corpus" / "captures" / _KESTREL, f"scripts/{_KESTREL}.py", 5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_while_on_a_device_value_is_named_at_the_while(name: str) -> None:
    capture, cited, step = CASES[name]
    script = FIXTURES.parent / cited if cited.startswith("fixtures/") else capture.parents[1] / cited
    lines = script.read_text(encoding="utf-8").splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.lstrip().startswith("while "))
    report = capture_report(capture)
    fixed = [r for r in report.recompiles if not r.expected]
    # the condition's graph at the extra iteration, and the step's graph with one more body
    assert [r.step for r in fixed] == [step, step]
    for r in fixed:
        (cause,) = r.causes
        assert (cause.kind.value, cause.fix_id) == ("conditional_work", "conditional_work.host_iterations")
        assert cause.sources[0] == f"{cited}:{line}", cause.sources
