"""held_out_40's fjord (issue 37), on real torch_xla 2.9 captures: a sequence length that a helper in
a module of the script's own folder is told (`token_batch(step, seq_len)`) is a sequence length, not a
changed batch, even in an implicit graph where only positions and a (t, t) mask show it; the ops
resized with it are folded into that cause; the line is the script's call that passes the length and
where the length is set, not the helper's. A ragged last batch from the same kind of helper keeps
the batch fix."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

CORPUS = FIXTURES / "torch_xla" / "corpus"
HERE = FIXTURES / "torch_xla" / "helper_lengths"
_FJORD = "h40_fjord_lazy_tinylm_longer_docs"
_PREFIX = "fixtures/torch_xla/corpus/"
# What a changed batch is called ("a non-batch dimension changed" names the length).
_BATCH_WORDS = ("the batch and other", "the batch dimension", "batch size", "ragged")


def _fjord_line(text: str) -> str:
    return script_line(f"{_PREFIX}scripts/{_FJORD}.py", text).replace(_PREFIX, "")


def _line(name: str, text: str) -> str:
    return script_line(f"fixtures/torch_xla/helper_lengths/{name}.py", text)


def test_fjord_is_one_sequence_length_at_the_call_and_schedule() -> None:
    report = capture_report(CORPUS / "captures" / _FJORD)
    fixed = [r for r in report.recompiles if not r.expected]
    assert len(fixed) == 2
    call, schedule = _fjord_line("token_batch(step, seq_len"), _fjord_line("schedule = {")
    for recompile in fixed:
        (cause,) = recompile.causes  # no second attribute.size cause beside it
        assert str(cause.kind) == "parameter_shape"
        assert cause.fix_id == "parameter_shape.sequence", cause
        assert not any(w in cause.summary for w in _BATCH_WORDS), cause.summary
        assert cause.sources[:2] == (call, schedule), cause.sources


@pytest.mark.parametrize(
    ("name", "call", "set_at"),
    [
        ("schedule_helper", 'make_tokens(step, seq_len=phase["tokens"]', "phases = {"),
        ("implicit_mask", "make_tokens(step, n, device", "lengths = ["),
    ],
)
def test_helper_lengths_are_cited_where_the_script_passes_them(name: str, call: str, set_at: str) -> None:
    report = capture_report(HERE / f"{name}_capture")
    fixed = [r for r in report.recompiles if not r.expected]
    assert fixed
    for recompile in fixed:
        (cause,) = recompile.causes
        assert cause.fix_id == "parameter_shape.sequence", cause
        assert not any(w in cause.summary for w in _BATCH_WORDS), cause.summary
        assert cause.sources[:2] == (_line(name, call), _line(name, set_at)), cause.sources


def test_a_ragged_batch_from_a_helper_keeps_the_batch_fix() -> None:
    report = capture_report(HERE / "ragged_rows_capture")
    (recompile,) = [r for r in report.recompiles if not r.expected]
    shapes = [c for c in recompile.causes if str(c.kind) == "parameter_shape"]
    assert [c.fix_id for c in shapes] == ["parameter_shape.batch"], recompile.causes
