"""held_out_23's lines, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md): where the user's code made what changed, not the library or
helper line the graph's metadata names."""

from __future__ import annotations

from pathlib import Path

from tests.test_recognizers_capture import _line, _recompiles


def _numbers(lines: tuple[str, ...]) -> list[int]:
    return [int(x.rsplit(":", 1)[1]) for x in lines]


def test_a_compiled_step_s_grown_batch_is_cited_where_it_is_sliced_and_sized(tmp_path: Path) -> None:
    """Under torch_xla.compile the batch's device data is located at its first use in the model
    (:45); the loop's `tokens[i : i + bs].to(device)` (:58) made it, cited first, then the
    schedule's `base * growth**epoch` (:18) and `bs = sched.batch_size(epoch)` (:56)."""
    name = "h23_lstm_compiled_batch_doubles_epoch"
    (r,) = _recompiles(name, tmp_path)
    (cause,) = r.causes
    assert str(cause.kind) == "parameter_shape" and "grew" in cause.summary
    assert _numbers(cause.sources[:3]) == [58, 18, 56]
    assert {18, 58} <= _line(name, r)
