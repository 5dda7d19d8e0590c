"""Under torch.compile with the optimizer in a lazy graph of its own, a retrace that makes the
forward train more parameters (an auxiliary head switched on by a module attribute) adds their
updates to the optimizer's graph. Those outputs are the forward's change seen in the optimizer:
cited at the forward's cause with its fix, not "a tensor kept alive" (issue 37: a difference that
follows from a named cause is folded into it). Real torch_xla 2.9 captures
(fixtures/torch_xla/retrace_optimizer, and the tutor of held_out_38, already scored)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.causes import HINTS, CauseKind
from xlagraph.diagnose.guards import fix_for

HERE = FIXTURES / "torch_xla" / "retrace_optimizer"


def _updates_follow_the_forward(report, switch: str) -> int:  # type: ignore[no-untyped-def]
    forward = next(
        c
        for r in report.recompiles
        if r.dynamo
        for c in r.causes
        if c.kind is CauseKind.CONDITIONAL_WORK and not c.info
    )
    seen = 0
    for r in report.recompiles:
        for a in r.attribution:
            c = r.causes[a.cause]
            if c.kind is not CauseKind.OUTPUT_ADDED or c.info:
                continue
            assert c.hint == forward.hint and c.hint != HINTS[CauseKind.OUTPUT_ADDED], (r.variant, c.hint)
            assert switch in a.lines, (r.variant, a.lines)
            seen += 1
    return seen


def test_an_auxiliary_head_switched_on_trains_more_parameters() -> None:
    report = capture_report(HERE / "aux_head_flag_capture")
    switch = script_line("fixtures/torch_xla/retrace_optimizer/aux_head_flag.py", "if self.use_aux:")
    assert _updates_follow_the_forward(report, switch) == 1


def test_a_deeper_stack_updates_the_new_block_on_every_later_step() -> None:
    """The tutor: the optimizer's graph gains the block's updates at the retrace's step and again
    on the next, compiled without the bridge's full sync (a graph no retrace made)."""
    name = "h38_tutor_openxla_grow_depth"
    report = capture_report(FIXTURES / "torch_xla" / "corpus" / "captures" / name)
    loop = script_line(f"fixtures/torch_xla/corpus/scripts/{name}.py", "for block in self.blocks[")
    assert _updates_follow_the_forward(report, loop.replace("fixtures/torch_xla/corpus/", "")) == 2


def _state_follows_the_forward(report, switch: str, kind: CauseKind = CauseKind.CONDITIONAL_WORK) -> int:  # type: ignore[no-untyped-def]
    """Every live cause of the retrace's graphs takes the forward's fix and cites its line; none
    reads as library code run on some steps. The count of the optimizer's state folded so. `kind`:
    the forward's (a list of tensors that grows is `parameter_added`, issue 37)."""
    forward = next(
        c for r in report.recompiles if r.dynamo for c in r.causes if c.kind is kind and not c.info
    )
    folded = 0
    for r in report.recompiles:
        if not r.dynamo:
            continue
        for a in r.attribution:
            c = r.causes[a.cause]
            if c.info:
                continue
            assert c.hint == forward.hint, (r.variant, c.kind, c.hint)
            assert switch in a.lines, (r.variant, a.lines)
            assert "library code computes another way" not in c.summary, (r.variant, c.summary)
            folded += "optimizer's state made for the parameters" in c.summary
    return folded


def test_adam_state_made_for_a_new_block_follows_the_forward() -> None:
    """deeper_adam: Adam's moments and step counts made for the new block's weights at the
    retrace's step (its graph read against the first step's, where the state of every weight was
    made) are the forward's change, with the loop's fix: not work library code does on some
    steps. The next step's graph, taking that state as inputs, is warm-up."""
    report = capture_report(HERE / "deeper_adam_capture")
    loop = script_line("fixtures/torch_xla/retrace_optimizer/deeper_adam.py", "for layer in self.layers[")
    assert _state_follows_the_forward(report, loop) == 1
    later = [r for r in report.recompiles if r.step == 4]
    assert later and all(c.info for r in later for c in r.causes), [r.variant for r in later]


def test_adamw_state_for_a_probe_switched_on_follows_the_forward() -> None:
    """probe_list_compiled: deep supervision, a list of probe outputs passed to a compiled loss
    grows from 1 to 2 (a module attribute); AdamW's state for the second probe's weights, made at
    that step, is the list guard's change (read against the steady graph this time): the list of
    tensors grown, `parameter_added` (issue 37; first read as the loop's `conditional_work`)."""
    report = capture_report(HERE / "probe_list_compiled_capture")
    loop = script_line("fixtures/torch_xla/retrace_optimizer/probe_list_compiled.py", "for pred in side")
    assert _state_follows_the_forward(report, loop, CauseKind.PARAMETER_ADDED) == 1


def test_the_new_exit_weights_taken_as_inputs_are_no_shape_change() -> None:
    """early_exits: a list of early exits' logits passed to a compiled loss grows from 1 to 2 (a
    module attribute), the model lazy before it, Adam after it. The sync's graph of that step
    (after the bridge's full sync, as on the first step) takes the second exit's weights where the
    first step's took a weight handed over transposed: read alone as weights of another shape
    (`parameter_shape`, f32[24,5] -> f32[5,24]), they are the parameters the list guard's change
    now trains, with its fix and its loop's line. The list guard's change is the list of tensors
    grown, `parameter_added` (issue 37; first read as the loop's `conditional_work`)."""
    report = capture_report(HERE / "early_exits_capture")
    loop = script_line("fixtures/torch_xla/retrace_optimizer/early_exits.py", "for exit_logits in early")
    assert _state_follows_the_forward(report, loop, CauseKind.PARAMETER_ADDED) == 1
    step = [r for r in report.recompiles if r.dynamo]
    assert not any(c.kind is CauseKind.PARAMETER_SHAPE for r in step for c in r.causes)
    weights = [
        a.summary
        for r in step
        for a in r.attribution
        if "weights of the parameters the retraced" in a.summary
    ]
    assert len(weights) == 1, weights


def test_a_tuple_that_grows_past_a_graph_break_moves_the_backward_out_of_the_lazy_graph() -> None:
    """sensor_tuple_break: a third sensor stream joins the tuple at step 4; zip() with the three
    encoders no longer breaks the graph, so the retrace's graphs run the backward the lazy graph
    ran before, and the lazy optimizer graph only takes and returns other tensors (inputs removed,
    the update read as work on some steps): the tuple's length, with its fix and line. A tuple of
    tensors grown is `parameter_added` at the line that makes it (issue 37; first read as
    `conditional_work`): the graph break it lifts moves inputs too, so no count is said."""
    script = "fixtures/torch_xla/retrace_optimizer/sensor_tuple_break.py"
    report = capture_report(HERE / "sensor_tuple_break_capture")
    made = script_line(script, "streams = tuple(")
    later = [r for r in report.recompiles if r.step >= 4 and not r.expected and not r.first_of_program]
    assert [r.variant for r in later] == ["I", "J"]
    for r in later:
        live = [c for c in r.causes if not c.info]
        assert [c.kind for c in live] == [CauseKind.PARAMETER_ADDED], (r.variant, live)
        assert live[0].sources[0] == made
        assert live[0].hint == fix_for("sequence_length")
    assert script_line(script, "zip(streams, self.encoders") in later[1].causes[0].summary
