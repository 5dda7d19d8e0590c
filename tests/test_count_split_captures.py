"""A data-made count that splits a scalar input it shared (issue 37), on real torch_xla 2.9
captures: fixtures/torch_xla/count_split, made by its generate.py under XLAGRAPH_CAPTURE on the
CPU device.

* nonzero_split: a mean over `nonzero()` matches divides by their count, a Python scalar torch_xla
  uploads; at 5 matches it equals `SCALE = 5.0` and torch_xla makes one input of the two. Step 1
  (3 matches) takes them as two again: one input more that follows from the count, the split
  direction of corpus h33_dedup's merge;
* nonzero_new_scalar: the control, a count that changes beside a real new Python scalar.
"""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

HERE = FIXTURES / "torch_xla" / "count_split"


def _kinds(name: str) -> dict[int, list[str]]:
    report = capture_report(HERE / f"{name}_capture")
    return {r.step: [str(c.kind) for c in r.causes if not c.info] for r in report.recompiles}


def test_an_input_split_off_by_a_new_count_is_the_counts() -> None:
    """The count that no longer meets SCALE makes B take one f32[] input more: folded into the
    `dynamic_shape` at the nonzero line and said (was a false `parameter_added` beside it). Step 3
    (count 4, against step 1's unshared graph) is the shape change alone."""
    report = capture_report(HERE / "nonzero_split_capture")
    (split,) = [r for r in report.recompiles if r.step == 1]
    (cause,) = [c for c in split.causes if not c.info]
    assert str(cause.kind) == "dynamic_shape"
    assert cause.sources[0] == "fixtures/torch_xla/count_split/nonzero_split.py:32"
    assert "1 scalar input(s) more" in cause.summary
    assert _kinds("nonzero_split") == {1: ["dynamic_shape"], 3: ["dynamic_shape"]}


def test_a_real_new_scalar_beside_a_count_stays_named() -> None:
    """A new Python scalar that no count explains (its readers are not sized by the count, and
    the graphs share no input) keeps its `parameter_added` beside the count."""
    assert sorted(_kinds("nonzero_new_scalar")[1]) == ["dynamic_shape", "parameter_added"]
