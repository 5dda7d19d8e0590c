"""Recompiles after the first bug's (issue 37), on real torch_xla 2.9 CPU captures: what a later
graph of a torch.compile retrace's step differs by, named as the retrace's change when it follows
from it, and a module picked by a Python int named as that pick, not data of another shape.

* retrace_steps/noise_switch_bridge (and the corpus' h44 hazel): a float attribute switched on
  mid-run retraces the forward; the openxla bridge's first compile of the new graph syncs the
  pending loss, so the step's own sync graph returns it no more on that step: the retrace's change
  again (conditional_work), not a tensor the user stopped keeping (output_removed);
* retrace_steps/unfreeze_bag_tower (and h45 larch): an EmbeddingBag tower unfrozen mid-run; the
  added backward reaches EmbeddingBag's backward, run on the CPU, which cuts it into a graph no
  earlier step ran, from no user frame: the unfreeze again (output_added, trainable), not a graph
  break and inputs of other shapes;
* compiled_turns/round_robin_heads and domain_heads: a head picked by `heads[task]` with a Python
  int passed to the compiled function: its weights, gradients and activations of its width are
  another module's (parameter_shape.switched_weights), cited where the int is made and where it
  picks the head, not a batch or a sequence of another length.
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.recompile import Recompile
from xlagraph.report.model import RunReport

RETRACE = "fixtures/torch_xla/retrace_steps"
TURNS = "fixtures/torch_xla/compiled_turns"
CORPUS = "fixtures/torch_xla/corpus/captures"
SCRIPTS = "fixtures/torch_xla/corpus/scripts"


def _corpus_line(script: str, text: str) -> str:
    """A corpus script's line as its captures cite it (relative to the corpus folder)."""
    return script_line(f"{SCRIPTS}/{script}", text).removeprefix("fixtures/torch_xla/corpus/")


def _report(folder: str) -> RunReport:
    return capture_report(FIXTURES.parent / folder)


def _recompile(report: RunReport, variant: str, step: int) -> Recompile:
    return next(r for r in report.recompiles if r.variant == variant and r.step == step)


def _live(r: Recompile) -> list:  # type: ignore[type-arg]
    return [c for c in r.causes if not c.info]


# capture, (graph, step) of the step's own sync graph, the retrace's kind, a line it must cite
FLUSHED = {
    "noise_switch_bridge": (
        f"{RETRACE}/noise_switch_bridge_capture",
        ("H", 4),
        "conditional_work",
        script_line(f"{RETRACE}/noise_switch_bridge.py", "if self.noise_std > 0:"),
    ),
    "h44_hazel": (
        f"{CORPUS}/h44_hazel_openxla_drop_path_attr",
        ("I", 5),
        "conditional_work",
        _corpus_line("h44_hazel_openxla_drop_path_attr.py", "blk.drop_path = cfg.drop_path"),
    ),
}


@pytest.mark.parametrize("name", sorted(FLUSHED))
def test_the_loss_the_bridge_synced_on_a_retrace_step_is_the_retrace_change(name: str) -> None:
    folder, (variant, step), kind, line = FLUSHED[name]
    r = _recompile(_report(folder), variant, step)
    (cause,) = _live(r)
    assert str(cause.kind) == kind, r.causes
    assert "openxla bridge's first compile" in cause.summary and "the loss" in cause.summary
    assert line in r.attribution[0].lines, r.attribution
    assert "output_removed" not in {str(c.kind) for c in r.causes}
    # what the diff found stays readable
    assert "against graph" in r.note


# capture, (graph, step) of the graph cut anew, a requires_grad line it must cite
CUT = {
    "unfreeze_bag_tower": (
        f"{RETRACE}/unfreeze_bag_tower_capture",
        ("J", 3),
        script_line(f"{RETRACE}/unfreeze_bag_tower.py", "p.requires_grad_(flag)"),
    ),
    "h45_larch": (
        f"{CORPUS}/h45_larch_openxla_gradual_unfreeze",
        ("J", 3),
        _corpus_line("h45_larch_openxla_gradual_unfreeze.py", "p.requires_grad_(flag)"),
    ),
}


@pytest.mark.parametrize("name", sorted(CUT))
def test_a_graph_a_retrace_step_cuts_anew_from_no_frame_is_the_retrace_change(name: str) -> None:
    folder, (variant, step), line = CUT[name]
    r = _recompile(_report(folder), variant, step)
    assert r.trigger == "implicit" and not r.frames
    (cause,) = _live(r)
    assert str(cause.kind) == "output_added" and cause.fix_id == "trainable.requires_grad", r.causes
    assert "cut from no line of yours" in cause.summary
    assert line in r.attribution[0].lines, r.attribution
    assert {"graph_break", "parameter_shape"}.isdisjoint(str(c.kind) for c in r.causes)


# capture, the line that makes the Python int, the line that picks the head with it
PICKED = {
    "round_robin_heads": (
        script_line(f"{TURNS}/round_robin_heads.py", "        task = step % 2"),
        script_line(f"{TURNS}/round_robin_heads.py", "return F.cross_entropy(tasks.heads[task]"),
    ),
    "domain_heads": (
        script_line(f"{TURNS}/domain_heads.py", "        domain = step % 3"),
        script_line(f"{TURNS}/domain_heads.py", "logits = trunk.classifiers[domain]("),
    ),
}


@pytest.mark.parametrize("name", sorted(PICKED))
def test_a_head_picked_by_a_python_int_is_another_module_weights(name: str) -> None:
    made, picks = PICKED[name]
    report = _report(f"{TURNS}/{name}_capture")
    shaped = [
        (r, a)
        for r in report.recompiles
        for a in r.attribution
        if str(r.causes[a.cause].kind) == "parameter_shape" and not r.causes[a.cause].info
    ]
    # the compiled forward, its backward and the lazy update, on every turn
    assert len({r.variant for r, _ in shaped}) >= 5, [r.variant for r, _ in shaped]
    for r, a in shaped:
        assert r.causes[a.cause].fix_id == "parameter_shape.switched_weights", (r.variant, r.causes[a.cause])
        assert a.lines[:2] == (made, picks) or set(a.lines[:2]) == {made, picks}, (r.variant, a.lines)


def test_the_compiled_forward_says_which_lookup_picks_the_head() -> None:
    report = _report(f"{TURNS}/round_robin_heads_capture")
    (cause,) = _live(_recompile(report, "F", 1))
    assert "`tasks.heads[task]` picks the module by the Python value dynamo guards" in cause.summary
    assert "batch" not in cause.summary


def test_data_of_another_shape_is_no_picked_module() -> None:
    """A batch that grew under a retrace whose guard reads no module lookup keeps its batch words."""
    from xlagraph.diagnose.dynamo_join.picked_module import _pick
    from xlagraph.diagnose.dynamo_join.retrace import GuardFailure

    sized = GuardFailure("tensor_size", "input `x`'s size changed", "", at="a.py:3", source="y = self.fc(x)")
    picked = GuardFailure(
        "python_scalar", "Python argument `k` changed", "", at="a.py:3", source="self.heads[k](h)"
    )
    by_other = GuardFailure(
        "python_scalar", "Python argument `k` changed", "", at="a.py:3", source="self.heads[j](h)"
    )
    assert _pick(sized) == "" and _pick(by_other) == ""
    assert _pick(picked) == "self.heads[k]"
