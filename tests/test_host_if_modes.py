"""Work a host read of a device value decides (`if loss.item() > limit:`, `if guard.check(loss):`
with `check` reading `.item()`), in the modes users move to (issue 37), on real torch_xla 2.9
captures: fixtures/torch_xla/host_if_modes, made by its generate.py under XLAGRAPH_CAPTURE on the
CPU device (each run's compiles checked against torch_xla's CompileTime in the report's header).

* spike_damp_openxla: the loss under torch.compile (openxla) damps itself inside the compiled
  function when `loss.item() > limit` (a graph break; the `if` runs between the two graphs), the
  update in lazy mode: on the spike the lazy backward's graph takes the damped loss;
* spike_damp_xla_compile: torch_xla.compile'd forward-backward, update and damped update; the
  loop's `if guard.check(loss):` picks the damped update or the plain one;
* spike_damp_eager: the same loop in eager mode (torch_xla.experimental.eager_mode).

Each is named `conditional_work` at its `if` with the fix `conditional_work.host_branch` (keep
the decision on the device), not a tensor kept alive (openxla) or an expected program of its own
(torch_xla.compile, eager; openxla's bridge graph of the code after the break, traced for the other
side): in lazy mode the same bug already is (held_out_22's spike guard)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.report.model import RunReport

HERE = FIXTURES / "torch_xla" / "host_if_modes"


def _report(name: str) -> RunReport:
    return capture_report(HERE / f"{name}_capture")


def _to_fix(report: RunReport) -> list[tuple[int, str, str, tuple[str, ...]]]:
    return [
        (r.step, a.kind, r.causes[a.cause].fix_id, a.lines)
        for r in report.recompiles
        if not r.expected
        for a in r.attribution
    ]


def test_openxla_a_loss_damped_under_an_item_read_is_named_at_the_if() -> None:
    script = "fixtures/torch_xla/host_if_modes/spike_damp_openxla.py"
    report = _report("spike_damp_openxla")
    assert report.compiles == report.compiles_reported == 6, (report.compiles, report.compiles_reported)
    # The lazy update graph, and the bridge's graph of the code after the break, traced for the
    # damped side (first compiled at step 3, from no user frame): the same `if`, nothing expected.
    found = _to_fix(report)
    assert len(found) == 2 and not any(r.expected for r in report.recompiles), found
    for step, kind, fix, lines in found:
        assert (step, kind, fix) == (3, "conditional_work", "conditional_work.host_branch"), (step, kind, fix)
        assert lines[:2] == (
            script_line(script, "    if loss.item() > limit:"),
            script_line(script, "        loss = loss * 0.1"),
        ), lines


@pytest.mark.parametrize("name", ["spike_damp_xla_compile", "spike_damp_eager"])
def test_a_host_read_that_picks_the_compiled_function_is_named_at_the_if(name: str) -> None:
    script = f"fixtures/torch_xla/host_if_modes/{name}.py"
    report = _report(name)
    assert report.compiles == report.compiles_reported == 3, (report.compiles, report.compiles_reported)
    ((_, kind, fix, lines),) = _to_fix(report)
    assert (kind, fix) == ("conditional_work", "conditional_work.host_branch"), (kind, fix)
    # The `if`, the read inside the guard's check, then the call of the damped update.
    assert lines == (
        script_line(script, "if guard.check(loss):"),
        script_line(script, "value = loss.item()"),
        script_line(script, "        damped_update()"),
    ), lines
    # The plain update (the other branch, the first to run) stays the step's own program.
    site = script_line(script, "        update()")
    (plain,) = [r for r in report.recompiles if r.expected and r.call_site == site]
    assert plain.causes[0].fix_id == "own_graph", plain.causes


@pytest.mark.parametrize("name", ["smooth_switch_xla_compile", "smooth_switch_eager"])
def test_a_number_the_loop_sets_under_a_host_read_is_named_where_it_is_set(name: str) -> None:
    """The compiled step takes `label_smoothing` as a Python float; the loop sets it from 0.0 to
    0.1 under `if loss.item() < 1.2:` after the call: the switched-on work is named at that `if`
    and assignment (the line to change), then the call inside the step; no warm-up state beside
    it (cross_entropy's integer scalar is read, never counted like BatchNorm's step counter)."""
    script = f"fixtures/torch_xla/host_if_modes/{name}.py"
    report = _report(name)
    assert report.compiles == report.compiles_reported, (report.compiles, report.compiles_reported)
    ((step, kind, fix, lines),) = _to_fix(report)
    assert step >= 3, step
    assert (kind, fix) == ("conditional_work", "conditional_work.switched_on"), (kind, fix)
    assert lines == (
        script_line(script, "        if loss.item() < 1.2:"),
        script_line(script, "            smooth = 0.1"),
        script_line(script, "label_smoothing=smooth"),
    ), lines
    (recompile,) = report.recompiles
    assert [c.kind.value for c in recompile.causes] == ["conditional_work"], recompile.causes


def test_an_update_skipped_by_a_host_read_is_named_at_the_if_around_step() -> None:
    """skip_update_lazy: a trainer skips `self.optimizer.step()` when the loss read with `.item()`
    is above a ceiling (an outlier batch at step 4). The update's ops cite AdamW's own lines only,
    so the `if` is found from the user's `step()` calls of the optimizer they made from
    torch.optim: no update every k steps (gradient accumulation's expected pair of graphs)."""
    script = "fixtures/torch_xla/host_if_modes/skip_update_lazy.py"
    found = _to_fix(_report("skip_update_lazy"))
    assert [(s, k, f) for s, k, f, _ in found] == [(4, "conditional_work", "conditional_work.host_branch")]
    assert found[0][3][0] == script_line(script, "        if value < self.ceiling:"), found
