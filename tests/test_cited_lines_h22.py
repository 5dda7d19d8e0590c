"""The user's line cited where the graph itself names none (issue 37, held_out_22), on the corpus's
real torch_xla 2.9 captures (fixtures/torch_xla/corpus/captures, CPU device):

* h22_resmlp_openxla_smoothing_to_zero: label smoothing annealed to exactly 0.0 around a model
  compiled with torch.compile(backend="openxla"). The loss's backward, synced by the bridge from
  inside autograd (no user frame; autograd records no source line), bakes eps 0 and 1 - eps 1 as
  the forward's graph of the same step does: both cite the forward's line (`:42`), and the
  backward's graph says whose lines it borrows.
* h22_speechenc_compiled_bf16_callback: a callback the training loop calls casts the encoder to
  bf16 between steps (`trainer.model.encoder.to(torch.bfloat16)`, `:48`); the step compiled by
  torch_xla.compile sees its weights change type. The cast, in a function the loop calls, is the
  line that switches, cited before the encoder's own lines.
"""

from __future__ import annotations

from typing import Any

from tests.corpus_reports import corpus_report


def _cause_lines(r: dict[str, Any], kind: str) -> list[str]:
    return [x for a in r["attribution"] if a["kind"] == kind for x in a["lines"]]


def test_backward_synced_by_the_bridge_cites_the_forward_line() -> None:
    script = "scripts/h22_resmlp_openxla_smoothing_to_zero.py"
    report = corpus_report("h22_resmlp_openxla_smoothing_to_zero")
    baked = [r for r in report["recompiles"] if "constant_value" in [c["kind"] for c in r["causes"]]]
    assert sorted(r["variant"] for r in baked) == ["G", "H"]
    for r in baked:
        assert f"{script}:42" in _cause_lines(r, "constant_value"), r["variant"]
    backward = next(r for r in baked if r["variant"] == "G")
    assert "lines of graph H" in backward["note"]
    # first where the value is computed (the scheduler object's return, its call), then the use
    assert backward["lines"][:3] == [f"{script}:35", f"{script}:63", f"{script}:42"]


def test_a_precision_switch_in_a_callback_the_loop_calls_is_cited() -> None:
    script = "scripts/h22_speechenc_compiled_bf16_callback.py"
    report = corpus_report("h22_speechenc_compiled_bf16_callback")
    (retyped,) = [r for r in report["recompiles"] if "dtype" in [c["kind"] for c in r["causes"]]]
    lines = _cause_lines(retyped, "dtype")
    # the switch first, then where the switched encoder runs
    assert lines[:2] == [f"{script}:48", f"{script}:28"]


def test_a_cast_in_a_method_the_loop_calls_is_cited() -> None:
    """The same rule elsewhere: held_out_21's MoCo queue is cast to bf16 by `queue.maybe_compact(step)`,
    which the loop calls; its cast (`:39`) is cited before the lines that read the queue."""
    script = "scripts/h21_moco_compiled_queue_bf16_compact.py"
    report = corpus_report("h21_moco_compiled_queue_bf16_compact")
    retyped = [r for r in report["recompiles"] if "dtype" in [c["kind"] for c in r["causes"]]]
    assert retyped
    assert _cause_lines(retyped[0], "dtype")[0] == f"{script}:39"
