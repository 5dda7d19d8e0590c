"""JAX programs users paste from real work, third batch (fixtures/jax/wild3, made by its generate.py):
compiled texts (fusions, layouts, async collectives), sharded programs on 4 devices and hand-written
models (GPT decode with a KV cache, ViT, U-Net, diffusion, T5, Mamba, MoE, beam search). The verdict and
the cause kinds were written down from what the two programs differ in, before the engine ran on them.

Never a wrong `identical` above all. Pairs the engine still gets wrong are strict xfails whose reason
says exactly what it answers, so they turn into failures the day they are fixed.
"""

from __future__ import annotations

import pytest

from tests import wild_pairs
from tests.conftest import FIXTURES, load_manifest

WILD = FIXTURES / "jax" / "wild3"
PAIRS = load_manifest("jax/wild3")["pairs"]

# What the engine answers today where it is wrong (diff A B). These are for the lead to fix.
WRONG = {
    "compiled_gpt_decode_pos_baked": "says parameter_removed + a false structure ('4 regions differ', "
    "fused_computation.17/.11/.14: the add/compare/select that normalise the removed cache position "
    "inside the dynamic-update-slice fusions): work that reads the removed input is not folded into it "
    "when it sits in fused computations",
    "compiled_vit_image_size": "says parameter_shape + a false attribute ('sizes passed as Python ints "
    "changed': add.11 in fused_computation.4, f32[2,16,32] -> f32[2,36,32]): the patch count follows "
    "from the image size, a shape inside a fusion not folded into parameter_shape",
    "shard_map_axis_renamed": "says different, sharding (the xla.sdy in_shardings/manual_axes/out_shardings "
    "frontend attributes of the shard_map custom-calls): mesh axes renamed ('data','model' -> 'x','y') "
    "over the same devices and specs; both compile to the same program up to metadata",
}
WRONG["compiled_input_layout_column_major"] = (
    "says structure only (main.1: 1 changed, 1 only-in-B fusion, the copy XLA inserts to re-lay the input "
    "out): no layout cause, though the entry parameter's layout changed (f32[8,16]{1,0} -> {0,1} in "
    "entry_computation_layout and on the parameter)"
)
WRONG["compiled_moe_router_aux_loss"] = (
    "says output_added + a false structure ('3 regions differ', main.5: custom-call, fusion, "
    "get-tuple-element, sort): with the extra output XLA implements the shared top_k as a sort instead of "
    "the TopK custom-call; the work that feeds the added output is not folded into it once compiled"
)
WRONG["single_device_shardings_explicit"] = (
    "says different, sharding ('(none) -> {replicated}' on both parameters, the FuncResultSharding "
    "custom-call folded in): the module's Shardy mesh is empty_mesh = #sdy.mesh<[]>, one device, where "
    "replicated is no sharding at all; both compile to the same program"
)
WRONG["shard_map_halo_width"] = (
    "says parameter_shape (input 1 f32[3,8,8] -> f32[4,8,8] read as 'the batch size grew', though it is a "
    "conv kernel's width) + collective (ppermute.1 operands f32[2,8] -> f32[3,8]) + a false attribute "
    "(slice.1 {[6:8],[0:8]} -> {[5:8],[0:8]}, concatenate.1 f32[10,8] -> f32[11,8]): the halo that follows "
    "from the kernel width inside the shard_map body is not folded into parameter_shape"
)
# diff B A: the verdict only (the kinds of the reverse direction are the mirror ones).
WRONG["compiled_bf16_mixed_precision"] = (
    "says dtype + a false structure (main.3: 2 changed and 3 only-in-B fusions, the bf16 converts of the "
    "weights fused on their own): the program XLA compiles around a dtype change is not folded into it"
)
WRONG["compiled_sharding_constraint_reshard"] = (
    "says collective (A none, B 1 all-gather) + a false attribute ('sizes passed as Python ints changed': "
    "broadcast_multiply_fusion, mul.7 f32[8,32] -> f32[32,8], the per-device shard shape) + a false "
    "structure (partition-id and a dynamic-slice fusion only in B): the resharding's shard shapes and "
    "slicing are not folded into the collective"
)
WRONG["compiled_vmap_vs_hand_batched"] = (
    "says a false parameter_shape ('input 0 f32[4,16] -> f32[8,16], input 1 f32[8,16] -> f32[4,16]', "
    "'moved A#0 -> B#1') + structure: both programs take (f32[4,16], f32[8,16]) in the same order; the "
    "matcher pairs w with x because the dot's operands are swapped (its result is transposed)"
)
WRONG["compiled_input_layout_column_major"] = (
    "says structure only (main.1: 1 changed, 1 only-in-B fusion, the copy XLA inserts to re-lay the input "
    "out): no layout cause, though the entry parameter's layout changed (f32[8,16]{1,0} -> {0,1} in "
    "entry_computation_layout and on the parameter)"
)
WRONG["compiled_moe_router_aux_loss"] = (
    "says output_added + a false structure ('3 regions differ', main.5: custom-call, fusion, "
    "get-tuple-element, sort): with the extra output XLA implements the shared top_k as a sort instead of "
    "the TopK custom-call; the work that feeds the added output is not folded into it once compiled"
)
WRONG["single_device_shardings_explicit"] = (
    "says different, sharding ('(none) -> {replicated}' on both parameters, the FuncResultSharding "
    "custom-call folded in): the module's Shardy mesh is empty_mesh = #sdy.mesh<[]>, one device, where "
    "replicated is no sharding at all; both compile to the same program"
)
WRONG["shard_map_halo_width"] = (
    "says parameter_shape (input 1 f32[3,8,8] -> f32[4,8,8] read as 'the batch size grew', though it is a "
    "conv kernel's width) + collective (ppermute.1 operands f32[2,8] -> f32[3,8]) + a false attribute "
    "(slice.1 {[6:8],[0:8]} -> {[5:8],[0:8]}, concatenate.1 f32[10,8] -> f32[11,8]): the halo that follows "
    "from the kernel width inside the shard_map body is not folded into parameter_shape"
)
# diff B A: the verdict only (the kinds of the reverse direction are the mirror ones).
WRONG_REVERSE = {name: WRONG[name] for name in ("shard_map_axis_renamed", "single_device_shardings_explicit")}


@pytest.mark.parametrize("name", wild_pairs.params(PAIRS, WRONG))
def test_verdict_and_cause_kinds(name: str) -> None:
    wild_pairs.check_verdict_and_kinds(WILD, PAIRS[name])


@pytest.mark.parametrize("name", wild_pairs.params(PAIRS, WRONG_REVERSE))
def test_reverse_verdict(name: str) -> None:
    wild_pairs.check_reverse_verdict(WILD, PAIRS[name])


def test_manifest_is_well_formed() -> None:
    wild_pairs.check_manifest(PAIRS)
    forms = [p["form"] for p in PAIRS.values()]
    assert forms.count("compiled") >= len(forms) // 3


def test_fixture_stays_small() -> None:
    wild_pairs.check_size(WILD, PAIRS)
