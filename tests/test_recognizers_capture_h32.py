"""held_out_32's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md): the cause, its fix and the line a user must change."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def _recompiles(name: str, step: int):  # type: ignore[no-untyped-def]
    report = capture_report(CAPTURES / name)
    return [r for r in report.recompiles if r.step == step and not r.expected]


def _script(name: str, line: int) -> str:
    return f"scripts/{name}.py:{line}"


def test_a_value_set_to_exactly_one_is_cited_where_it_is_set() -> None:
    """Mixup switched off for the last epoch: `alpha = ... else 0.0`, and the helper then sets
    `lam = 1.0`, which bakes 1 and 0 where a Beta draw was an input. Every graph of that step
    names `lam`'s literal assignment and the `alpha` its `if` tests, before the lines that read
    `lam` (the helper's return, and the loss through the helper's tuple return); was only the
    reading lines :32/:59. (The backward graph between them is synced from no user frame: the
    report lends it these lines.)"""
    name = "h32_speech_openxla_mixup_alpha_zero"
    recompiles = _recompiles(name, 6)
    assert len(recompiles) == 3
    causes = [c for r in recompiles for c in r.causes if not c.info]
    assert [str(c.kind) for c in causes] == ["constant_value"] * 3
    for cause in (causes[0], causes[2]):
        assert list(cause.sources[:2]) == [_script(name, 30), _script(name, 53)]
        assert f"`lam` is set to exactly 1.0 at {_script(name, 30)}" in cause.summary


def test_an_index_list_of_varying_length_is_cited_where_the_list_is_made() -> None:
    """Label noise: a helper returns the rows to relabel as a Python list (`[i for i in ... if
    rng.random() < p]`), made into `torch.tensor(rows)` and passed `.to(device)` to a compiled
    step: the helper's return and the `torch.tensor` line come before the step's line that reads
    the indices, at every new length (was only the step's `y[flip_rows] = flip_to`)."""
    name = "h32_retail_compiled_label_noise_list"
    for step in (1, 2, 3, 5):
        (recompile,) = _recompiles(name, step)
        (cause,) = [c for c in recompile.causes if not c.info]
        assert cause.fix_id == "parameter_shape.list"
        assert list(cause.sources[:3]) == [_script(name, 35), _script(name, 59), _script(name, 47)]


def test_weights_tied_mid_run_are_cited_at_the_tie() -> None:
    """`lm.head.weight = lm.embed.weight` under `if i == WARMUP_STEPS:` in the step loop: the
    head's own weight is read and updated no more. Cited at the assignment, with the hint that a
    tie changes the parameter set and belongs before the first step (was the optimizer's step
    line, and a layer's or a stage's work whose hint passed by the word "share")."""
    name = "h32_tinylm_compiled_tie_after_warmup"
    (recompile,) = _recompiles(name, 3)
    (cause,) = [c for c in recompile.causes if not c.info]
    assert str(cause.kind) == "parameter_removed"
    assert cause.fix_id == "parameter_removed.weight_tie"
    assert cause.sources[0] == _script(name, 42)
    assert "stage" not in cause.summary


def test_optimizer_work_of_an_unfreeze_is_the_unfreeze_not_every_k_steps() -> None:
    """An encoder unfrozen with `requires_grad_(True)` and `add_param_group` under `if step ==
    UNFREEZE_AT:`: the optimizer code that computes another way on that step, cited only at that
    `if`, is folded into the trainable-set switch cited at the unfreeze lines (was a
    `conditional_work` "every k steps" at the `if`, named first, with the periodic hint)."""
    name = "h32_churn_eager_unfreeze_param_group"
    (recompile,) = _recompiles(name, 5)
    (cause,) = [c for c in recompile.causes if not c.info]
    assert str(cause.kind) == "output_added"
    assert cause.fix_id == "trainable.requires_grad"
    assert list(cause.sources[:2]) == [_script(name, 45), _script(name, 46)]


def test_an_instruction_the_unfreeze_and_its_optimizer_work_share_counts_once() -> None:
    """The switch and the optimizer work folded into it both name the new group's transposes and
    an input: the fold joins the sides as sets (`_causes.fold_into`, as every fold does), so each
    instruction is named once and the closest-graph count ("the fewest differences") counts it
    once (was concatenated: 5 named twice, 79 instructions where the causes involve 74)."""
    name = "h32_churn_eager_unfreeze_param_group"
    (recompile,) = _recompiles(name, 5)
    (cause,) = [c for c in recompile.causes if not c.info]
    assert len(cause.left) == len(set(cause.left)) and len(cause.right) == len(set(cause.right))
    involved = sum(len(c.left) + len(c.right) for c in recompile.causes if str(c.kind) != "dead_code")
    assert recompile.baseline is not None
    assert f"the fewest differences ({involved} instructions)" in recompile.baseline.why
