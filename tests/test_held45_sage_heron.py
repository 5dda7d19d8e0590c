"""held_out_45's sage and heron (issue 37), on real torch_xla 2.9 captures, and one capture of each
pattern on another model (fixtures/torch_xla/user_state/generate.py, fixtures/torch_xla/reorder/
generate.py).

sage: a mean teacher made with copy.deepcopy shares the student's device data until its first
update, so the first graph reads one buffer per weight where the next reads two. Either of B's two
is A's one: the readers' votes for the copy are no evidence of a move, and the inputs stay where
they are. The warm-up is `state_init` alone (the copy's own `mul_` folded into it), no
`parameter_permutation` beside it. heron: meters of one shape updated alike (`0.9 * m`) with other
statistics, listed in another order beside an added meter: the look-alikes are told apart by what
their readers' readers compute, so the reorder is an `output_permutation` cited at the loop over
the list, not folded into a `parameter_added` at the meters' line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

CORPUS = FIXTURES / "torch_xla" / "corpus" / "captures"
USER_STATE = FIXTURES / "torch_xla" / "user_state"
REORDER = FIXTURES / "torch_xla" / "reorder"
_PREFIX = "fixtures/torch_xla/corpus/"


def _corpus_line(name: str, text: str) -> str:
    return script_line(f"{_PREFIX}scripts/{name}.py", text).replace(_PREFIX, "")


@pytest.mark.parametrize(
    ("folder", "warm_up", "baked", "ramp"),
    [
        (
            CORPUS / "h45_sage_lazy_consistency_ramp",
            1,
            4,
            _corpus_line("h45_sage_lazy_consistency_ramp", "return math.exp(-5.0"),
        ),
        (
            USER_STATE / "ema_teacher_ramp_lazy_capture",
            1,
            2,
            script_line("fixtures/torch_xla/user_state/ema_teacher_ramp_lazy.py", "return min(1.0"),
        ),
    ],
)
def test_an_ema_copy_sharing_the_weights_is_warm_up_alone(
    folder: Path, warm_up: int, baked: int, ramp: str
) -> None:
    report = capture_report(folder)
    (first,) = [r for r in report.recompiles if r.step == warm_up]
    assert [(str(c.kind), c.info) for c in first.causes] == [("state_init", True)], first.causes
    assert "copies of the model's tensors" in first.causes[0].summary
    (fixed,) = [r for r in report.recompiles if r.step == baked]
    (cause,) = fixed.causes
    assert str(cause.kind) == "constant_value"
    assert cause.sources[0] == ramp, cause.sources


@pytest.mark.parametrize(
    ("folder", "step", "loop", "chosen"),
    [
        (
            CORPUS / "h45_heron_eager_meter_lists",
            5,
            _corpus_line("h45_heron_eager_meter_lists", "for name in names:  # GUILTY"),
            _corpus_line("h45_heron_eager_meter_lists", "names = WARMUP_METERS if"),
        ),
        (
            next(REORDER.glob("stat_lists_eager_capture/*")),
            4,
            script_line("fixtures/torch_xla/reorder/stat_lists_eager.py", "for name in names:"),
            script_line("fixtures/torch_xla/reorder/stat_lists_eager.py", "names = EARLY_STATS if"),
        ),
    ],
)
def test_lists_of_meters_in_another_order_beside_one_more_are_a_reorder(
    folder: Path, step: int, loop: str, chosen: str
) -> None:
    report = capture_report(folder)
    (recompile,) = [r for r in report.recompiles if r.step == step]
    kinds = sorted(str(c.kind) for c in recompile.causes)
    assert kinds == ["output_added", "output_permutation"], recompile.causes  # no parameter_added
    (order,) = [c for c in recompile.causes if str(c.kind) == "output_permutation"]
    assert {loop, chosen} <= set(order.sources), order.sources
    assert any(m.what == "input" for m in order.mapping)  # the inputs moved with the outputs
