"""held_out_37's crops, end to end on its real capture: a third crop added to the list the compiled
student's forward loops over (`for v in views`). The manifest expects `parameter_added`
(`parameter_shape`/`dynamic_shape` too, copied from held_out_35's plankton, which concatenates its
list). This list is iterated, not concatenated, so no shape changes: the retrace's graphs hold one
more copy of the loop's body on one more input of the kept views' shape. First read as the loop's
trip count (`conditional_work`); since issue 37's decision a list of tensors whose length changes
the graph's inputs (dynamo's `graph_input_count` 7 -> 8) is `parameter_added` at the line that
makes the list, then the loop (a list of ints, same inputs, stays the loop's: test_list_inputs)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.diagnose.guards import fix_for

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"
NAME = "h37_crops_openxla_extra_view"


def _script(line: int) -> str:
    return f"scripts/{NAME}.py:{line}"


def test_a_longer_list_looped_over_in_the_compiled_forward_is_an_input_added_where_it_is_made() -> None:
    """Dynamo's `len(views) == 2` fails at step 3: both XLA graphs of the retrace (the forward and
    the backward the bridge compiles) are one cause, `parameter_added`, at the line that builds
    the list (:50), then the loop (:24), with the list's own fix (pad it to a fixed number of
    items). The diff under them changes no shape: one view's more work and outputs, and more
    inputs, nothing else."""
    report = capture_report(CAPTURES / NAME)
    retraced = [r for r in report.recompiles if r.dynamo == "0/1"]
    assert len(retraced) == 2 and all(r.step == 3 for r in retraced)
    for r in retraced:
        (cause,) = [c for c in r.causes if not c.info]
        assert str(cause.kind) == "parameter_added"
        assert list(cause.sources[:2]) == [_script(50), _script(24)]
        assert cause.hint == fix_for("sequence_length")
        assert "`for v in views`" in cause.summary
        assert "`views` now holds 3 tensors (was 2)" in cause.summary
        assert "reads one more input" in cause.summary and "runs once more" in cause.summary
        assert r.note.startswith("against graph")
        assert "parameter_shape" not in r.note and "dynamic_shape" not in r.note
