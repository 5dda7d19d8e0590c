"""held_out_26's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md)."""

from __future__ import annotations

from pathlib import Path

from tests.test_recognizers_capture import _recompiles


def _numbers(lines: tuple[str, ...]) -> list[int]:
    return [int(x.rsplit(":", 1)[1]) for x in lines]


def test_a_hook_registered_under_an_if_is_the_work_that_if_switches_on(tmp_path: Path) -> None:
    """`add_grad_clamp(model, CLAMP)` (:49), called only under `if step == CLAMP_FROM:` (:47),
    registers `p.register_hook(lambda g: g.clamp(-limit, limit))` (:27): a clamp per weight, each
    region small, and the two bounds as new inputs. One cause at that `if`, the hook's line after
    it (was a new input and an output removed, each a cause of its own)."""
    (r,) = _recompiles("h26_keyword_eager_grad_hook_midrun", tmp_path)
    (cause,) = r.causes
    assert cause.fix_id == "conditional_work.host_branch", cause
    assert _numbers(cause.sources)[:2] == [47, 27]
