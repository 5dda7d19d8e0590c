"""Warm-up is per phase, not per run: an optimizer created late in a run (fine-tuning after
pretraining, a second model) creates its buffers at its own second step, and tensors made on the
device before a loop (`torch.randn(..., device=dev)`, no sync) are computed, and returned, by its
first graph. A real torch_xla run (CPU) of tests/data/scripts/two_phases.py under
XLAGRAPH_CAPTURE: its report has nothing to fix, and both warm-ups are `state_init`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_capture import SCRIPTS, _run
from xlagraph.report import build_report

pytest.importorskip("torch_xla")


def test_an_optimizer_created_late_in_the_run_warms_up_without_a_cause_to_fix(tmp_path: Path) -> None:
    run = _run("two_phases", tmp_path, [str(SCRIPTS / "two_phases.py")])
    assert run.returncode == 0, run.stderr[-2000:]
    (log,) = run.logs()
    report = build_report(log)
    seen = [(r.step, r.kinds) for r in report.recompiles]
    to_fix = [(r.step, r.kinds) for r in report.recompiles if any(not c.info for c in r.causes)]
    assert not to_fix, to_fix
    # pretraining's warm-up at step 1, fine-tuning's at its second step, after 8 others
    assert {r.step for r in report.recompiles if "state_init" in r.kinds} == {1, 9}, seen
    early, late = (next(r for r in report.recompiles if r.step == k) for k in (1, 9))
    for r in (early, late):  # the optimizer's buffers and the tensors made before the loop
        assert sum(c.kind.value == "state_init" for c in r.causes) == 2, seen


def test_a_param_group_added_mid_run_is_a_switch_then_its_own_warm_up(tmp_path: Path) -> None:
    """tests/data/scripts/unfreeze_late.py: at step 4 a trainer's method unfreezes the encoder and
    adds it to AdamW as a new param group. Step 4 is the switch, cited at the method's
    `requires_grad_` line, its `add_param_group` line and the `if` that calls it; step 5 reads
    the moments AdamW made for the new group on step 4: the new group's warm-up, not a cause."""
    script = SCRIPTS / "unfreeze_late.py"
    run = _run("unfreeze_late", tmp_path, [str(script)])
    assert run.returncode == 0, run.stderr[-2000:]
    (log,) = run.logs()
    report = build_report(log)
    by_step = {r.step: r for r in report.recompiles}
    seen = {k: r.kinds for k, r in by_step.items()}
    text = script.read_text(encoding="utf-8").splitlines()
    marked = {
        m: next(n for n, line in enumerate(text, 1) if f"# {m}" in line) for m in ("SWITCH", "GROUP", "WHEN")
    }
    switch = by_step[4]
    (cause,) = [c for c in switch.causes if not c.info]
    assert cause.fix_id == "trainable.requires_grad", seen
    cited = [
        loc.rpartition(":")[2] for loc in cause.sources if loc.rpartition(":")[0].endswith("unfreeze_late.py")
    ]
    assert cited[:3] == [str(marked[m]) for m in ("SWITCH", "GROUP", "WHEN")], cause.sources
    warm = by_step[5]
    assert warm.kinds and all(c.info for c in warm.causes) and "state_init" in warm.kinds, seen


def test_fine_tuning_after_a_linear_probe_is_a_new_phase_compiled_once(tmp_path: Path) -> None:
    """tests/data/scripts/probe_then_finetune.py: a head probed under torch.no_grad(), then an
    optimizer over the whole model made at step 3. No requires_grad line anywhere: the switch is
    the new optimizer (cited with its `if`), expected once; its momentum follows at step 4."""
    script = SCRIPTS / "probe_then_finetune.py"
    run = _run("probe_then_finetune", tmp_path, [str(script)])
    assert run.returncode == 0, run.stderr[-2000:]
    (log,) = run.logs()
    report = build_report(log)
    seen = {r.step: r.kinds for r in report.recompiles}
    assert not [r.step for r in report.recompiles if any(not c.info for c in r.causes)], seen
    text = script.read_text(encoding="utf-8").splitlines()
    marked = {m: next(n for n, line in enumerate(text, 1) if f"# {m}" in line) for m in ("NEW", "WHEN")}
    (switch,) = [c for r in report.recompiles if r.step == 3 for c in r.causes]
    assert switch.fix_id == "trainable.phase", seen
    cited = [
        x.rpartition(":")[2]
        for x in switch.sources
        if x.rpartition(":")[0].endswith("probe_then_finetune.py")
    ]
    assert cited[:2] == [str(marked["NEW"]), str(marked["WHEN"])], switch.sources
    assert [r.kinds for r in report.recompiles if r.step == 4] == [("state_init",)], seen
