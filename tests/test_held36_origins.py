"""Two misses of held_out_36 (issue 37), on its real torch_xla 2.9 captures:

* h36_churn_lazy_wd_anneal_zero: a weight decay annealed to exactly 0.0 is written into each param
  group (`group["weight_decay"] = weight_decay_at(step, ...)`) and read by SGD inside `opt.step()`,
  the only user line the graph cites: the number's origin is followed into the param groups, so the
  report cites the schedule's computation and the write before `opt.step()`;
* h36_meter_lazy_clip_when_needed: `value = gnorm.item()`, then `if value > MAX_NORM:` scales the
  gradients on some steps only: an `if` on a name set from a host read decides on the device's
  value as `if gnorm.item() > MAX_NORM:` does (data-dependent control flow, fixed by choosing on the
  device), not an option library code skips at 0."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

CORPUS = FIXTURES / "torch_xla" / "corpus" / "captures"
_PREFIX = "fixtures/torch_xla/corpus/"


def _line(name: str, text: str) -> str:
    """The capture cites paths under the corpus."""
    return script_line(f"{_PREFIX}scripts/{name}.py", text).replace(_PREFIX, "")


def test_a_schedule_written_into_param_groups_is_cited_where_it_is_computed() -> None:
    name = "h36_churn_lazy_wd_anneal_zero"
    (recompile,) = capture_report(CORPUS / name).recompiles
    assert [c.fix_id for c in recompile.causes] == ["conditional_work.switched_on"], recompile.causes
    computed = _line(name, "return start * max(0, steps - step) / steps")
    written = _line(name, 'group["weight_decay"] = weight_decay_at(')
    (attribution,) = recompile.attribution
    # the schedule's computation and its write, then the opt.step() that reads it
    assert list(attribution.lines[:3]) == [computed, written, _line(name, "opt.step()")], attribution.lines


def test_an_if_on_a_value_read_with_item_above_it_is_a_data_dependent_branch() -> None:
    name = "h36_meter_lazy_clip_when_needed"
    (recompile,) = [r for r in capture_report(CORPUS / name).recompiles if r.step == 3]
    assert [c.fix_id for c in recompile.causes] == ["conditional_work.host_branch"], recompile.causes
    (cause,) = recompile.causes
    # the `if` decides, and the summary names the `.item()` read above it
    assert _line(name, "value = gnorm.item()") in cause.summary, cause.summary
    assert recompile.attribution[0].lines[0] == _line(name, "if value > MAX_NORM:"), recompile.attribution
