"""A third batch of real torch_xla pairs (fixtures/torch_xla/parallel3, made by its generate.py): tiny
``transformers`` models (GPT-2, Llama, BERT, T5, ViT) trained the way users write the loop and dumped
through every channel users post them from when a step recompiles (issue 7): ``XLA_SAVE_TENSORS_FILE``
in hlo format (several graphs per file, ``#K``), ``--xla_dump_to`` before and after optimizations, SPMD on
4 virtual devices before and after partitioning, and the lazy IR of ``_get_xla_tensors_text``.

Per pair, EXPECTED.json gives the verdict (also of ``diff b a``), the acceptable kinds (every cause is one
of them, one of ``must`` is named) and the kinds that would be false, written down from what the two
programs differ in before xlagraph was run on them. Tests marked xfail(strict) are what the engine gets
wrong today, with what it says; remove the mark when the engine is fixed.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from tests import wild_pairs
from tests.conftest import FIXTURES
from xlagraph.diff import DiffResult, diff_files

HERE = FIXTURES / "torch_xla" / "parallel3"
EXPECTED = {
    k: v for k, v in json.loads((HERE / "EXPECTED.json").read_text()).items() if not k.startswith("_")
}
DIFFERENT = [n for n, e in EXPECTED.items() if e["expect"]["verdict"] == "different"]

# Pairs whose two texts cannot show the difference (an elided constant): `note` says what a careful tool
# answers; `undetermined` is right there, a plain `identical` is not.
ELIDED = {n for n, e in EXPECTED.items() if e["expect"].get("note")}

# (test, pair) -> what the engine says today. Fixed since the first run: ir_gpt2_position_offset
# (`undetermined`: lazy IR prints no constant value), save_gpt2_clip and ir_t5_clip (clipping's norm
# and capped coefficient returned through the updated weights: conditional_work).
XFAIL: dict[tuple[str, str], str] = {}


def _cases(test: str, names: list[str]) -> list[object]:
    return wild_pairs.params(dict.fromkeys(names), {n: r for (t, n), r in XFAIL.items() if t == test})


def _source(name: str, side: str) -> str:
    entry = EXPECTED[name][side]
    return f"{HERE / entry['file']}{entry['graph']}"


@cache
def _diff(name: str, reverse: bool = False) -> DiffResult:
    a, b = _source(name, "a"), _source(name, "b")
    return diff_files(b, a) if reverse else diff_files(a, b)


def _causes(name: str) -> list[str]:
    return [f"{c.kind.value}: {c.summary[:140]}" for c in _diff(name).differences]


# A constant the text prints no value for: `{...}` in HLO, any non-scalar `prim::Constant()` in lazy IR.
_UNPRINTED = re.compile(r"\{\.\.\.\}|= [a-z0-9]+\[\d[\d,]*\]\S* prim::Constant\(\)")


def _unprinted(name: str) -> bool:
    """Read from the files, not from the engine: some value is not in the text."""
    return any(_UNPRINTED.search(Path(_source(name, side).split("#")[0]).read_text()) for side in "ab")


def _right_verdict(name: str, verdict: str) -> bool:
    """The expected verdict; `undetermined` where the author noted that the text cannot show the
    difference, or for the same program whose text leaves some value unprinted (no false claim)."""
    expected = EXPECTED[name]["expect"]["verdict"]
    if verdict == expected:
        return True
    return verdict == "undetermined" and (name in ELIDED or (expected == "identical" and _unprinted(name)))


@pytest.mark.parametrize("name", _cases("verdict", list(EXPECTED)))
def test_verdict(name: str) -> None:
    """Above all never a wrong ``identical``; ``identical`` exactly when there is no cause."""
    result = _diff(name)
    assert _right_verdict(name, result.verdict), (result.verdict, _causes(name))
    assert result.verdict != "identical" or not result.differences
    assert result.verdict != "different" or result.differences


@pytest.mark.parametrize("name", _cases("reverse", list(EXPECTED)))
def test_verdict_both_ways(name: str) -> None:
    assert _right_verdict(name, _diff(name, reverse=True).verdict)


@pytest.mark.parametrize("name", _cases("acceptable", DIFFERENT))
def test_every_cause_is_acceptable(name: str) -> None:
    acceptable = set(EXPECTED[name]["expect"]["kinds"])
    assert all(c.kind.value in acceptable for c in _diff(name).differences), _causes(name)


@pytest.mark.parametrize("name", _cases("named", DIFFERENT))
def test_the_cause_is_named(name: str) -> None:
    expect = EXPECTED[name]["expect"]
    if name in ELIDED and _diff(name).verdict == "undetermined":
        return  # the text does not show the value: no cause can be named from it
    must = set(expect.get("must") or expect["kinds"])
    assert any(c.kind.value in must for c in _diff(name).differences), _causes(name)


@pytest.mark.parametrize("name", _cases("forbidden", DIFFERENT))
def test_no_false_cause(name: str) -> None:
    forbidden = set(EXPECTED[name]["expect"]["forbidden"])
    assert not any(c.kind.value in forbidden for c in _diff(name).differences), _causes(name)


def test_manifest_uses_the_readme_vocabulary() -> None:
    for name, entry in EXPECTED.items():
        expect = entry["expect"]
        kinds = {*expect.get("kinds", ()), *expect.get("must", ()), *expect.get("forbidden", ())}
        assert kinds <= wild_pairs.KINDS, (name, kinds - wild_pairs.KINDS)


def test_fixtures_stay_small() -> None:
    files = [p for p in HERE.iterdir() if p.name.endswith((".hlo.0", ".txt", ".ir"))]
    sizes = [p.stat().st_size for p in files]
    assert len(files) == 2 * len(EXPECTED) and max(sizes) < 300_000 and sum(sizes) < 4_200_000
