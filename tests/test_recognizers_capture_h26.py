"""held_out_26's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from tests.test_recognizers_capture import _recompiles

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


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


def test_a_python_operator_s_constant_is_cited_at_the_user_s_expression() -> None:
    """`(-((1 - p) ** gamma) * logp)` (:27) with `gamma` annealed by `gamma_at` (:32): torch
    records the power's constant, broadcast and power at its operator wrapper
    (`torch/_tensor.py`), never at :27; the first instruction past the wrapper is. Each recompile
    then names where the number is computed and passed (:32, :56) and the expression (:27)."""
    report = capture_report(CAPTURES / "h26_detector_compiled_focal_gamma_anneal")
    assert len(report.recompiles) == 4
    for r in report.recompiles:
        (cause,) = r.causes
        assert cause.kind.value == "constant_value", cause
        assert _numbers(r.attribution[0].lines) == [32, 56, 27], r.attribution
