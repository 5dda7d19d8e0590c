"""held_out_36's torch.compile(openxla) miss, end to end on its real captures: a train/eval mode
switched once for good (dropout put in eval mode from the second epoch) is not another mode
compiled once and reused, while an evaluation every few steps still is."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"
NAME = "h36_wafer_openxla_dropout_off"
SCRIPT = f"scripts/{NAME}.py"


def test_a_mode_switched_for_good_is_a_cause_at_the_eval_call() -> None:
    """`dropout_off(net)` (:46) calls `m.eval()` (:34) on every nn.Dropout from step 3 and nothing
    puts them back: the forward and backward graphs of the train mode never run again. Each graph
    of the retrace is one live cause cited at the `.eval()` and at the helper's call, not the info
    "another mode ... compiled once and reused" at the compiled call."""
    report = capture_report(CAPTURES / NAME)
    fixed = [r for r in report.recompiles if r.dynamo == "0/1"]
    assert len(fixed) == 2
    for r in fixed:
        assert not r.expected
        (cause,) = r.causes
        assert (str(cause.kind), cause.info) == ("conditional_work", False)
        assert list(cause.sources) == [f"{SCRIPT}:34", f"{SCRIPT}:46"]
        assert "switched once" in cause.summary
    # dynamo's half says it alike: the retrace is no longer an expected mode, and gives the fix
    (event,) = [e for e in report.dynamo.events if e.compile_id == "0/1"]
    assert not event.expected and event.fix == fixed[0].causes[0].hint


def test_a_mode_alternated_stays_expected() -> None:
    """An evaluation pass under no_grad every few steps runs the training graph again after it:
    another mode, compiled once and reused (info), as before."""
    for name in ("h23_charcnn_openxla_train_eval_clean", "h20_twotower_openxla_padded_tail_clean"):
        report = capture_report(CAPTURES / name)
        moded = [r for r in report.recompiles if r.causes and "another mode" in r.causes[0].summary]
        assert moded, name
        assert all(r.expected and r.causes[0].info for r in moded), name
        assert all(e.expected for e in report.dynamo.events if e.kind == "recompile"), name
