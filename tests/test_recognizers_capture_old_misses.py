"""Old misses of the diagnosis evaluation (issue 37: the line a user must change is where the value is
decided, the use site second), end to end on their real captures."""

from __future__ import annotations

from pathlib import Path

from tests.test_recognizers_capture import _recompiles


def _numbers(lines: tuple[str, ...]) -> list[int]:
    return [int(x.rsplit(":", 1)[1]) for x in lines]


def test_an_update_in_helpers_of_a_host_decided_if_is_that_if_s_work(tmp_path: Path) -> None:
    """h26's loss scaler: `if scaler.found_inf(params).item():` (:60) calls `scaler.backoff()`
    (:61), its `else` `scaler.unscale_(params)` (:64) and `opt.step()`. The optimizer's work only
    the skipping step lacks is that `if`'s, cited first with its calls, and the fix is a
    data-dependent branch's (was: gradient accumulation's, at the helpers' lines)."""
    (r,) = _recompiles("h26_vibration_lazy_manual_loss_scaler", tmp_path)
    cause = r.causes[0]
    assert cause.kind.value == "conditional_work", cause
    assert cause.fix_id == "conditional_work.host_branch", cause
    assert _numbers(cause.sources)[:3] == [60, 61, 64], cause.sources


def test_outputs_a_forward_hook_keeps_are_cited_at_the_hook(tmp_path: Path) -> None:
    """h17: `self.kept[name] = output.detach()` (:23) under `if self.active:` (:22) in a hook
    registered with `register_forward_hook`: the kept maps' ops cite torch's relu only (a detach
    makes no op); the hook's keep and its `if` are the lines."""
    (r,) = _recompiles("h17_autoencoder_hook_logger_keeps_features", tmp_path)
    (cause,) = r.causes
    assert cause.kind.value == "output_added", cause
    assert _numbers(cause.sources)[:2] == [23, 22], cause.sources


def test_tensors_from_lists_an_episode_fills_change_length_together(tmp_path: Path) -> None:
    """h10: `states, actions, rewards = run_episode(...)` fills its lists in `while not done:`
    (:52); each of the three tensors made from them (:75-77) changes with the episode's length,
    also where a graph holds one of them only (the actions, :76) and where it shrinks (no ragged
    last batch): the three lines and the loop, and a pad-and-mask fix."""
    recompiles = _recompiles("h10_reinforce_episode_length", tmp_path)
    shapes = [c for r in recompiles for c in r.causes if c.kind.value == "parameter_shape"]
    assert len(shapes) == 12
    for c in shapes:
        assert _numbers(c.sources)[:4] == [75, 76, 77, 52], c.sources
        assert c.fix_id == "parameter_shape.list", c
