"""Issue 37, held_out_46's kelp and loam: work that grows or is picked mid-run, named where the
user decides it. On real torch_xla 2.9 captures (CPU device):

* one more term of a sum over a container's items (`sum(f(p) for p in self.prototypes.values())`
  under torch.compile(openxla), the dict gaining an entry mid-run): `parameter_added` alone, cited
  where the item is added, with no `structure` or `constant_value` for the sum's chain re-paired
  around the new term (`summed_term`) and dynamo's `len(model.prototypes) != 2` read as the
  container's length (`guards`, `value_origin`): held_out_46's kelp (scored) and
  `fixtures/torch_xla/grown_terms/anchor_dict_openxla`;
* a lazy step whose `if loss.item() > limit:` branch runs a CPU-fallback op (`F.huber_loss`,
  `torch.median`) that syncs inside the branch: the cut and the rest of that step are
  `conditional_work` at the `if`, with the torch.where fix (`graph_break`, `branch_rest`), not a
  `graph_break` nor a `structure`: held_out_46's loam (scored) and
  `fixtures/torch_xla/grown_terms/spike_median_lazy`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.diagnose.guards import explain_guard

_CORPUS = FIXTURES / "torch_xla" / "corpus" / "captures"
_OURS = FIXTURES / "torch_xla" / "grown_terms"
_KELP = "h46_kelp_openxla_domain_prototypes"
_LOAM = "h46_loam_lazy_spike_fallback"

# name -> (capture, the script as the report cites it, the bug's step)
TERMS = {
    "kelp": (_CORPUS / _KELP, f"scripts/{_KELP}.py", 4),
    "anchor_dict_openxla": (
        _OURS / "anchor_dict_openxla_capture",
        "fixtures/torch_xla/grown_terms/anchor_dict_openxla.py",
        3,
    ),
}
BRANCHES = {
    "loam": (_CORPUS / _LOAM, f"scripts/{_LOAM}.py", 6),
    "spike_median_lazy": (
        _OURS / "spike_median_lazy_capture",
        "fixtures/torch_xla/grown_terms/spike_median_lazy.py",
        5,
    ),
}


def _script(capture: Path, cited: str) -> list[str]:
    path = FIXTURES.parent / cited if cited.startswith("fixtures/") else capture.parents[1] / cited
    return path.read_text(encoding="utf-8").splitlines()


def _line(lines: list[str], cited: str, start: str) -> str:
    return f"{cited}:{next(i for i, t in enumerate(lines, 1) if t.lstrip().startswith(start))}"


@pytest.mark.parametrize("name", sorted(TERMS))
def test_one_more_term_of_a_sum_is_the_new_input_at_the_line_that_adds_the_item(name: str) -> None:
    capture, cited, step = TERMS[name]
    item = re.compile(r"self\.\w+\[\w+\] = ")  # `self.prototypes[name] = ...`
    added = next(f"{cited}:{i}" for i, t in enumerate(_script(capture, cited), 1) if item.search(t))
    fixed = [r for r in capture_report(capture).recompiles if not r.expected]
    # the retraced forward (loss) and its lazy backward and update
    assert [r.step for r in fixed] == [step, step]
    for r in fixed:
        (cause,) = r.causes
        assert cause.kind.value == "parameter_added", [c.kind.value for c in r.causes]
        assert "summed as one more term" in cause.summary or "read by" in cause.summary
        (a,) = r.attribution
        assert added in a.lines, a.lines


def test_dynamo_s_failed_length_check_is_the_container_s_length() -> None:
    g = explain_guard("len(model.prototypes) != 2")
    assert (g.kind, g.subject, g.before) == ("sequence_length", "model.prototypes", "2")


@pytest.mark.parametrize("name", sorted(BRANCHES))
def test_a_host_decided_branch_that_syncs_is_named_at_its_if(name: str) -> None:
    capture, cited, step = BRANCHES[name]
    lines = _script(capture, cited)
    branch = _line(lines, cited, "if loss.item()")
    fixed = [r for r in capture_report(capture).recompiles if not r.expected]
    # the cut inside the branch, and the rest of that step at its own sync
    assert [r.step for r in fixed] == [step, step]
    for r in fixed:
        (cause,) = r.causes
        assert (cause.kind.value, cause.fix_id) == ("conditional_work", "conditional_work.host_branch")
        assert cause.sources[0] == branch, cause.sources
        assert "torch.where" in cause.hint
