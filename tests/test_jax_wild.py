"""JAX programs nobody here tuned for (fixtures/jax/wild, made by its generate.py): the verdict and the
cause kinds written down from what the two programs differ in, before the engine was run on them.

Never a wrong `identical` above all. Pairs the engine still gets wrong are strict xfails whose reason
says exactly what it answers, so they turn into failures the day they are fixed.
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, load_manifest
from xlagraph.diff import diff_files

WILD = FIXTURES / "jax" / "wild"
PAIRS = load_manifest("jax/wild")["pairs"]

# The cause vocabulary of README.md ("Causes").
KINDS = {
    "output_added", "output_removed", "output_permutation", "parameter_permutation", "parameter_shape",
    "parameter_added", "parameter_removed", "constant_value", "attribute", "collective", "sharding",
    "graph_break", "dynamic_shape", "conditional_work", "state_init", "dtype", "layout", "dead_code",
    "structure",
}  # fmt: skip

# What the engine answers today where it is wrong (diff A B). These are for the lead to fix.
WRONG = {
    "compiled_elided_constant": "says identical (a note: the f32[16] constant printed {...} in both was "
    "compared by shape only): two programs that differ in one baked-in element",
}
# diff B A: the verdict only (the kinds of the reverse direction are the mirror ones).
WRONG_REVERSE = {"compiled_elided_constant": WRONG["compiled_elided_constant"]}


def _params(wrong: dict[str, str]) -> list:  # type: ignore[type-arg]
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=wrong[name]))
        if name in wrong
        else name
        for name in sorted(PAIRS)
    ]


def _files(name: str) -> tuple[str, str]:
    return str(WILD / PAIRS[name]["a"]), str(WILD / PAIRS[name]["b"])


@pytest.mark.parametrize("name", _params(WRONG))
def test_verdict_and_cause_kinds(name: str) -> None:
    pair = PAIRS[name]
    result = diff_files(*_files(name))
    kinds = {c.kind.value for c in result.differences}
    assert result.verdict == pair["expected_verdict"], (result.verdict, sorted(kinds))
    assert kinds <= set(pair["expected_causes"]), sorted(kinds)
    assert bool(kinds) == (pair["expected_verdict"] == "different")


@pytest.mark.parametrize("name", _params(WRONG_REVERSE))
def test_reverse_verdict(name: str) -> None:
    a, b = _files(name)
    assert diff_files(b, a).verdict == PAIRS[name]["expected_verdict"]


def test_manifest_is_well_formed() -> None:
    assert 25 <= len(PAIRS) <= 40
    verdicts = [p["expected_verdict"] for p in PAIRS.values()]
    assert verdicts.count("identical") >= 5 and verdicts.count("different") >= 20
    for name, pair in PAIRS.items():
        assert pair["expected_verdict"] in ("identical", "different"), name
        assert set(pair["expected_causes"]) <= KINDS, name
        assert bool(pair["expected_causes"]) == (pair["expected_verdict"] == "different"), name
        assert pair["description"] and pair["form"] in ("lowered", "compiled"), name


def test_fixture_stays_small() -> None:
    sizes = [f.stat().st_size for f in WILD.glob("*/*.hlo")]
    assert len(sizes) == 2 * len(PAIRS)
    assert max(sizes) < 200_000 and sum(sizes) < 3_000_000
