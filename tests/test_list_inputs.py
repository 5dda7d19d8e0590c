"""A Python list passed to a torch.compile'd function that loops over it, whose length changes
(issue 37): when its items are tensors, dynamo's retraced graph takes one more input per item
(`graph_input_count` 6 -> 7) and the cause is `parameter_added` at the line that makes the list,
then the loop; when they are ints (constants of the graph, the same inputs: 5 -> 5), only the
loop's trip count moves and the loop reading (`conditional_work`) stays. Real torch_xla 2.9
captures (fixtures/torch_xla/retrace_optimizer/generate.py)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.guards import fix_for
from xlagraph.parse.torch_trace import read_torch_trace

HERE = FIXTURES / "torch_xla" / "retrace_optimizer"


def _retraced(name: str):  # type: ignore[no-untyped-def]
    """The report of the capture `name` (its retrace is dynamo's 0/1)."""
    return capture_report(HERE / f"{name}_capture")


def test_a_modality_joining_the_list_of_embeddings_is_an_input_added_where_the_list_is_made() -> None:
    """modality_list: the audio embedding joins the list passed to the compiled fusion head at
    step 3: the forward and the backward the bridge compiles read one more input, the line that
    makes the list first (:39), then the loop (:23), with the list's fix."""
    script = "fixtures/torch_xla/retrace_optimizer/modality_list.py"
    made = script_line(script, "embeddings = [encoders[m]")
    loop = script_line(script, "for emb in embeddings")
    report = _retraced("modality_list")
    named = [
        c
        for r in report.recompiles
        if r.dynamo == "0/1"
        for c in r.causes
        if not c.info and c.kind is CauseKind.PARAMETER_ADDED
    ]
    # the forward and the backward (I, J), and the retrace's other graphs of the step (H: the bridge's
    # full sync, holding the audio encoder's output; K: the lazy update, its gradients and updates)
    assert len(named) == 4, [r.variant for r in report.recompiles if r.dynamo == "0/1"]
    for cause in named:
        assert list(cause.sources[:2]) == [made, loop]
        assert cause.hint == fix_for("sequence_length")
        assert "`embeddings` now holds 3 tensors (was 2)" in cause.summary
        assert f"`for emb in embeddings` at {loop} runs once more" in cause.summary
        assert "reads one more input" in cause.summary
    assert not any(
        c.kind in (CauseKind.CONDITIONAL_WORK, CauseKind.OUTPUT_ADDED) and not c.info
        for r in report.recompiles
        for c in r.causes
    )


def test_a_list_of_ints_that_grows_stays_the_loops_trip_count() -> None:
    """dilation_ints: a third dilation joins the list of ints the compiled block loops over: the
    ints are constants of the graph, the inputs the same, so both graphs of the retrace are the
    loop's other count (`conditional_work` at the loop, :21), not an input added."""
    script = "fixtures/torch_xla/retrace_optimizer/dilation_ints.py"
    loop = script_line(script, "for d in dilations")
    report = _retraced("dilation_ints")
    retraced = [r for r in report.recompiles if r.dynamo == "0/1"]
    assert len(retraced) == 2
    for r in retraced:
        (cause,) = [c for c in r.causes if not c.info]
        assert cause.kind is CauseKind.CONDITIONAL_WORK
        assert cause.sources[0] == loop
        assert "`for d in dilations`" in cause.summary and "runs another number of times" in cause.summary
    assert not any(
        c.kind in (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED)
        for r in report.recompiles
        for c in r.causes
        if not c.info
    )


def test_dynamo_says_how_many_inputs_each_graph_reads() -> None:
    """The join's evidence, as dynamo logs it: the embeddings' graph reads one more input after
    the retrace, the dilations' the same ones."""
    for name, counts in (("modality_list", (6, 7)), ("dilation_ints", (5, 5))):
        (log,) = (HERE / f"{name}_capture").glob("*/torch_trace.log")
        compiles = read_torch_trace(str(log)).compiles
        assert tuple(c.graph_inputs for c in compiles) == counts, name
