"""A Python option that switches library work on (label smoothing), and what must not be taken for
warm-up state beside it, on real torch_xla 2.9 captures (issue 37: no catch-all beside the cause).

* heldout4's ner_tagger_train (openxla): `label_smoothing` goes 0.0 -> 0.1 at step 4; the compiled
  forward's new graph also saves the smoothing's mask and count for the backward (outputs only that
  graph has, computed from the new scalars, updating no input): one `conditional_work.switched_on`,
  not a permutation of the saved outputs, a layer, or state;
* an integer scalar the step only reads (cross_entropy's) is no step counter: a counter is written
  back (`num_batches_tracked.add_(1)`); so held_out_5's validation predictions and held_out_7's
  ReLoRA merges carry no `state_init` beside their cause, and the merge's re-drawn weights (random
  numbers from `torch/nn/init.py`, their seed a new input) are the merge's work, not a dropout
  probability that reached 0."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

COMPILED = FIXTURES / "torch_xla" / "compiled" / "heldout4_captures"
CORPUS = FIXTURES / "torch_xla" / "corpus" / "captures"


def test_label_smoothing_switched_on_under_openxla_is_one_cause() -> None:
    report = capture_report(COMPILED / "ner_tagger_train" / "capture")
    script = "fixtures/torch_xla/compiled/heldout4/ner_tagger_train.py"
    (forward,) = [r for r in report.recompiles if r.step == 4 and r.frames]
    assert [c.fix_id for c in forward.causes] == ["conditional_work.switched_on"], forward.causes
    assert forward.attribution[0].lines[0] == script_line(script, "smoothing = "), forward.attribution


def test_a_read_integer_scalar_is_no_step_counter() -> None:
    for name in ("h5_gemma_periodic_val_preds", "h7_olmo_relora_restarts"):
        report = capture_report(CORPUS / name)
        kinds = [c.kind.value for r in report.recompiles for c in r.causes]
        assert "state_init" not in kinds, (name, kinds)


def test_weights_drawn_again_every_k_steps_are_the_block_s_work() -> None:
    report = capture_report(CORPUS / "h7_olmo_relora_restarts")
    script = "fixtures/torch_xla/corpus/scripts/h7_olmo_relora_restarts.py"
    (recompile,) = report.recompiles
    # one cause: the regions of library code the merge runs join the work named at its block
    assert [c.fix_id for c in recompile.causes] == ["conditional_work"], recompile.causes
    # the `if ... % k` block, then the merge's call inside it (the capture cites paths under the
    # corpus): the `if` decides the helper's work (held_out_28)
    guilty = [
        script_line(script, text).replace("fixtures/torch_xla/corpus/", "")
        for text in ("if (step + 1) % MERGE_EVERY == 0:", "    relora_merge(adapters)")
    ]
    assert all(list(a.lines[:2]) == guilty for a in recompile.attribution), recompile.attribution
