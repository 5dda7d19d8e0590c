"""Issue 37 on real torch.compile(openxla) captures: the XLA recompile of a dynamo retrace whose
guard names a tensor input's dtype, or the grad mode, is cited in the user's terms (the cast, the
compiled call; the `with` that sets the grad mode and the line deciding its flag) with the guard
kind's fix, not the library line of the bridge nor a train/eval mode's fix.

Captures: fixtures/torch_xla/guard_cause/ (generate.py) and held_out_39's two openxla scripts."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.guards import fix_for
from xlagraph.report.model import RunReport

GUARD = FIXTURES / "torch_xla" / "guard_cause"
CORPUS = FIXTURES / "torch_xla" / "corpus"


def _dtype_cited(report: RunReport, script: str, cast: str, call: str) -> None:
    (r,) = [r for r in report.recompiles if r.dynamo == "0/1" and not r.expected]
    (a,) = [a for a in r.attribution if r.causes[a.cause].kind is CauseKind.DTYPE]
    assert list(a.lines[:2]) == [script_line(script, cast), script_line(script, call)]
    assert list(r.lines[:2]) == list(a.lines[:2])
    assert r.causes[a.cause].hint == fix_for("tensor_dtype")
    assert "autocast" not in r.causes[a.cause].hint


def test_a_weight_cached_as_half_is_cited_at_its_cast_and_the_call() -> None:
    """Loss weights cached as `weight.half()` in the first epoch: dynamo's guard `dtype mismatch.
    expected Float, actual Half`; the f32 -> f16 input is cited at the cast, then at the compiled
    call, before the `w.float()` inside the forward that reads it."""
    script = "fixtures/torch_xla/guard_cause/weights_cached_half.py"
    report = capture_report(GUARD / "weights_cached_half_capture")
    _dtype_cited(report, script, "stored.append(weight.half())", "out = step_fn(")
    (event,) = [e for e in report.dynamo.events if e.compile_id == "0/1"]
    assert event.guards[0].origin == script_line(script, "stored.append(weight.half())")


def test_held_out_39_cached_mask_dtype() -> None:
    script = "scripts/h39_retail_openxla_cached_mask_dtype.py"
    report = capture_report(CORPUS / "captures" / "h39_retail_openxla_cached_mask_dtype")
    cast, call = "mask.to(torch.uint8)", "loss = F.mse_loss(forecast("
    (r,) = [r for r in report.recompiles if r.dynamo == "0/1" and not r.expected]
    (a,) = [a for a in r.attribution if r.causes[a.cause].kind is CauseKind.DTYPE]
    lines = [x.rpartition(":")[2] for x in a.lines[:2]]
    source = (CORPUS / script).read_text().splitlines()
    assert [source[int(n) - 1] for n in lines] == [
        next(s for s in source if cast in s),
        next(s for s in source if call in s),
    ]
    assert r.causes[a.cause].hint == fix_for("tensor_dtype")


def _grad_cited(report: RunReport, expected: list[str]) -> None:
    switched = [r for r in report.recompiles if r.dynamo == "0/1" and not r.expected]
    assert switched
    for r in switched:
        live = [c for c in r.causes if not c.info]
        assert [c.fix_id for c in live] == ["trainable.switched_grad_mode"]
        assert [x.rpartition(":")[2] for x in live[0].sources] == expected
    (event,) = [e for e in report.dynamo.events if e.compile_id == "0/1"]
    assert not event.expected and event.fix == fix("trainable.switched_grad_mode")


def test_a_warm_up_epoch_under_no_grad_is_cited_at_the_with_and_its_flag() -> None:
    """The encoder called inside `with torch.no_grad():` under `if warm:` in the first epoch, and
    outside it from then on (the retrace's call is the one outside): the `with` around the other
    call of the same compiled callable, then `warm = epoch < 1`."""
    script = "fixtures/torch_xla/guard_cause/frozen_warmup_no_grad.py"
    report = capture_report(GUARD / "frozen_warmup_no_grad_capture")
    expected = [script_line(script, "with torch.no_grad():"), script_line(script, "warm = epoch < 1")]
    _grad_cited(report, [x.rpartition(":")[2] for x in expected])


def test_held_out_39_probe_then_tune() -> None:
    """`with torch.set_grad_enabled(not probing):` (:32) around the compiled call, `probing =
    epoch == 0` (:28): a gradient-mode fix, not the train/eval mode's."""
    report = capture_report(CORPUS / "captures" / "h39_audio_openxla_probe_then_tune")
    _grad_cited(report, ["32", "28"])
