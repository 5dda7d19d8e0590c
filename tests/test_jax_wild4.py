"""The files XLA itself writes under `--xla_dump_to`, fourth batch of JAX pairs (fixtures/jax/wild4, made by
its generate.py): `before_optimizations`, `cpu_after_optimizations` and intermediate pass dumps (after
spmd-partitioning, after shardy-xla) of realistic programs (a transformer step with hand-written AdamW,
a ResNet block with batch norm, a diffusion U-Net step, a KV-cache decode step with RoPE, scan RNNs, MoE,
a sharded MLP, shard_map collectives), large constants elided as `{...}` or printed in full. The verdict
and the cause kinds were written down from what the two programs differ in, before the engine ran on them.

Never a wrong `identical` above all. Pairs the engine still gets wrong are strict xfails whose reason
says exactly what it answers, so they turn into failures the day they are fixed.
"""

from __future__ import annotations

import re

import pytest

from tests import wild_pairs
from tests.conftest import FIXTURES, load_manifest

WILD = FIXTURES / "jax" / "wild4"
PAIRS = load_manifest("jax/wild4")["pairs"]

# What the engine answers today where it is wrong (diff A B). These are for the lead to fix.
WRONG: dict[str, str] = {}
# diff B A: the verdict only.
WRONG_REVERSE: dict[str, str] = {}
# Fixed since the first run: the two byte-identical elided pairs and the two with one side printed in
# full now say `undetermined` (only elided values could differ), never identical nor a false cause;
# moe_experts_4_vs_8 and unet_image_size_before (sizes and a mean's 1/N that follow the new shapes);
# issue 37: tfm_adamw_weight_decay_before, decode_cache_len, shmap_psum_bf16 and tfm_remat_block.

_XLA_NAME = re.compile(
    r"module_\d{4}\.jit_\w+\.(before_optimizations|cpu_after_optimizations|\d{4}\..+)\.txt"
)


@pytest.mark.parametrize("name", wild_pairs.params(PAIRS, WRONG))
def test_verdict_and_cause_kinds(name: str) -> None:
    wild_pairs.check_verdict_and_kinds(WILD, PAIRS[name])


@pytest.mark.parametrize("name", wild_pairs.params(PAIRS, WRONG_REVERSE))
def test_reverse_verdict(name: str) -> None:
    wild_pairs.check_reverse_verdict(WILD, PAIRS[name])


def test_manifest_is_well_formed() -> None:
    assert 25 <= len(PAIRS) <= 40
    verdicts = [p["expected_verdict"] for p in PAIRS.values()]
    assert verdicts.count("identical") >= 5 and verdicts.count("different") >= 20
    stages = [p["stage"] for p in PAIRS.values()]
    assert stages.count("after_optimizations") >= len(stages) // 2
    assert stages.count("before_optimizations") >= 5
    assert sum(s.startswith("pass:") for s in stages) >= 2
    for name, pair in PAIRS.items():
        assert pair["expected_verdict"] in ("identical", "different"), name
        assert set(pair["expected_causes"]) <= wild_pairs.KINDS, name
        assert bool(pair["expected_causes"]) == (pair["expected_verdict"] == "different"), name
        assert pair["description"], name
        for side in ("a", "b"):  # XLA's own file name is kept, and is what the stage says
            xla_file = pair["sides"][side]["xla_file"]
            assert _XLA_NAME.fullmatch(xla_file), (name, xla_file)
            assert pair["stage"].removeprefix("pass:").replace("after_optimizations", "cpu_after") in xla_file


def test_elided_pairs_say_what_a_careful_tool_answers() -> None:
    """Where the dumps cannot show the difference, the manifest says so (and keeps the truth)."""
    for name, pair in PAIRS.items():
        a, b = ((WILD / pair[s]).read_text() for s in ("a", "b"))
        if a == b and pair["expected_verdict"] == "different":
            assert "cannot tell" in pair.get("note", ""), name
            assert "{...}" in a, name


def test_fixture_stays_small() -> None:
    wild_pairs.check_size(WILD, PAIRS)
