"""A second batch of real torch_xla parallelism pairs (fixtures/torch_xla/parallel2, traced by torch_xla
2.9 from T5, BART, Mixtral-like MoE, Mistral, Falcon, ViT, BERT ZeRO-1 and Llama with LoRA, sequence and
pipeline parallelism by its generate.py), with what a right diagnosis says written down before xlagraph
was run on them (issue 7).

Per pair, EXPECTED.json gives the verdict (both ways: ``diff b a`` too), the acceptable kinds (every
cause is one of them, one of ``must`` is named), the kinds that would be false, one cause per root
reason, and words of hints that would send the user the wrong way.

Tests marked xfail(strict) are what the engine gets wrong today, with what it says; remove the mark when
the engine is fixed.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from tests import wild_pairs
from tests.conftest import FIXTURES
from xlagraph.diff import DiffResult, diff_files

HERE = FIXTURES / "torch_xla" / "parallel2"
EXPECTED = {
    k: v for k, v in json.loads((HERE / "EXPECTED.json").read_text()).items() if not k.startswith("_")
}
DIFFERENT = [n for n, e in EXPECTED.items() if e["expect"]["verdict"] == "different"]

# (test, pair) -> what the engine says today (first run, before any change).
# Fixed since: mistral_bf16, t5_clip, llama_pp_extra_layer (the new block's all-reduces folded in),
# vit_activation_checkpointing (named from its optimization barrier), bart_dp_averaging (the 1/world scale),
# mistral_gqa_kv (the shape plumbing downstream of the k/v weights), llama_lora_rank (the alpha/r scalar
# that shares another scalar's input at r=8, folded into the resized weights).
XFAIL: dict[tuple[str, str], str] = {}


def _cases(test: str, names: list[str]) -> list[object]:
    return wild_pairs.params(dict.fromkeys(names), {n: r for (t, n), r in XFAIL.items() if t == test})


@cache
def _diff(name: str, reverse: bool = False) -> DiffResult:
    a, b = (str(HERE / EXPECTED[name][s]["file"]) for s in ("a", "b"))
    return diff_files(b, a) if reverse else diff_files(a, b)


def _causes(name: str) -> list[str]:
    return [f"{c.kind.value}: {c.summary[:140]}" for c in _diff(name).differences]


@pytest.mark.parametrize("name", _cases("verdict", list(EXPECTED)))
def test_verdict(name: str) -> None:
    """Above all never a wrong ``identical``; ``identical`` exactly when there is no cause."""
    result = _diff(name)
    assert result.verdict == EXPECTED[name]["expect"]["verdict"], _causes(name)
    assert (result.verdict == "identical") == (not result.differences)


@pytest.mark.parametrize("name", _cases("reverse", list(EXPECTED)))
def test_verdict_both_ways(name: str) -> None:
    assert _diff(name, reverse=True).verdict == EXPECTED[name]["expect"]["verdict"]


@pytest.mark.parametrize("name", _cases("acceptable", DIFFERENT))
def test_every_cause_is_acceptable(name: str) -> None:
    acceptable = set(EXPECTED[name]["expect"]["kinds"])
    assert all(c.kind.value in acceptable for c in _diff(name).differences), _causes(name)


@pytest.mark.parametrize("name", _cases("named", DIFFERENT))
def test_the_cause_is_named(name: str) -> None:
    expect = EXPECTED[name]["expect"]
    must = set(expect["must"] or expect["kinds"])
    assert any(c.kind.value in must for c in _diff(name).differences), _causes(name)


@pytest.mark.parametrize("name", _cases("forbidden", DIFFERENT))
def test_no_false_cause(name: str) -> None:
    forbidden = set(EXPECTED[name]["expect"]["forbidden"])
    assert not any(c.kind.value in forbidden for c in _diff(name).differences), _causes(name)


@pytest.mark.parametrize(
    "name", _cases("one_cause", [n for n in DIFFERENT if EXPECTED[n]["expect"]["one_cause"]])
)
def test_one_cause_per_root_reason(name: str) -> None:
    assert len(_diff(name).differences) == 1, _causes(name)


@pytest.mark.parametrize(
    "name", _cases("hints", [n for n in DIFFERENT if EXPECTED[n]["expect"]["hint_forbidden"]])
)
def test_hints_apply(name: str) -> None:
    """No summary or fix speaks of a pattern that is not there (a ragged batch, bucketing, a Python int)."""
    words = EXPECTED[name]["expect"]["hint_forbidden"]
    wrong = [
        (w, c.kind.value)
        for c in _diff(name).differences
        for w in words
        if w in f"{c.summary} {c.hint}".lower()
    ]
    assert not wrong, wrong


def test_fixtures_stay_small() -> None:
    sizes = [p.stat().st_size for p in HERE.glob("*.hlo")]
    assert len(sizes) == 2 * len(EXPECTED) and max(sizes) < 300_000 and sum(sizes) < 4_200_000


def test_collectives_of_other_tensors_get_no_bucketing_hint() -> None:
    """Activation checkpointing recomputes the forward, so B all-reduces tensors A does not: the
    diagnosis names the checkpointing, and no hint speaks of bucketing (which regroups the same
    tensors)."""
    causes = _diff("vit_activation_checkpointing").causes
    assert [c.kind.value for c in causes] == ["structure"]
    assert "activation checkpointing in B only" in causes[0].summary
    assert all("bucket" not in c.hint for c in causes)


def test_other_tensors_collected_is_no_regrouping() -> None:
    """The test behind the collectives' hint: bucketing moves the same tensors into other
    collectives; a recomputed forward all-reduces other tensors."""
    from xlagraph.canonical import canonicalize
    from xlagraph.diagnose.collectives import collectives, regrouped_only
    from xlagraph.parse.sources import load_module

    def ops(path):  # type: ignore[no-untyped-def]
        return collectives(canonicalize(load_module(str(path))))

    vit = [ops(HERE / f"vit_activation_checkpointing_{s}.hlo") for s in "ab"]
    assert not regrouped_only(*vit)
    bucket = [ops(FIXTURES / "torch_xla" / "fsdp_bucket" / f"{s}.hlo") for s in "ab"]
    assert regrouped_only(*bucket)
