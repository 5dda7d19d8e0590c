"""A module under torch.compile(backend="openxla") called twice per step, the second call inside
`torch.set_grad_enabled(step < k)` (issue 37: held_out_47's grove, 6 false causes). Step 0's
backward compile makes the bridge run a full sync that takes every pending op; on step 1 the same
work splits into the bridge's own input syncs (a second backward call's graph of its own) and the
user's sync, which reads a weight under another number. All of step 1 is torch.compile's warm-up
(`state_init.bridge_sync`, info); the grad-mode switch at step k stays the one change, cited at the
`with` and named with its fix. Real captures: the held-out script (SGD) and
fixtures/torch_xla/grad_switch_bridge/generate.py (another model, Adam)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlagraph.capture.reader import read_capture
from xlagraph.diagnose.fixes import fix_id
from xlagraph.report.build import build_report
from xlagraph.report.model import RunReport

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch_xla"
GROVE = FIXTURES / "corpus" / "captures" / "h47_grove_openxla_stopgrad_target"
(TEACHER,) = (FIXTURES / "grad_switch_bridge" / "frozen_teacher_branch_capture").iterdir()

# capture, the step the grad mode switches at, the `with` line
CASES = [
    (GROVE, 3, "h47_grove_openxla_stopgrad_target.py:37"),
    (TEACHER, 4, "frozen_teacher_branch.py:36"),
]


def _report(path: Path) -> RunReport:
    return build_report(read_capture(str(path))[0])


@pytest.mark.parametrize(("path", "switch", "line"), CASES)
def test_the_step_after_the_bridges_first_full_sync_is_warm_up(path: Path, switch: int, line: str) -> None:
    step1 = [r for r in _report(path).recompiles if r.step == 1]
    assert {r.trigger for r in step1} >= {"dynamo", "sync"}  # the bridge's graphs and the user's
    for r in step1:
        assert r.expected, (r.variant, r.kinds)
        assert "state_init.bridge_sync" in [fix_id(c.hint) for c in r.causes]


@pytest.mark.parametrize(("path", "switch", "line"), CASES)
def test_the_grad_mode_switch_stays_the_change(path: Path, switch: int, line: str) -> None:
    report = _report(path)
    (first,) = [r for r in report.recompiles if r.step == switch and not r.expected]
    cause = first.causes[0]
    assert str(cause.kind) == "conditional_work" and not cause.info
    assert fix_id(cause.hint) == "trainable.switched_grad_mode"
    assert any(s.endswith(line) for s in cause.sources)
    # nothing before the switch is named as a change
    assert all(r.expected for r in report.recompiles if r.step < switch)


@pytest.mark.parametrize(("path", "switch", "line"), CASES)
def test_the_step_after_the_switch_says_the_switch(path: Path, switch: int, line: str) -> None:
    """The lazy backward without the branch, in its steady form on the next step (the switch's
    step was cut by the bridge's full sync), is the same switch, not inputs removed."""
    (after,) = [r for r in _report(path).recompiles if r.step == switch + 1 and not r.expected]
    cause = after.causes[0]
    assert str(cause.kind) == "conditional_work" and not cause.info
    assert fix_id(cause.hint) == "trainable.switched_grad_mode"
    assert any(s.endswith(line) for s in cause.sources)
    assert [c for c in after.causes if not c.info] == [cause]
