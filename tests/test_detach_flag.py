"""A Python flag that `.detach()`es a part of the model, flipped mid-run (issue 37; heldout5's
keyword spotter), on real torch_xla 2.9 captures: fixtures/torch_xla/detach_flag, made by its
generate.py under XLAGRAPH_CAPTURE on the CPU device, and heldout5's own torch_xla.compile capture.

* encoder_frozen_by_callback: lazy mode, AdamW; a callback sets `state["detach_encoder"] = True`
  after step 2 and the forward detaches the encoder while it is set: the step loses the encoder's
  backward and updates;
* encoder_unfrozen_by_callback: lazy mode, SGD with momentum; the encoder starts detached
  (`h.detach() if self.encoder_detached else h`) and a callback clears the flag at step 3: the
  step gains them;
* tower_frozen_compiled: the forward under torch.compile (openxla), the update in lazy mode; a
  callback sets `model.freeze_user_tower = True` at step 3, which the compiled forward reads;
* tower_requires_grad_compiled: the same two towers, the callback freezing the user tower with
  `requires_grad_(False)` at step 3 (dynamo does not retrace for it here: the lazy update loses the
  tower's updates).

The lazy and torch_xla.compile ones are named as work a Python condition decides
(conditional_work) with the fix `trainable.detach`, citing the flag's assignment in the callback
first, then the `if` and the detach (one line where the `if` is inline). Under torch.compile
dynamo's guard on the flag names it, with the callback's assignment as where the value was made,
and so do the XLA graphs of that run: the lazy update that no longer takes the tower's parameters
(it read them only to update them) and the bridge's graph of dynamo's retrace, whose backward no
longer returns their gradients, are the flag's detach, not tensors kept alive."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.capture.reader import read_capture
from xlagraph.report import build_report
from xlagraph.report.model import RunReport

HERE = FIXTURES / "torch_xla" / "detach_flag"
SPOTTER = FIXTURES / "torch_xla" / "compiled" / "heldout5_captures" / "keyword_spotter_xla" / "capture"


def _report(name: str) -> RunReport:
    return capture_report(HERE / f"{name}_capture")


def _unexpected(report: RunReport) -> list[tuple[int, str, str, tuple[str, ...], str]]:
    """(step, kind, fix ID, cited lines, summary) of each cause of the recompiles to fix."""
    out = []
    for r in report.recompiles:
        if r.expected:
            continue
        for a in r.attribution:
            cause = r.causes[a.cause]
            out.append((r.step, a.kind, cause.fix_id, a.lines, a.summary))
    return out


def test_a_callback_that_sets_a_detach_flag_is_named_at_its_line() -> None:
    script = "fixtures/torch_xla/detach_flag/encoder_frozen_by_callback.py"
    ((step, kind, fix, lines, summary),) = _unexpected(_report("encoder_frozen_by_callback"))
    assert (step, kind, fix) == (3, "conditional_work", "trainable.detach"), (step, kind, fix)
    assert "no longer trains 5 parameter(s)" in summary, summary
    assert lines[:3] == (
        script_line(script, 'state["detach_encoder"] = True'),
        script_line(script, 'if state["detach_encoder"]:'),
        script_line(script, "h = h.detach()"),
    ), lines


def test_a_callback_that_clears_the_flag_names_the_other_direction() -> None:
    script = "fixtures/torch_xla/detach_flag/encoder_unfrozen_by_callback.py"
    ((step, kind, fix, lines, summary),) = _unexpected(_report("encoder_unfrozen_by_callback"))
    assert (step, kind, fix) == (3, "conditional_work", "trainable.detach"), (step, kind, fix)
    assert "no longer detaches" in summary and "also trains 2 parameter(s)" in summary, summary
    # The callback's assignment first; the one in __init__ (set-up) is not the switch.
    assert lines[:2] == (
        script_line(script, "model.encoder_detached = False"),
        script_line(script, "h = h.detach() if self.encoder_detached else h"),
    ), lines


def test_the_keyword_spotters_torch_xla_compile_step_is_named() -> None:
    """heldout5's miss: `trainer.args.frontend_frozen = True` in a callback, read by the compiled
    step's `if self.args.frontend_frozen: h = h.detach()`."""
    script = "fixtures/torch_xla/compiled/heldout5/keyword_spotter_xla.py"
    ((step, kind, fix, lines, _),) = _unexpected(build_report(read_capture(str(SPOTTER))[0]))
    assert (step, kind, fix) == (3, "conditional_work", "trainable.detach"), (step, kind, fix)
    assert lines[:3] == (
        script_line(script, "trainer.args.frontend_frozen = True"),
        script_line(script, "if self.args.frontend_frozen:"),
        script_line(script, "h = h.detach()"),
    ), lines


def test_under_torch_compile_dynamos_guard_names_the_flag_and_the_callback() -> None:
    script = "fixtures/torch_xla/detach_flag/tower_frozen_compiled.py"
    report = _report("tower_frozen_compiled")
    assert report.dynamo is not None
    ((recompile, guard),) = [(e, e.guards[0]) for e in report.dynamo.unexpected]
    assert (recompile.step, guard.kind) == (3, "module_attribute"), (recompile.step, guard.kind)
    assert (guard.at, guard.origin) == (
        script_line(script, "if self.freeze_user_tower:"),
        script_line(script, "model.freeze_user_tower = True"),
    ), (guard.at, guard.origin)


def test_under_torch_compile_the_xla_graphs_are_the_flags_detach_not_kept_alive() -> None:
    """G (the bridge's forward and backward of dynamo's retrace: 2 gradients fewer), H and I (the
    lazy SGD step without the user tower's updates) were each `output_removed` with the
    kept-alive fix: wrong advice, the tower's parameters get no gradient any more."""
    script = "fixtures/torch_xla/detach_flag/tower_frozen_compiled.py"
    report = _report("tower_frozen_compiled")
    found = _unexpected(report)
    assert [(step, kind, fix) for step, kind, fix, _, _ in found] == [
        (3, "conditional_work", "trainable.detach"),
        (3, "conditional_work", "trainable.detach"),
        (4, "conditional_work", "trainable.detach"),
    ], found
    flag = (
        script_line(script, "model.freeze_user_tower = True"),
        script_line(script, "if self.freeze_user_tower:"),
        script_line(script, "hu = hu.detach()"),
    )
    assert all(lines[:3] == flag for _, _, _, lines, _ in found), found
    summaries = [summary for *_, summary in found]
    assert "its backward returns the gradients" in summaries[0], summaries[0]
    assert all("no longer trains 2 parameter(s)" in s for s in summaries[1:]), summaries


def test_requires_grad_false_under_torch_compile_names_the_switch() -> None:
    """The lazy update loses the tower's updates: `trainable.requires_grad` at the callback's
    `requires_grad_(False)` (not the script's docstring, which says the same words), not the
    kept-alive fix."""
    script = "fixtures/torch_xla/detach_flag/tower_requires_grad_compiled.py"
    report = _report("tower_requires_grad_compiled")
    ((step, _, fix, lines, _),) = _unexpected(report)
    assert (step, fix) == (3, "trainable.requires_grad"), (step, fix)
    ((cause,),) = [r.causes for r in report.recompiles if not r.expected]
    assert "no longer trains 2 parameter(s)" in cause.summary, cause.summary
    assert lines[0] == script_line(script, "p.requires_grad_(False)"), lines
