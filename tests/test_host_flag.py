"""A plain Python flag the lazy loop sets for good from a value read on the host, tested by the
traced code in an inline `a if flag else b` (issue 37): Python picks which code the step traces
from a device value, a step late. On real torch_xla 2.9 captures (CPU device):

* held_out_42's brook (scored, its miss fixed after scoring): a GRU forecaster decodes with
  `inp = future[...] if teacher_forcing else pred`; the loop sets `teacher_forcing = False` under
  `if teacher_forcing and value < SWITCH_BELOW:`, `value = loss.item()` (xm.mark_step loop);
* fixtures/torch_xla/host_flag/curriculum_flag_lazy (its generate.py): an MLP whose forward mixes
  features `if hard_mode`, the flag set under `if not hard_mode and acc.item() > PROMOTE_ABOVE:`
  (torch_xla.sync loop); the mix's 0.5 comes as a Python number passed as data.

Each is one `conditional_work` cited at the flag's test, then the `if` that sets it and the
assignment, with the fix `conditional_work.host_branch` (compute both, choose on the device with
torch.where); no `structure`, no switched-on option, no new input beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.report.model import RunReport

_BROOK = "h42_brook_lazy_free_running_switch"
CASES = {
    "brook": (
        FIXTURES / "torch_xla" / "corpus" / "captures" / _BROOK,
        FIXTURES / "torch_xla" / "corpus" / "scripts" / f"{_BROOK}.py",
        f"scripts/{_BROOK}.py",
        7,
        (
            "            inp = future[:, t : t + 1] if teacher_forcing else pred",
            "    if teacher_forcing and value < SWITCH_BELOW:",
            "        teacher_forcing = False",
        ),
    ),
    "curriculum": (
        FIXTURES / "torch_xla" / "host_flag" / "curriculum_flag_lazy_capture",
        FIXTURES / "torch_xla" / "host_flag" / "curriculum_flag_lazy.py",
        "fixtures/torch_xla/host_flag/curriculum_flag_lazy.py",
        5,
        (
            "        x = 0.5 * x + 0.5 * x.roll(1, dims=-1) if hard_mode else x",
            "        if not hard_mode and acc.item() > PROMOTE_ABOVE:",
            "            hard_mode = True",
        ),
    ),
}


def _line(script: Path, cited: str, text: str) -> str:
    """`cited:line` of the first line of `script` that holds `text` (a `# GUILTY` mark may follow)."""
    lines = script.read_text(encoding="utf-8").splitlines()
    return f"{cited}:{next(i for i, line in enumerate(lines, 1) if text in line)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_flag_set_from_a_host_read_is_named_at_its_test_and_where_it_is_set(name: str) -> None:
    capture, script, cited, step, texts = CASES[name]
    report: RunReport = capture_report(capture)
    assert report.compiles == report.compiles_reported == 2, (report.compiles, report.compiles_reported)
    (recompile,) = report.recompiles
    assert (recompile.step, recompile.expected) == (step, False), (recompile.step, recompile.expected)
    # One cause, no `structure` (nor a new input, nor a switched-on option) beside it.
    assert [(c.kind.value, c.fix_id) for c in recompile.causes] == [
        ("conditional_work", "conditional_work.host_branch")
    ], recompile.causes
    (attributed,) = recompile.attribution
    assert attributed.lines[:3] == tuple(_line(script, cited, t) for t in texts), attributed.lines
