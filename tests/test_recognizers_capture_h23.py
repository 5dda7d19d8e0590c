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
    (:45); the schedule's `base * growth**epoch` (:18) decides its size, cited first (held_out_28:
    where the size is decided), then `bs = sched.batch_size(epoch)` (:56) and the loop's
    `tokens[i : i + bs].to(device)` (:58) that made it."""
    name = "h23_lstm_compiled_batch_doubles_epoch"
    (r,) = _recompiles(name, tmp_path)
    (cause,) = r.causes
    assert str(cause.kind) == "parameter_shape" and "grew" in cause.summary
    assert _numbers(cause.sources[:3]) == [18, 56, 58]
    assert {18, 58} <= _line(name, r)


def test_a_snapshot_of_updated_weights_is_cited_where_it_is_stored(tmp_path: Path) -> None:
    """Every third step a callback keeps `v.detach().clone()` of each weight (:30): 4 more
    outputs, each computing what an updated weight's own output does, so the cause lists 8
    (twins). The 4 live tensors the baseline did not compute (the weights and their gradients
    were its outputs too) are exactly the added ones: their storing line is cited first, before
    the optimizer step that made their values (:55)."""
    name = "h23_gcn_lazy_snapshot_every3"
    (r,) = _recompiles(name, tmp_path)
    (a,) = r.attribution
    assert a.kind == "output_added" and len(a.items) == 8
    assert [t.match for t in a.tensors] == ["by elimination"] * 4
    assert all(t.held_by.startswith("snap.snapshot[") for t in a.tensors)
    assert _numbers(a.lines) == [30, 55]


def test_validation_under_a_flag_in_a_compiled_step_is_cited_at_the_if_and_its_call(tmp_path: Path) -> None:
    """The compiled step calls its `_loss` helper every time (:44) and again under `if run_val:`
    (:48, the call :50): the graph names only `_loss`'s line (:40), so the guarded call and its
    `if` are cited first; the unguarded call (:44) is not. What a function `torch_xla.compile`
    traces returns is no tensor kept alive: the extra output is work the `if` picks, named
    `conditional_work` at the `if`, then the call."""
    name = "h23_tagger_eager_val_in_step_every3"
    (r,) = _recompiles(name, tmp_path)
    (cause,) = r.causes
    assert cause.kind == "conditional_work"
    assert cause.fix_id == "conditional_work.host_branch"
    assert _numbers(cause.sources)[:3] == [48, 50, 40]
    assert 44 not in _line(name, r)
