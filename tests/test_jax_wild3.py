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
# Fixed since the first run: compiled_gpt_decode_pos_baked, compiled_vit_image_size,
# compiled_bf16_mixed_precision, shard_map_halo_width (changes inside fusions folded into their cause),
# compiled_input_layout_column_major (an input's layout, the copy XLA adds folded in),
# compiled_sharding_constraint_reshard (the partitioner's slicing and shard shapes folded in),
# shard_map_axis_renamed and single_device_shardings_explicit (Shardy's mesh and axis names are
# bound names, a one-device module's shardings none: rust/src/canon/shardy.rs),
# compiled_moe_router_aux_loss (the top_k XLA keeps as a sort once the added loss reads it too, folded
# into output_added: recognizers/shared_work.py).
WRONG: dict[str, str] = {}
# diff B A: the verdict only (the kinds of the reverse direction are the mirror ones).
WRONG_REVERSE: dict[str, str] = {}


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
