"""Issue 37 on real torch.compile(openxla) captures: a mode switched for good gets the fix of what
the switched module does in the mode it left (dropout's, or a module of the user's own that
branches on `self.training`)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.fixes import fix


def test_a_module_of_the_users_own_switched_for_good_gets_its_fix() -> None:
    """`DropPath` (the user's stochastic depth, `if not self.training: return x`) put in eval mode
    for the last epoch: the retrace's graphs are a live cause cited at the `m.eval()`, with the fix
    of a training-only branch, not dropout's "call model.train() before every training step";
    dynamo's half gives the same fix."""
    script = "fixtures/torch_xla/mode_switch/drop_path_off.py"
    report = capture_report(FIXTURES / "torch_xla" / "mode_switch" / "drop_path_off_capture")
    switched = [r for r in report.recompiles if r.dynamo == "0/1"]
    assert switched and all(not r.expected for r in switched)
    for r in switched:
        (cause,) = r.causes
        assert cause.fix_id == "conditional_work.training_branch"
        assert list(cause.sources) == [script_line(script, "m.eval()")]
    (event,) = [e for e in report.dynamo.events if e.compile_id == "0/1"]
    assert not event.expected and event.fix == fix("conditional_work.training_branch")


def test_dropout_switched_for_good_keeps_dropouts_fix() -> None:
    """held_out_36's wafer net: the guard's mode is read in torch's dropout, so its fix stays."""
    report = capture_report(FIXTURES / "torch_xla" / "corpus" / "captures" / "h36_wafer_openxla_dropout_off")
    fixes = {c.fix_id for r in report.recompiles if r.dynamo == "0/1" for c in r.causes}
    assert fixes == {"conditional_work.dropout"}
    (event,) = [e for e in report.dynamo.events if e.compile_id == "0/1"]
    assert event.fix == fix("conditional_work.dropout")


def test_the_switch_is_cited_not_the_mode_set_before_the_loop() -> None:
    """drop_path_off.py with `net = ResMLP().to(dev).train()` before the loop: that line set the
    mode the first compile assumed; the guard's origin and the cause are the `m.eval()` the loop
    reaches before the recompiled call (they were the `.train()` line: the file's first indented
    mode set)."""
    script = "fixtures/torch_xla/mode_switch/drop_path_off_train.py"
    report = capture_report(FIXTURES / "torch_xla" / "mode_switch" / "drop_path_off_train_capture")
    switch = script_line(script, "m.eval()")
    (event,) = [e for e in report.dynamo.events if e.compile_id == "0/1"]
    assert [g.origin for g in event.guards] == [switch]
    switched = [r for r in report.recompiles if r.dynamo == "0/1"]
    assert switched and all(list(c.sources) == [switch] for r in switched for c in r.causes)
