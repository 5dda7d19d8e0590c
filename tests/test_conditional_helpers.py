"""Work a helper function adds under an `if` of the loop, on a real torch_xla run (CPU) of
tests/data/scripts/adversarial_late.py: from step 3 a helper perturbs the batch along its input
gradient (the batch marked `requires_grad_`) and the step trains on it. The recompile is that
conditional work, cited at the `if` that calls the helper; the batch marked requires_grad is data
the step reads, not a parameter switched to training."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_capture import SCRIPTS, _run
from xlagraph.report import build_report

pytest.importorskip("torch_xla")


def test_a_helper_called_under_an_if_is_conditional_work_at_that_if(tmp_path: Path) -> None:
    script = SCRIPTS / "adversarial_late.py"
    run = _run("adversarial_late", tmp_path, [str(script)])
    assert run.returncode == 0, run.stderr[-2000:]
    (log,) = run.logs()
    report = build_report(log)
    (r,) = [r for r in report.recompiles if r.step == 3]
    assert [str(c.kind) for c in r.causes if not c.info] == ["conditional_work"], r.kinds
    (cause,) = [c for c in r.causes if not c.info]
    assert cause.fix_id == "conditional_work.host_branch"
    when = next(n for n, line in enumerate(script.read_text().splitlines(), 1) if "# WHEN" in line)
    assert cause.sources[0].endswith(f"adversarial_late.py:{when}"), cause.sources
    assert not [x for x in report.recompiles if x.step > 3 and any(not c.info for c in x.causes)]
