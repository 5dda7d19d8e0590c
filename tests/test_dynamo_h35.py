"""held_out_35's torch.compile(openxla) miss, end to end on its real capture (fixed after its first
blind run, recorded in docs/accuracy.md): a module's int attribute that a traced `for` loop runs over.
torch 2.9 appends a hint to such a guard failure's code part (`... in forward (HINT: ...)`)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.diagnose.guards import explain_guard, fix_for
from xlagraph.diagnose.recognizers._statements import counts_loop

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"
NAME = "h35_molecule_openxla_rounds_curriculum"
SCRIPT = f"scripts/{NAME}.py"
# dynamo's text as torch 2.9 printed it in that capture (its path cut to fit, as dynamo cuts it)
TEXT = (
    "0/0: self.rounds == 2                                         # for _ in range(self.rounds):  "
    f"# GUILTY  # ork/wt/h-held35/fixtures/torch_xla/corpus/{SCRIPT}:21 in forward (HINT: "
    "torch.compile considers integer attributes of the nn.Module to be static. If you are observing "
    "recompilation, you might want to make this integer dynamic using "
    "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer into a tensor.)"
)


def test_a_guard_with_torch_29s_hint_keeps_its_line_and_value() -> None:
    g = explain_guard(TEXT, SCRIPT)
    assert (g.kind, g.subject, g.before) == ("module_attribute", "self.rounds", "2")
    assert (g.file, g.line) == (SCRIPT, 21)
    assert g.source == "for _ in range(self.rounds):  # GUILTY"
    assert "HINT" not in g.phrase and "#" not in g.phrase


def test_a_for_header_over_the_guarded_value_is_a_trip_count() -> None:
    assert counts_loop("for _ in range(self.rounds):  # note", {"rounds"}) == "for _ in range(self.rounds)"
    assert counts_loop("for block in self.blocks[: depth]:", {"depth"}) == "for block in self.blocks[: depth]"
    assert counts_loop("for _ in range(self.rounds):", {"width"}) == ""
    assert counts_loop("if self.rounds > 2:", {"rounds"}) == ""
    assert counts_loop("x = [f(i) for i in range(n)]", {"m"}) == ""


def test_the_unrolled_loops_graphs_are_one_cause_at_the_loop() -> None:
    """`self.net.rounds = 3` (:36) from epoch 2: dynamo's guard `self.rounds == 2` fails and the
    forward and backward graphs unroll a third round. Each graph of the retrace is one cause at the
    `for` header (:21) with the line that set the attribute, and the unrolled loop's fix: not a
    `structure` beside added outputs, not a fix that passes a tensor (`range` needs a number)."""
    report = capture_report(CAPTURES / NAME)
    fixed = [r for r in report.recompiles if not r.expected]
    assert len(fixed) == 2
    for r in fixed:
        kinds = [(str(c.kind), c.fix_id) for c in r.causes if not c.info]
        assert kinds == [("conditional_work", "conditional_work.trip_count")]
        assert [f"{SCRIPT}:21", f"{SCRIPT}:36"] == list(r.causes[0].sources[:2])
    (event,) = [e for e in report.dynamo.events if e.kind == "recompile"]
    assert event.guards[0].at == f"{SCRIPT}:21"
    assert "tracing unrolls it" in event.guards[0].fix


def test_a_comprehension_over_the_guarded_list_is_a_trip_count_too() -> None:
    line = "return sum(nn.functional.mse_loss(h, t) for h, t in zip(heads, targets))"
    assert counts_loop(line, {"targets"}) == "for h, t in zip(heads, targets)"
    assert counts_loop("ys = [f(x) for x in xs]", {"n"}) == ""


COMPILED = FIXTURES / "torch_xla" / "compiled"


def _fixed(capture: str) -> list:
    return [r for r in capture_report(COMPILED / capture).recompiles if not r.expected and r.dynamo]


def test_a_shorter_list_summed_in_a_generator_is_its_loop_not_structure() -> None:
    """list_length: the compiled loss sums `for h, t in zip(heads, targets)` and a task is left out
    every third step: dynamo's `len(targets) == 3` fails and the unrolled sum has one term fewer.
    One cause at the line that made the list, then the generator's line, with the list's own fix
    (proved by tests/test_compiled_fixes.py's list_length pair): not `structure` beside a changed
    constant, a removed input and a removed output. The list's items are the graph's inputs, so
    it is `parameter_removed` (issue 37's decision; first read as the loop's `conditional_work`
    with the generator's line first)."""
    script = "fixtures/torch_xla/compiled/scenarios/list_length.py"
    first = _fixed("captures/list_length/capture")[0]
    (cause,) = [c for c in first.causes if not c.info]
    assert str(cause.kind) == "parameter_removed"
    assert list(cause.sources[:2]) == [f"{script}:31", f"{script}:20"]
    assert cause.hint == fix_for("sequence_length")
    assert "for h, t in zip(heads, targets)" in cause.summary


def test_a_value_no_rule_reads_is_said_by_the_guard_in_every_graph_of_its_retrace() -> None:
    """review_classifier_train: a callback sets the dropout's `p` from 0.3 to 0.0 (:49); dynamo
    traces the model again. Its forward graph drops the dropout's mask (a region the diff cannot
    name) and its backward an input: both are that retrace's, said once each by the value dynamo
    guarded, where the user set it, with the attribute's fix; no `structure` left beside it."""
    script = "fixtures/torch_xla/compiled/heldout5/review_classifier_train.py"
    retraced = [r for r in _fixed("heldout5_captures/review_classifier_train/capture") if r.step == 2]
    assert len(retraced) == 2
    for r in retraced:
        (cause,) = [c for c in r.causes if not c.info]
        assert str(cause.kind) == "conditional_work"
        assert cause.sources[0] == f"{script}:49"
        assert "`m.p = 0.0`" in cause.summary
        assert cause.hint == fix_for("module_attribute")
