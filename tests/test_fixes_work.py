"""Every fix xlagraph prints is a claim, checked on real torch_xla 2.9 runs (PJRT_DEVICE=CPU).

Each folder of fixtures/torch_xla/fixes/ is named by a fix ID (`<ID>` or `<ID>@<variant>`) and
holds `bug.py`, a small training script with the pattern, and `fixed.py`, the same script changed
as the fix's text says. One subprocess runs them all under XLAGRAPH_CAPTURE (torch_xla imported
once, every run at a width of its own so no graph is a cache hit for another): the fixed script
must compile fewer graphs, the counts must be those committed in the folder's counts.json, and
the report of the capture must print the folder's fix ID for the bug script's recompiles.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose.fixes import FIXES, NOT_SHOWN
from xlagraph.render.report_text import render_report_text
from xlagraph.report import build_report, load_runs
from xlagraph.report.model import RunReport

HERE = FIXTURES / "torch_xla" / "fixes"
FOLDERS = sorted(p.name for p in HERE.iterdir() if (p / "bug.py").is_file())
TIMEOUT = 600


def _fix_id(folder: str) -> str:
    return folder.split("@", 1)[0]


def _env(capture: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XLAGRAPH_", "PT_XLA_DEBUG", "_XLAGRAPH"))
        and k not in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "XLA_FLAGS", "XLA_SAVE_TENSORS_FILE")
        and k != "XLA_PERSISTENT_CACHE_PATH"  # cache-free: every compile counts
    }
    env.update(PJRT_DEVICE="CPU", XLAGRAPH_CAPTURE=str(capture), PYTHONHASHSEED="0")
    return env


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict[str, int]], RunReport]:
    """(compile counts per folder and side, the report of the whole run's capture)."""
    capture = tmp_path_factory.mktemp("fixes") / "capture"
    proc = subprocess.run(
        [sys.executable, str(HERE / "measure.py")],
        env=_env(capture),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=HERE.parents[2],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = json.loads(proc.stdout[proc.stdout.index("{") :])
    (log,) = load_runs(str(capture))
    return counts, build_report(log)


def test_every_fix_has_scripts_or_says_why_not() -> None:
    shown = {_fix_id(f) for f in FOLDERS}
    assert shown <= set(FIXES), shown - set(FIXES)
    assert set(NOT_SHOWN) <= set(FIXES), set(NOT_SHOWN) - set(FIXES)
    assert not shown & set(NOT_SHOWN), shown & set(NOT_SHOWN)
    assert shown | set(NOT_SHOWN) == set(FIXES), set(FIXES) - shown - set(NOT_SHOWN)
    assert all(reason.strip() for reason in NOT_SHOWN.values())


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_fixed_script_compiles_fewer_graphs(
    measured: tuple[dict[str, dict[str, int]], RunReport], folder: str
) -> None:
    counts, _ = measured
    bug, fixed = counts[folder]["bug"], counts[folder]["fixed"]
    assert fixed < bug, (folder, bug, fixed)
    committed = json.loads((HERE / folder / "counts.json").read_text())
    assert (committed["bug"], committed["fixed"]) == (bug, fixed), "rerun measure.py --write"


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_report_of_the_bug_prints_that_fix(
    measured: tuple[dict[str, dict[str, int]], RunReport], folder: str
) -> None:
    _, report = measured
    script = f"{folder}/bug.py"
    ours = [r for r in report.recompiles if r.call_site.rpartition(":")[0].endswith(script)]
    assert ours, f"no recompile at {script}"
    printed = {c.fix_id for r in ours for c in r.causes}
    assert _fix_id(folder) in printed, (folder, printed)
    assert f"[{_fix_id(folder)}]" in render_report_text((report,))


def test_no_fix_of_the_fixed_scripts_is_left_to_print(
    measured: tuple[dict[str, dict[str, int]], RunReport],
) -> None:
    """The fixed scripts recompile for no reason the report would still fix (warm-up only)."""
    _, report = measured
    fixed = [r for r in report.recompiles if r.call_site.rpartition(":")[0].endswith("/fixed.py")]
    left = {(r.call_site, c.fix_id) for r in fixed for c in r.causes if not c.info}
    assert not left, left
