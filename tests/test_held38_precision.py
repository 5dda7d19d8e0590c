"""held_out_38's miss (issue 37), on its real torch_xla 2.9 capture: h38_bearing_compiled_bf16_finetune
moves the model to bfloat16 with `model.to(torch.bfloat16)` at the top of epoch 1, in the epoch loop,
outside the loop of steps around the compiled step's call. The precision switch is that cast, cited
first; it was cited at the step's own casts (:23-24) only."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

CORPUS = FIXTURES / "torch_xla" / "corpus"
_PREFIX = "fixtures/torch_xla/corpus/"


def _line(name: str, text: str) -> str:
    return script_line(f"{_PREFIX}scripts/{name}.py", text).replace(_PREFIX, "")


def test_a_cast_in_the_epoch_loop_is_the_switch() -> None:
    name = "h38_bearing_compiled_bf16_finetune"
    report = capture_report(CORPUS / "captures" / name)
    (recompile,) = [r for r in report.recompiles if not r.expected]
    (cause,) = recompile.causes
    assert str(cause.kind) == "dtype"
    assert cause.sources[0] == _line(name, "model.to(torch.bfloat16)"), cause.sources
