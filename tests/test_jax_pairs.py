"""Every real JAX pair (fixtures/jax, produced by its generate.py) gives the verdict and exactly
the causes its manifest names."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, load_manifest
from xlagraph.diff import diff_files

PAIRS = load_manifest("jax")["pairs"]
# Where issue 7 says the manifest's old answer was wrong: a parameter sharding change and the
# all-reduce over other replica groups that follows from it are one root reason, `sharding`.
CORRECTED = {"collective_regroup_compiled": ["sharding"]}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_pair(name: str) -> None:
    pair = PAIRS[name]
    result = diff_files(str(FIXTURES / "jax" / pair["a"]), str(FIXTURES / "jax" / pair["b"]))
    assert result.verdict == pair["expected_verdict"]
    expected = sorted(CORRECTED.get(name, pair["expected_causes"]))
    assert sorted({c.kind.value for c in result.differences}) == expected


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_pair_is_symmetric_in_verdict(name: str) -> None:
    pair = PAIRS[name]
    result = diff_files(str(FIXTURES / "jax" / pair["b"]), str(FIXTURES / "jax" / pair["a"]))
    assert result.verdict == pair["expected_verdict"]


def test_permutation_mapping_is_reported() -> None:
    pair = PAIRS["param_permutation"]
    result = diff_files(str(FIXTURES / "jax" / pair["a"]), str(FIXTURES / "jax" / pair["b"]))
    (cause,) = result.differences
    assert {(m.left, m.right) for m in cause.mapping} == {(0, 1), (1, 0)}


def test_constant_cause_names_values_and_source_line() -> None:
    pair = PAIRS["constant_change"]
    result = diff_files(str(FIXTURES / "jax" / pair["a"]), str(FIXTURES / "jax" / pair["b"]))
    (cause,) = result.differences
    (change,) = cause.changes
    assert change.old.endswith(" 2") and change.new.endswith(" 3")
    assert cause.sources and all(":" in s for s in cause.sources)
    assert "generate.py" in cause.sources[0]
