"""held_out_47's three misses left (issue 37), each rule on the scored capture and on one more real
torch_xla 2.9 capture (CPU) of the same pattern with another model:

* a loop over traced work that a host read stops (`if err.item() < tol: break`): the recompile of
  the step whose loop ran another number of times is one `conditional_work` at that `if`, with the
  fixed-iterations fix, even where the pairing of the repeated block's ops shifted onto a line
  before the loop that makes ops of the same kinds (`q = q / q.sum()` ahead of a Sinkhorn loop);
  iris (`h47_iris_lazy_sinkhorn_break`) and `while_on_device/median_break_lazy` (Weiszfeld
  iterations of a geometric median);
* an `output_permutation` whose graph was compiled while source lines were off (no frames on its
  ops or its live tensors): named at the loop that updates the tensors, found from the line that
  stores each where the program keeps it; anvil (`h47_anvil_compiled_stat_lru`, an LRU
  OrderedDict) and `reorder/probe_lru_compiled` (a recency list);
* a torch.compile guard on a Python argument that an `if` in the compiled function tests (a str
  picking a mask): the fix passes the selection as a tensor (`conditional_work.python_argument`,
  proved by fixtures/torch_xla/fixes/conditional_work.python_argument); hazel
  (`h47_hazel_openxla_mask_kind_str`) and `guard_cause/window_kind_openxla` (a band window)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.report.model import RunReport

CORPUS = FIXTURES / "torch_xla" / "corpus" / "captures"
XLA = FIXTURES / "torch_xla"


def _script(capture: Path, cited: str) -> Path:
    return FIXTURES.parent / cited if cited.startswith("fixtures/") else capture.parents[1] / cited


def _line(capture: Path, cited: str, text: str) -> str:
    lines = _script(capture, cited).read_text(encoding="utf-8").splitlines()
    return f"{cited}:{next(i for i, t in enumerate(lines, 1) if text in t)}"


def _fixed(report: RunReport, step: int) -> list:  # type: ignore[type-arg]
    return [r for r in report.recompiles if not r.expected and r.step >= step]


_IRIS = "h47_iris_lazy_sinkhorn_break"
BREAKS = {
    "iris": (CORPUS / _IRIS, f"scripts/{_IRIS}.py", 6, "if err.item() < TOL"),
    "median": (
        XLA / "while_on_device" / "median_break_lazy_capture",
        "fixtures/torch_xla/while_on_device/median_break_lazy.py",
        5,
        "if moved.item() < TOL",
    ),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_loop_a_host_read_stops_is_named_at_its_if(name: str) -> None:
    capture, cited, step, test = BREAKS[name]
    report = capture_report(capture)
    fixed = _fixed(report, step)
    assert [r.step for r in fixed] == [step]
    (cause,) = fixed[0].causes
    assert (cause.kind.value, cause.fix_id) == ("conditional_work", "conditional_work.host_iterations")
    assert cause.sources[0] == _line(capture, cited, test), cause.sources


_ANVIL = "h47_anvil_compiled_stat_lru"
ORDERS = {
    "anvil": (CORPUS / _ANVIL, f"scripts/{_ANVIL}.py", 6, "for name, (value, update) in self.stats.items()"),
    "probe_lru": (
        XLA / "reorder" / "probe_lru_compiled_capture",
        "fixtures/torch_xla/reorder/probe_lru_compiled.py",
        12,
        "for key in self.recency:",
    ),
}


@pytest.mark.parametrize("name", sorted(ORDERS))
def test_a_reorder_compiled_with_source_lines_off_is_named_at_its_loop(name: str) -> None:
    capture, cited, step, header = ORDERS[name]
    report = capture_report(capture)
    fixed = _fixed(report, step)
    assert len(fixed) >= 2
    for r in fixed:
        assert {c.kind.value for c in r.causes if not c.info} == {"output_permutation"}
        cause = next(c for c in r.causes if not c.info)
        assert cause.sources[0] == _line(capture, cited, header), (r.variant, cause.sources)
    # the first of them is the graph compiled while source lines were off: its tensors carry no frames
    assert any("source lines off" in n for n in report.notes)


_HAZEL = "h47_hazel_openxla_mask_kind_str"
GUARDS = {
    "hazel": (CORPUS / _HAZEL, f"scripts/{_HAZEL}.py", 5, 'if mask_kind == "causal":'),
    "window_kind": (
        XLA / "guard_cause" / "window_kind_openxla_capture",
        "fixtures/torch_xla/guard_cause/window_kind_openxla.py",
        4,
        'if window == "band":',
    ),
}


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_a_guard_on_a_str_argument_is_fixed_by_passing_a_tensor(name: str) -> None:
    capture, cited, step, test = GUARDS[name]
    report = capture_report(capture)
    fixed = _fixed(report, step)
    assert fixed and fixed[0].step == step
    (cause,) = [c for c in fixed[0].causes if not c.info]
    assert (cause.kind.value, cause.fix_id) == ("conditional_work", "conditional_work.python_argument")
    assert cause.sources[0] == _line(capture, cited, test), cause.sources
    assert "tensor" in cause.hint and "mask" in cause.hint
