"""held_out_41's two false causes (issue 37), on its real torch_xla 2.9 captures, after the round was
scored once. cobalt: the work an `if loss.item() > SPIKE:` drops (an L2 penalty) leaves, in the
graph that had it, the gradient sums the penalty's gradient joined; those ops read the work's result
and are that work's, not a `structure` beside it. comet: a module flag that a `torch.compile`d
forward tests (`if self.symmetric:`) adds a loss term whose activations the forward now returns for
the backward; outputs a branch's work adds are that branch's code (the `if`, its fix), where only
a branch that returns other tensors (`if export: return out, emb`) is told by what the user keeps."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.causes import CauseKind

CORPUS = FIXTURES / "torch_xla" / "corpus"
_PREFIX = "fixtures/torch_xla/corpus/"


def _line(name: str, text: str) -> str:
    return script_line(f"{_PREFIX}scripts/{name}.py", text).replace(_PREFIX, "")


def _live(report):  # type: ignore[no-untyped-def]
    return [(r, [c for c in r.causes if not c.info]) for r in report.recompiles if not r.first_of_program]


def test_work_an_item_branch_drops_takes_the_sums_it_joined() -> None:
    name = "h41_cobalt_lazy_spike_guard_item"
    report = capture_report(CORPUS / "captures" / name)
    guard = _line(name, "if loss.item() > SPIKE:")
    ((_, causes),) = _live(report)
    assert [c.kind for c in causes] == [CauseKind.CONDITIONAL_WORK], causes
    assert causes[0].sources[0] == guard


def test_a_flagged_loss_term_under_torch_compile_is_the_flag_s_branch() -> None:
    name = "h41_comet_openxla_symmetric_after_warmup"
    report = capture_report(CORPUS / "captures" / name)
    test = _line(name, "if self.symmetric:")
    live = _live(report)
    assert len(live) == 2
    for r, causes in live:
        assert [c.kind for c in causes] == [CauseKind.CONDITIONAL_WORK], (r.variant, causes)
        assert test in r.lines[:1], (r.variant, r.lines)
