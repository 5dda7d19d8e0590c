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
from xlagraph.diagnose.recognizers._host_flag import flag_setters, flag_test
from xlagraph.diagnose.recognizers._host_if import host_decided_if
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


_LOOP = """
import torch


def forward(x, hard):
    x = x * 2 if hard else x
    if not hard:
        x = x + 1
    return x


hard, step = False, 0
for step in range(10):
    loss = forward(torch.ones(2), hard).sum()
    {setter}
"""


@pytest.mark.parametrize(
    ("setter", "lines"),
    [
        # under an `if` whose test reads the device, itself or through a name read just above
        ("if loss.item() < 3.0:\n        hard = True", (15, 16)),
        ("value = loss.item()\n    if not hard and value < 3.0:\n        hard = True", (16, 17)),
        # from a host read, itself or through a name read just above
        ("hard = bool(loss < 3.0)", (15,)),
        ("value = loss.item()\n    hard = value < 3.0", (15, 16)),
    ],
)
def test_a_flag_set_from_a_host_read_is_found_from_its_tests(
    tmp_path: Path, setter: str, lines: tuple[int, ...]
) -> None:
    script = tmp_path / "loop.py"
    script.write_text(_LOOP.format(setter=setter), encoding="utf-8")
    file = str(script)
    # the inline test (`x * 2 if hard else x`) and the `if not hard:` around the work
    assert flag_test(f"{file}:6") == (file, 6, frozenset({"hard"}))
    assert flag_test(f"{file}:8") == (file, 7, frozenset({"hard"}))
    assert host_decided_if(f"{file}:8") == (f"{file}:7", *(f"{file}:{n}" for n in lines))
    for site in (f"{file}:6", f"{file}:7"):
        assert flag_setters(site) == (frozenset({"hard"}), tuple(f"{file}:{n}" for n in lines)), site


@pytest.mark.parametrize(
    "setter",
    [
        "if step >= 5:\n        hard = True",  # a Python counter decides: another rule's
        "hard = step >= 5",
        "print(loss.item())\n    hard = True",  # a host read that does not set the flag
    ],
)
def test_a_flag_python_decides_is_not_a_host_read(tmp_path: Path, setter: str) -> None:
    script = tmp_path / "loop.py"
    script.write_text(_LOOP.format(setter=setter), encoding="utf-8")
    assert flag_setters(f"{script}:6") == (frozenset(), ())
    assert host_decided_if(f"{script}:8") == ()
