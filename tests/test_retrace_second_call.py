"""What a torch.compile retrace brings with it (issue 37): torch_xla's openxla bridge syncs all
pending work on the first call of a (re)traced frame and only the compiled graph's inputs from its
second call on, so the graphs compiled on a trace's second call are its warm-up, wherever that call
falls: the next step, or two steps later when the argument that retraced alternates. And where a
list of tensors grew, the retrace's other graphs of the step hold the new item's work: the list's
cause, not a tensor kept alive. Real torch_xla 2.9 CPU captures
(fixtures/torch_xla/retrace_optimizer/generate.py, fixtures/torch_xla/corpus)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.dynamo_join.second_call import SECOND_CALL

HERE = FIXTURES / "torch_xla" / "retrace_optimizer"
LYNX = FIXTURES / "torch_xla" / "corpus" / "captures" / "h49_lynx_openxla_probe_logits"


def _second_call(report, step: int, pairs: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    """Each graph of `pairs` (graph -> its baseline, the first trace's second-call graph) on `step`
    is told as the retrace's warm-up, tied to dynamo's recompile 0/1, nothing to fix."""
    by = {r.variant: r for r in report.recompiles}
    for variant, against in pairs.items():
        r = by[variant]
        assert r.step == step and r.dynamo == "0/1", (variant, r.step, r.dynamo)
        assert r.baseline is not None and r.baseline.variant == against
        assert r.expected, (variant, r.kinds)
        assert [c.case for c in r.causes] == [SECOND_CALL]
        assert r.causes[0].kind is CauseKind.STATE_INIT and r.causes[0].fix_id == "state_init.bridge_sync"
        assert f"what graph {against} is to the trace before it" in r.causes[0].summary


def test_probe_on_alternate_steps_second_call_two_steps_after_the_retrace() -> None:
    """h49 lynx: `with_probe` retraces at step 6, step 7 runs the first trace, step 8 is the probe
    trace's second call: K (dynamo_bridge.py:524) and L (mark_step) are to it what E and F are to the
    first trace, not a tensor kept alive nor an input added."""
    report = capture_report(LYNX)
    _second_call(report, 8, {"K": "E", "L": "F"})
    live = {c.kind for r in report.recompiles for c in r.causes if not c.info}
    assert CauseKind.OUTPUT_ADDED not in live


def test_aux_head_on_alternate_steps_under_adam() -> None:
    """aux_alternate (written for this rule): `with_aux` retraces at step 4, the aux trace's second
    call is step 6; Adam's state for the aux head and its update are the retrace's own. The steady
    alternation is still diffed afresh (K after E: the aux output), not read as warm-up."""
    report = capture_report(HERE / "aux_alternate_capture")
    _second_call(report, 6, {"K": "E", "L": "F"})
    turns = report.steady_turns
    assert turns is not None
    k_after_e = next(t for t in turns.turns if (t.variant, t.against) == ("K", "E"))
    assert not k_after_e.expected and "state_init" not in k_after_e.kinds


def _list_grew(name: str, made_at: str, loop_at: str, variants: set[str]) -> None:
    script = f"fixtures/torch_xla/retrace_optimizer/{name}.py"
    made, loop = script_line(script, made_at), script_line(script, loop_at)
    report = capture_report(HERE / f"{name}_capture")
    named = {
        r.variant
        for r in report.recompiles
        if r.dynamo == "0/1"
        for c in r.causes
        if not c.info and c.kind is CauseKind.PARAMETER_ADDED and list(c.sources[:2]) == [made, loop]
    }
    assert named == variants, named
    kept = [
        r.variant for r in report.recompiles for c in r.causes if c.fix_id == "output_added" and not c.info
    ]
    assert not kept, kept


def test_a_list_item_s_work_in_the_retraces_other_graphs_is_the_lists_cause() -> None:
    """modality_list: the audio encoder's output in the bridge's full sync (H) and its gradients and
    SGD updates in the lazy graph (K) follow from the list that grew, as I and J do."""
    _list_grew("modality_list", "embeddings = [encoders[m]", "for emb in embeddings", {"H", "I", "J", "K"})


def test_a_new_trained_adapter_joining_the_list_is_the_lists_cause() -> None:
    """task_list_grows (written for this rule): a third adapter's output joins the list the compiled
    pooling head loops over at step 2; its output in the bridge's full sync (H) and its gradients,
    momentum and updates in the lazy graph (K) are the list's `parameter_added`, as I and J."""
    _list_grew("task_list_grows", "parts = [torch.tanh", "pooled = torch.zeros_like", {"H", "I", "J", "K"})
