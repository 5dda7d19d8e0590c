"""held_out_22's two misses, on their real captures (torch_xla 2.9, CPU), once the first blind run
was recorded (docs/accuracy.md): work added under an `if` that a device value read on the host
decides, and state grown by torch.cat inside a compiled step and fed back (issue 37)."""

from __future__ import annotations

from pathlib import Path

from tests.test_recognizers_capture import _guilty, _line, _recompiles


def test_work_added_under_a_guard_reading_the_loss_on_the_host_is_that_if(tmp_path: Path) -> None:
    """`if guard.check(loss):` (check() reads `loss.item()`) multiplies the loss by a Python float
    on one step: a new f32[] input and a multiply, no region of work the size of a layer. The
    guard's `if` decides on the host from a device value: conditional work at the `if`, with the
    fix to decide on the device, not a tensor to create before the loop."""
    name = "h22_audiocnn_loss_spike_guard"
    (r,) = [r for r in _recompiles(name, tmp_path) if r.step == 3]
    (cause,) = [c for c in r.causes if not c.info]
    assert cause.kind.value == "conditional_work"
    assert cause.sources[0].endswith(f"{name}.py:60"), cause.sources
    assert _line(name, r) <= _guilty(name) | {33, 64}, _line(name, r)
    assert f"{name}.py:33" in cause.summary  # where the condition reads the device
    assert cause.fix_id == "conditional_work.host_branch" and "torch.where" in cause.hint


def test_a_memory_bank_grown_by_cat_in_a_compiled_step_is_growing_state(tmp_path: Path) -> None:
    """Eager mode, `torch_xla.compile` step: `bank.keys = torch.cat([bank.keys, k])[-size:]`
    assigned inside the step. The bank the step returned is the next call's input, its leading
    dimension growing by the batch: growing state cited at the cat, with the preallocate / ring
    buffer fix, not a batch size that grew (another DataLoader)."""
    name = "h22_sentenc_eager_memory_bank_grows"
    ours = [r for r in _recompiles(name, tmp_path) if r.step >= 2]
    assert len(ours) == 2
    for r in ours:
        (cause,) = [c for c in r.causes if not c.info]
        assert cause.kind.value == "parameter_shape"
        assert cause.fix_id == "parameter_shape.growing_state", cause.fix_id
        assert "DataLoader" not in cause.hint and "preallocate" in cause.hint
        assert cause.sources[0].endswith(f"{name}.py:29"), cause.sources
