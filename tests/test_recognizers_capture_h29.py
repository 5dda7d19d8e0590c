"""held_out_29's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def test_work_back_from_the_bridge_s_first_sync_with_its_gradients_is_warm_up() -> None:
    """torch.compile(openxla): on step 0 the bridge's first compile of the backward synced all
    pending work (the loss, the regularizer terms, their backward) in a graph of its own, and the
    user's `mark_step` graph read the gradients it computed as inputs. On step 1 that work is back
    in the user's graph: the gradient inputs (each of a weight's shape) are gone and the loss's
    inputs and work are new. torch.compile's warm-up, expected (was parameter_added and
    parameter_removed, two false causes); the reordered regularizer at step 4 is still named."""
    report = capture_report(CAPTURES / "h29_ner_openxla_regularizer_reinsert")
    by_step = {r.step: r for r in report.recompiles if r.trigger != "dynamo"}
    warm = by_step[1]
    assert warm.expected and [c.fix_id for c in warm.causes] == ["state_init.bridge_sync"], warm.causes
    assert [str(c.kind) for c in by_step[4].causes if not c.info] == ["parameter_permutation"]


def test_a_step_the_compiled_program_no_longer_runs_is_not_the_bridge_s_warm_up() -> None:
    """The same shape of difference where dynamo gave up on the function (its recompile limit, a
    Python float specialized every step): the whole step runs lazily in the user's graph at step
    8, with no bridge sync on that step. No work of the bridge's came back there: not warm-up."""
    capture = FIXTURES / "torch_xla" / "compiled" / "heldout5_captures" / "mixup_mixer_train" / "capture"
    report = capture_report(capture)
    (late,) = [r for r in report.recompiles if r.step == 8]
    assert not late.expected
    assert "state_init.bridge_sync" not in [c.fix_id for c in late.causes]


def _first_bug(name: str, step: int):  # type: ignore[no-untyped-def]
    report = capture_report(CAPTURES / name)
    return next(r for r in report.recompiles if r.step == step and not r.expected)


def _script(name: str, line: int) -> str:
    return f"scripts/{name}.py:{line}"


def test_an_unrolled_loop_that_runs_more_times_is_named_where_its_count_is_decided() -> None:
    """torch_xla.compile'd step over 2 micro-batches, 4 from epoch 1: B holds two more copies of
    the loop's body (new inputs shaped like the first micro-batches', their forward and backward).
    Named conditional_work at `micro_batches_for`'s return, with the assignment, the list built
    from it, the call and the loop's header (was parameter_added at the body's loss line beside a
    false state_init: "copies of weights")."""
    name = "h29_ctr_compiled_accum_epoch"
    bug = _first_bug(name, 4)
    (cause,) = bug.causes
    assert str(cause.kind) == "conditional_work" and cause.fix_id == "conditional_work.trip_count"
    assert list(cause.sources[:5]) == [_script(name, n) for n in (23, 43, 44, 46, 28)]


def test_a_dict_reordered_by_pop_and_reinsert_is_cited_at_the_pop() -> None:
    """`regularizers.pop("l2")` then `regularizers["l2"] = ...` under `if step == 4:` move the
    key last, and `for fn, weight in regularizers.values():` sums the terms in that order: the
    pop and the re-insert come first, then their `if`, then the loop."""
    name = "h29_ner_openxla_regularizer_reinsert"
    bug = _first_bug(name, 4)
    (cause,) = [c for c in bug.causes if not c.info]
    assert list(cause.sources[:4]) == [_script(name, n) for n in (44, 45, 42, 48)]


def test_work_of_a_hook_registered_mid_run_is_cited_at_the_registration() -> None:
    """`self.model.body.register_forward_hook(clamp_activations)` under `if step == 4:`: the
    clamp's work is the hook's, registered from that step (was cited at the clamp and the
    forward's line only, with a library option's fix)."""
    name = "h29_kws_eager_clamp_hook_midrun"
    bug = _first_bug(name, 5)
    (cause,) = [c for c in bug.causes if not c.info]
    assert str(cause.kind) == "conditional_work" and cause.sources[0] == _script(name, 47)
    assert "hook registered mid-run" in cause.summary and cause.fix_id == "conditional_work.host_branch"


def test_a_vector_made_from_a_growing_python_list_is_cited_where_it_is_made() -> None:
    """Class weights `torch.tensor([...])` from a list that gains a class: f32[3] -> f32[4], cited
    at the `torch.tensor` and the step's slice by its size, not at an image batch's transfer (was
    "the batch size grew")."""
    name = "h29_seg_compiled_class_incremental"
    bug = _first_bug(name, 4)
    (cause,) = bug.causes
    assert cause.fix_id == "parameter_shape.python_list"
    assert list(cause.sources[:2]) == [_script(name, 21), _script(name, 27)]


def test_a_tensor_kept_in_a_list_is_cited_at_the_append() -> None:
    """Encoder features appended to a list on snapshot steps (`keep.append(features.detach())`,
    `keep` a parameter): the append keeps them alive, cited before the model's line."""
    name = "h29_forecast_lazy_feature_snapshots"
    bug = _first_bug(name, 3)
    (cause,) = [c for c in bug.causes if not c.info]
    assert str(cause.kind) == "output_added" and cause.sources[0] == _script(name, 37)
