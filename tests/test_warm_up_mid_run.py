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
