"""Issue 37, held_out_48's opal and flint (real torch_xla 2.9 CPU captures).

A clean loop's warm-up is `state_init` alone: the optimizer's momentum buffers and a weight-EMA's
copies (`p.detach().clone()`, which share their weight's device data until their first update,
so the first compiled graph reads one buffer where the next reads two) are state made on the
first steps and read from then on; the momentum update's broadcasts, re-paired across weights,
and the copies' writes, moved in the output list, are that state's too.

A `while x.item() > tol` in a compiled step cuts the step at each read; when the loop runs one
iteration more, the graph after its last read (the backward through every iteration) says the
same change as the condition's graph: the loop, not a size or a region of its own.
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

_CORPUS = FIXTURES / "torch_xla" / "corpus"


def _kinds(recompile) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(c.kind) for c in recompile.causes]


@pytest.mark.parametrize(
    "capture",
    [
        _CORPUS / "captures" / "h48_opal_eager_ema_clean",
        FIXTURES / "torch_xla" / "warmup_optim" / "ema_clone_eager_xla_compile_capture",
    ],
    ids=["opal_foreach_lerp_sgd_nesterov", "cnn_lerp_sgd_nesterov_weight_decay"],
)
def test_a_weight_ema_cloned_on_the_device_is_warm_up_state(capture) -> None:  # type: ignore[no-untyped-def]
    report = capture_report(capture)
    assert len(report.recompiles) == 1
    (recompile,) = report.recompiles
    assert _kinds(recompile) == ["state_init"], recompile.causes
    assert recompile.expected and all(c.info for c in recompile.causes)
    assert "copies of the model's tensors" in recompile.causes[0].summary


@pytest.mark.parametrize(
    ("script", "capture", "read"),
    [
        (
            "fixtures/torch_xla/corpus/scripts/h48_flint_compiled_newton_while.py",
            _CORPUS / "captures" / "h48_flint_compiled_newton_while",
            "while err.item() > TOL",
        ),
        (
            "fixtures/torch_xla/cut_rest/equilibrium_until_item.py",
            FIXTURES / "torch_xla" / "cut_rest" / "equilibrium_until_item_capture",
            "while delta.item() > TOL",
        ),
    ],
    ids=["flint_newton", "equilibrium_block"],
)
def test_the_rest_after_a_host_tested_loop_is_the_loop(script: str, capture, read: str) -> None:  # type: ignore[no-untyped-def]
    report = capture_report(capture)
    line = script_line(script, read).replace("fixtures/torch_xla/corpus/", "")
    fixed = [r for r in report.recompiles if not r.expected]
    assert len(fixed) == 2  # the condition's graph at one more read, then the step's rest
    rest = [r for r in fixed if r.trigger == "torch_xla.compile"]
    assert len(rest) == 1 and rest[0].step == fixed[0].step
    for recompile in fixed:
        assert _kinds(recompile) == ["conditional_work"], (recompile.variant, recompile.causes)
        assert line in recompile.causes[0].sources, recompile.causes[0].sources
