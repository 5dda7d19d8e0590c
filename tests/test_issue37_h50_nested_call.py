"""A Python float argument of a compiled function passed inside another call on the same line
(issue 37): the value's origin is read from the call of the compiled function, not from the
outermost call, whose arguments are other values. Two real torch_xla 2.9 captures (CPU):

* held_out_3's gumbel (`compiled/heldout3/gumbel_vq_train.py`): `torch.compile(model)` bound to
  `forward`, called as `mse_loss(forward(x, tau), x)`: `tau`'s origin is `tau = max(...)`, not the
  `x = torch.randn(...)` the outer call passes second;
* `guard_cause/tempered_logits_openxla`: a function decorated with `torch.compile`, called as
  `F.cross_entropy(tempered(net(x), temperature), y)`: found by the `def`'s own name; not the
  labels' line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

COMPILED = FIXTURES / "torch_xla" / "compiled"
CASES = {
    "gumbel": (
        COMPILED / "heldout3_captures" / "gumbel_vq_train" / "capture" / "proc",
        "fixtures/torch_xla/compiled/heldout3/gumbel_vq_train.py",
        "tau",
        "        tau = max(",
    ),
    "tempered": (
        FIXTURES / "torch_xla" / "guard_cause" / "tempered_logits_openxla_capture",
        "fixtures/torch_xla/guard_cause/tempered_logits_openxla.py",
        "temperature",
        "        temperature = max(",
    ),
}


def _line(cited: str, text: str) -> str:
    lines = (FIXTURES.parent / cited).read_text(encoding="utf-8").splitlines()
    return f"{cited}:{next(i for i, t in enumerate(lines, 1) if t.startswith(text))}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_float_passed_inside_a_nested_call_is_traced_from_the_compiled_call(name: str) -> None:
    capture, cited, param, assigned = CASES[name]
    report = capture_report(Path(capture))
    assert report.dynamo is not None
    # (a recompile without a step, the cache limit's, has no call site to read)
    guards = [g for e in report.dynamo.recompiles if e.step is not None for g in e.guards[:1]]
    assert len(guards) >= 4
    for guard in guards:
        assert f"Python argument `{param}` changed" in guard.phrase, guard.phrase
        assert guard.origin == _line(cited, assigned), guard.origin
