"""Inputs and outputs paired from evidence (issue 7, item 1), on real JAX dumps
(fixtures/jax/pairing, produced by its generate.py): several weights share one shape, so shapes
alone cannot pair them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import CauseKind
from xlagraph.diff import diff_files, diff_modules

PAIRING = FIXTURES / "jax" / "pairing"


def _diff(name: str, reverse: bool = False):  # type: ignore[no-untyped-def]
    a, b = str(PAIRING / f"{name}_a.hlo"), str(PAIRING / f"{name}_b.hlo")
    return diff_files(b, a) if reverse else diff_files(a, b)


def test_tensor_parallel_split_is_one_sharding_cause_without_permutation() -> None:
    for reverse in (False, True):
        result = _diff("tp", reverse)
        kinds = [c.kind for c in result.causes]
        assert kinds == [CauseKind.SHARDING], kinds
        (cause,) = result.causes
        assert not cause.mapping  # no invented permutation
        shapes = [(ch.old, ch.new) for ch in cause.changes if ch.what == "shape"]
        # every shape change is a whole-factor split of the same weight, never f32[64,64] -> f32[128,64]
        for old, new in shapes:
            a = [int(x) for x in old.split("[")[1].rstrip("]").split(",")]
            b = [int(x) for x in new.split("[")[1].rstrip("]").split(",")]
            assert len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1, (old, new)
            assert all(max(x, y) == 2 * min(x, y) for x, y in zip(a, b, strict=True) if x != y), (old, new)


def test_element_type_change_is_dtype_with_old_and_new() -> None:
    result = _diff("dtype")
    assert [c.kind for c in result.causes] == [CauseKind.DTYPE]
    changes = [ch for ch in result.causes[0].changes if ch.what == "dtype"]
    assert len(changes) == 8  # the 7 inputs and the output
    assert all(ch.old.startswith("f32[") and ch.new.startswith("bf16[") for ch in changes)
    assert {ch.old[3:] for ch in changes} == {ch.new[4:] for ch in changes}  # same dimensions


def test_inserted_input_is_parameter_added_and_the_rest_are_not_moved() -> None:
    result = _diff("insert")
    assert [c.kind for c in result.causes] == [CauseKind.PARAMETER_ADDED]
    (cause,) = result.causes
    assert [ch.new for ch in cause.changes if ch.what == "input"] == ["1: f32[]"]
    assert "input 1: f32[]" in cause.summary
    removed = _diff("insert", reverse=True)
    assert [c.kind for c in removed.causes] == [CauseKind.PARAMETER_REMOVED]
    # a bare dump: the note says which settings record the user's lines
    assert any("XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1" in n for n in result.notes)


def test_a_permutation_the_users_support_is_still_reported() -> None:
    pair = FIXTURES / "jax" / "pairs" / "param_permutation"
    result = diff_files(str(pair / "a.hlo"), str(pair / "b.hlo"))
    (cause,) = result.causes
    assert cause.kind is CauseKind.PARAMETER_PERMUTATION
    assert {(m.left, m.right) for m in cause.mapping} == {(0, 1), (1, 0)}


def test_identical_means_no_causes_and_dead_code_is_a_note() -> None:
    clean = FIXTURES / "torch_xla" / "clean_loop"
    result = diff_files(str(clean / "a.hlo"), str(clean / "b.hlo"))
    assert result.verdict == "identical" and result.causes == ()
    train = Path(__file__).resolve().parent / "data" / "train.hlo.txt"
    kept = diff_files(f"{train}#2", f"{train}#3")
    assert [c.kind for c in kept.causes] == [CauseKind.OUTPUT_ADDED]
    assert kept.notes and "never reach a result" in kept.notes[0]


# One compiled training step of the block (fixtures/jax/pairing/step_*.hlo): what a whole step
# looks like against its sharded, bf16 or larger-batch version, both ways.
STEP_CASES = [
    ("step_tp2", {CauseKind.SHARDING}),
    ("step_tp4", {CauseKind.SHARDING}),
    ("step_dp2", {CauseKind.SHARDING}),
    ("step_bf16", {CauseKind.DTYPE}),
    ("step_b16", {CauseKind.PARAMETER_SHAPE}),
]


@pytest.mark.parametrize(("name", "kinds"), STEP_CASES, ids=[c[0] for c in STEP_CASES])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_a_training_step_against_its_variant_is_one_cause(name: str, kinds: set, reverse: bool) -> None:
    a, b = str(PAIRING / "step_a.hlo"), str(PAIRING / f"{name}.hlo")
    result = diff_files(b, a) if reverse else diff_files(a, b)
    assert {c.kind for c in result.causes} == kinds, [c.summary[:100] for c in result.causes]
    assert all(not c.mapping for c in result.causes)  # no invented permutation


def test_tensor_parallel_degree_change_is_one_parallelism_cause() -> None:
    result = diff_files(str(PAIRING / "step_tp2.hlo"), str(PAIRING / "step_tp4.hlo"))
    assert [c.kind for c in result.causes] == [CauseKind.COLLECTIVE]
    assert "replica groups" in result.causes[0].summary


def test_weights_of_other_shapes_are_not_called_a_ragged_batch() -> None:
    """fixtures/torch_xla/parallel/pp_middle_stage: a pipeline stage holding other blocks takes
    weights of other shapes; inputs the step updates are weights, so no batch / sequence hint."""
    parallel = FIXTURES / "torch_xla" / "parallel"
    result = diff_files(str(parallel / "pp_middle_stage_a.hlo"), str(parallel / "pp_middle_stage_b.hlo"))
    shapes = [c for c in result.causes if c.kind is CauseKind.PARAMETER_SHAPE]
    # Paired by context, the kept block's inputs are the ones the step updates: no invented
    # shape change is left, and any that is said is said of weights.
    assert all("weights" in c.summary and "drop_last" not in c.hint for c in shapes)


# Real dumps whose output 0 is the only reader of some collectives (issue 19): the transformed
# text drops that output; XLA's dead-code pass keeps cross-partition collectives, so they still
# run in B and the diff is the dropped output alone, not a `collective ... B has none`.
DEAD_COLLECTIVES = [
    "jax/wild3/compiled_gpt_decode_tensor_parallel/b.hlo",
    "jax/wild4/mlp_input_spec_spmd_pass/a.hlo",
    "torch_xla/corpus/captures/h6_spmd_mesh_axis_swap/hlo/"
    "module_0000.SyncTensorsGraph.176.cpu_after_optimizations.txt.xz",
]


@pytest.mark.parametrize("name", DEAD_COLLECTIVES)
def test_collectives_no_result_reads_are_no_cause(name: str) -> None:
    import lzma

    from tests.metamorphic.transforms import Entry, _output_shapes, _set_outputs, normalize
    from xlagraph.parse.hlo import parse_hlo

    path = FIXTURES / name
    raw = lzma.decompress(path.read_bytes()).decode() if name.endswith(".xz") else path.read_text()
    text = normalize(raw)
    entry = Entry.parse(text)
    outs, shapes = entry.outputs(), _output_shapes(entry)
    _set_outputs(entry, outs[1:], shapes[1:])
    result = diff_modules(parse_hlo(text), parse_hlo(entry.text()))
    assert [c.kind for c in result.causes] == [CauseKind.OUTPUT_REMOVED], [c.summary for c in result.causes]
    assert [ch.old.split(":")[0] for ch in result.causes[0].changes if ch.what == "output"] == ["0"]
