"""No false notes, on real torch_xla 2.9 captures (PJRT_DEVICE=CPU) of fixtures/torch_xla/notes/.

- `loss.item()` after the step's sync costs nothing: no note calls `.item()` (torch_xla's
  `_local_scalar_dense`) an op run on the CPU that cuts the step.
- `print(loss)` in the middle of every step cuts every step in two without a recompile: the report
  lists it as a `graph_break` finding with its line (text and JSON); `check` does not fail on it.
- A random tensor the script creates before the loop is no dropout (no train()/eval() or p=0 fix).
- An EMA copy made with copy.deepcopy shares the weights until its first update: expected
  `state_init`, not `parameter_added` with "create it before the loop" (it was).
- A cut whose line a capture did not record is not told to run under XLAGRAPH_CAPTURE.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose.evidence import Context
from xlagraph.diagnose.recognizers.graph_break import _unrecorded
from xlagraph.render.report_json import report_to_json
from xlagraph.render.report_text import render_report_text
from xlagraph.report import build_report, check_run, load_runs
from xlagraph.report.model import RunReport
from xlagraph.runlog import RunLog

NOTES = FIXTURES / "torch_xla" / "notes"
SCRIPTS = ("item_after_sync", "print_mid_step", "ema_copy")
TIMEOUT = 300


def _env(capture: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XLAGRAPH_", "PT_XLA_DEBUG", "_XLAGRAPH"))
        and k not in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "XLA_FLAGS", "XLA_SAVE_TENSORS_FILE")
    }
    env.update(PJRT_DEVICE="CPU", XLAGRAPH_CAPTURE=str(capture), PYTHONHASHSEED="0")
    return env


def _capture(root: Path, name: str) -> RunLog:
    out = root / name
    proc = subprocess.run(
        [sys.executable, str(NOTES / f"{name}.py")],
        env=_env(out),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (log,) = load_runs(str(out))
    return log


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[RunLog, RunReport]]:
    root = tmp_path_factory.mktemp("notes")
    with ThreadPoolExecutor(max_workers=2) as pool:
        logs = dict(zip(SCRIPTS, pool.map(lambda n: _capture(root, n), SCRIPTS), strict=True))
    return {name: (log, build_report(log)) for name, log in logs.items()}


def _marked(name: str, mark: str) -> int:
    text = (NOTES / f"{name}.py").read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(text, 1) if f"# {mark}" in line)


def test_item_after_the_sync_is_no_cpu_fallback(runs: dict[str, tuple[RunLog, RunReport]]) -> None:
    _, report = runs["item_after_sync"]
    text = render_report_text((report,))
    assert "_local_scalar_dense" not in text
    assert "ran on the CPU" not in text
    assert not report.findings
    assert all(c.info for r in report.recompiles for c in r.causes)  # the setup graph only


def test_print_mid_step_is_a_graph_break_finding_with_its_line(
    runs: dict[str, tuple[RunLog, RunReport]],
) -> None:
    log, report = runs["print_mid_step"]
    line = f"print_mid_step.py:{_marked('print_mid_step', 'CUT')}"
    (finding,) = report.findings
    assert str(finding.kind) == "graph_break"
    assert finding.fix_id == "graph_break"
    assert any(s.endswith(line) for s in finding.sources), finding.sources
    text = render_report_text((report,))
    assert "findings (cost every step, no recompile):" in text
    assert line in text.split("findings (cost every step", 1)[1]
    doc = report_to_json((report,))
    assert [f["kind"] for f in doc["findings"]] == ["graph_break"]
    assert "_local_scalar_dense" not in text
    # a finding is no recompile: check counts the compiles after the warm-up only
    assert check_run(log, max_graphs=0, after_step=2, report=report).passed


def test_a_random_tensor_made_before_the_loop_is_no_dropout(
    runs: dict[str, tuple[RunLog, RunReport]],
) -> None:
    _, report = runs["print_mid_step"]
    fixes = {c.fix_id for r in report.recompiles for c in r.causes}
    assert not fixes & {"conditional_work.dropout", "conditional_work.dropout_zero"}, fixes


def test_a_capture_is_not_told_to_capture() -> None:
    """The wording when a cut's line is unknown: only a dump without capture context is pointed
    to XLAGRAPH_CAPTURE (no real capture on hand lacks the line: the wording is checked directly)."""
    assert "XLAGRAPH_CAPTURE" not in _unrecorded(Context(trigger=".item()", step=3))
    assert "XLAGRAPH_CAPTURE" in _unrecorded(Context())


def test_no_report_tells_a_capture_to_capture(runs: dict[str, tuple[RunLog, RunReport]]) -> None:
    for _, report in runs.values():
        assert "XLAGRAPH_CAPTURE records it" not in render_report_text((report,))


def test_an_ema_copy_sharing_the_weights_is_expected_warm_up(
    runs: dict[str, tuple[RunLog, RunReport]],
) -> None:
    _, report = runs["ema_copy"]
    kinds = [(r.step, str(c.kind), c.info) for r in report.recompiles for c in r.causes]
    assert any(kind == "state_init" for _, kind, _ in kinds), kinds
    assert all(info for _, _, info in kinds), kinds  # nothing to fix
