"""Issue 37: a clean run's optimizer warm-up is `state_init` (expected) and nothing beside it, for
Adagrad (state made at construction), SGD with momentum, RMSprop, Adamax, Adam and AdamW, under
torch.compile(backend="openxla") with the optimizer outside, torch_xla.compile of the whole step,
and lazy syncs; and a dynamo retrace for a Python float says only the guard's cause. Real torch_xla
2.9 captures (fixtures/torch_xla/warmup_optim, its generate.py)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

HERE = FIXTURES / "torch_xla" / "warmup_optim"
OPTIMIZERS = ("adagrad", "sgd_momentum", "rmsprop", "adamax", "adam", "adamw")
MODES = ("openxla", "xla_compile", "lazy")


def _kinds(name: str) -> list[tuple[int, frozenset[str], bool]]:
    """Each recompile of the capture: its step, its cause kinds, and whether all are expected."""
    report = capture_report(HERE / f"{name}_capture")
    return [(r.step, frozenset(r.kinds), r.expected) for r in report.recompiles]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_clean_warm_up_is_state_init_alone(optimizer: str, mode: str) -> None:
    assert _kinds(f"{optimizer}_{mode}") == [(1, frozenset({"state_init"}), True)]


@pytest.mark.parametrize("optimizer", ("adagrad", "sgd_momentum", "adam"))
def test_retrace_says_only_the_guard(optimizer: str) -> None:
    """The float changes 2.0 -> 0.5 at step 4: XLA had compiled those graphs (neither value is
    baked), so the only XLA recompile is the warm-up; dynamo's one recompile is the argument."""
    name = f"{optimizer}_openxla_retrace"
    assert _kinds(name) == [(1, frozenset({"state_init"}), True)]
    dynamo = capture_report(HERE / f"{name}_capture").dynamo
    assert dynamo is not None
    said = [(e.step, e.guards[0].kind, e.expected) for e in dynamo.recompiles]
    assert said == [(4, "python_scalar", False)]


def test_accumulated_adam_state_is_made_on_its_first_update() -> None:
    """The optimizer steps every 2 steps: Adam's moments are made at step 1 (the accumulate + step
    graph, expected as accumulation's) and read from step 3 on (state_init)."""
    assert _kinds("adam_openxla_accumulate") == [
        (1, frozenset({"conditional_work"}), True),
        (3, frozenset({"state_init"}), True),
    ]


@pytest.mark.parametrize(
    ("name", "second"), (("sgd_momentum_lazy_accumulate", 3), ("sgd_nesterov_conv_lazy_accumulate", 5))
)
def test_accumulated_sgd_momentum_is_warm_up_lazy(name: str, second: int) -> None:
    """The same with SGD's momentum: the buffer made by the first update is the accumulated
    gradient itself (torch.clone of it, one value in the graph, an update of the gradient carried
    from the step before; a conv's without even the clone's frame), and the second update's new
    inputs are that state. Two models: an MLP stepping every 2 syncs, a CNN with Nesterov every 3."""
    kinds = _kinds(name)
    assert [k for k in kinds if k[0] == second] == [(second, frozenset({"state_init"}), True)]


def test_accumulated_sgd_momentum_is_warm_up_openxla() -> None:
    """Under torch.compile the buffers the first update made reach step 3's lazy graph as device
    data, and the matcher calls a gradient of their shape new: the live tensors say the optimizer's
    `state` holds tensors of those shapes, and the baseline (step 1) made them."""
    kinds = _kinds("sgd_momentum_openxla_accumulate")
    assert [k for k in kinds if k[0] == 3] == [(3, frozenset({"state_init"}), True)]


def test_accumulated_sgd_momentum_is_warm_up_openxla_conv() -> None:
    """The same with another model: a 2-D CNN under torch.compile, SGD (momentum 0.7) every 2 syncs.
    Every recompile is expected: the bridge's warm-up, the first step without an update (step 2,
    accumulation's other graph) and the second update reading the buffers (step 3, state_init)."""
    kinds = _kinds("sgd_momentum_conv_openxla_accumulate")
    assert [k for k in kinds if k[0] == 3] == [(3, frozenset({"state_init"}), True)]
    assert [k for k in kinds if k[0] == 2] == [(2, frozenset({"conditional_work"}), True)]
    assert all(expected for _, _, expected in kinds)


def test_accumulated_sgd_momentum_all_expected_lazy() -> None:
    """Lazy step 1 (accumulate + the first update) against step 0 (accumulate only): the update on
    some steps is gradient accumulation's second graph, compiled once (expected, as Adam's)."""
    assert all(expected for _, _, expected in _kinds("sgd_momentum_lazy_accumulate"))
