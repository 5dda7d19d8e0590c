"""held_out_31's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md): the cause, its fix and the line a user must change."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def _bug_causes(name: str, step: int):  # type: ignore[no-untyped-def]
    report = capture_report(CAPTURES / name)
    recompile = next(r for r in report.recompiles if r.step == step and not r.expected)
    return [c for c in recompile.causes if not c.info]


def _script(name: str, line: int) -> str:
    return f"scripts/{name}.py:{line}"


def test_outputs_that_come_and_go_with_every_k_work_are_that_work() -> None:
    """An input-gradient penalty added every 3rd iteration under `if (it + 1) % GP_EVERY == 0:`:
    the gradients it changes and the one it adds are the penalty's, one `conditional_work` cited
    at the `if` first (was that cause beside a false `output_removed`, cited under the `if`)."""
    name = "h31_ecg_eager_gradpenalty_every3"
    (cause,) = _bug_causes(name, 3)
    assert str(cause.kind) == "conditional_work"
    assert list(cause.sources[:2]) == [_script(name, 41), _script(name, 42)]


def test_one_weight_frozen_alone_is_cited_at_its_requires_grad_switch() -> None:
    """An embedding (no bias) frozen mid-run by `requires_grad_(False)`: one weight is enough to
    name the switch (was a bare `output_removed` at `opt.step()`)."""
    name = "h31_reviews_openxla_freeze_embedding"
    (cause,) = _bug_causes(name, 4)
    assert cause.fix_id == "trainable.requires_grad"
    assert cause.sources[0] == _script(name, 52)


def test_an_optimizer_replaced_mid_run_is_cited_where_it_is_replaced() -> None:
    """Adam swapped for SGD after warm-up (`optimizer = make_optimizer(...)` under an `if`): the
    assignment and its `if`, with a hint that says the optimizer changed (was `optimizer.step()`
    and a hint about pipeline partitions)."""
    name = "h31_housing_lazy_adam_to_sgd"
    (cause,) = _bug_causes(name, 4)
    assert cause.fix_id == "parameter_added.optimizer_swap"
    assert list(cause.sources[:2]) == [_script(name, 36), _script(name, 35)]


def test_a_length_passed_to_a_helper_is_cited_where_the_tensor_is_made() -> None:
    """A sequence-length curriculum inside `@torch_xla.compile`: the batch helper's `torch.randint(
    ..., (batch, length))` and the schedule's line come before the call site, at both changes."""
    name = "h31_tagger_compiled_seqlen_curriculum"
    for step in (3, 6):
        (cause,) = _bug_causes(name, step)
        assert cause.fix_id == "parameter_shape.sequence"
        assert list(cause.sources[:2]) == [_script(name, 36), _script(name, 18)]
