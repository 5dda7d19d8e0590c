"""held_out_25's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from tests.test_recognizers_capture import _recompiles

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def _numbers(lines: tuple[str, ...]) -> list[int]:
    return [int(x.rsplit(":", 1)[1]) for x in lines]


def test_a_clip_under_an_item_read_is_named_at_the_if_through_the_loop_in_its_block(tmp_path: Path) -> None:
    """`if norm.item() > args.max_norm:` (:43) holds `for p in params: p.grad.mul_(...)` (:45):
    the `for` between them does not hide the `if` whose host read decides; the scaling's work,
    its new scalar and the outputs it moves are that one cause (was a layer's inputs and an
    output removed)."""
    (r,) = _recompiles("h25_housing_lazy_item_clip_branch", tmp_path)
    (cause,) = r.causes
    assert cause.fix_id == "conditional_work.host_branch", cause
    assert _numbers(cause.sources)[:2] == [43, 45]


def test_an_implicit_sync_from_no_frame_on_openxla_warm_up_steps_only_is_expected() -> None:
    """A clean openxla loop: on steps 0 and 1 only, a sync from no frame at all cuts a graph (the
    bridge flushing pending work around its first runs); the steady state never runs it. Warm-up
    (state_init.bridge_sync, info), not a graph break to fix."""
    report = capture_report(CAPTURES / "h25_sensor_openxla_warmup_clean")
    assert report.recompiles and all(r.expected for r in report.recompiles), [
        (r.variant, r.kinds) for r in report.recompiles
    ]
    (cut,) = [r for r in report.recompiles if not r.frames and not r.library_frames]
    assert [c.fix_id for c in cut.causes] == ["state_init.bridge_sync"], cut.causes
