"""JAX programs nobody here tuned for (fixtures/jax/wild, made by its generate.py): the verdict and the
cause kinds written down from what the two programs differ in, before the engine was run on them.

Never a wrong `identical` above all. Pairs the engine still gets wrong are strict xfails whose reason
says exactly what it answers, so they turn into failures the day they are fixed.
"""

from __future__ import annotations

import pytest

from tests import wild_pairs
from tests.conftest import FIXTURES, load_manifest

WILD = FIXTURES / "jax" / "wild"
PAIRS = load_manifest("jax/wild")["pairs"]

# Every pair right. compiled_elided_constant (one baked-in element differs, printed {...} in both)
# says `undetermined`, never identical.
WRONG: dict[str, str] = {}
WRONG_REVERSE: dict[str, str] = {}


@pytest.mark.parametrize("name", wild_pairs.params(PAIRS, WRONG))
def test_verdict_and_cause_kinds(name: str) -> None:
    wild_pairs.check_verdict_and_kinds(WILD, PAIRS[name])


@pytest.mark.parametrize("name", wild_pairs.params(PAIRS, WRONG_REVERSE))
def test_reverse_verdict(name: str) -> None:
    wild_pairs.check_reverse_verdict(WILD, PAIRS[name])


def test_manifest_is_well_formed() -> None:
    wild_pairs.check_manifest(PAIRS)


def test_fixture_stays_small() -> None:
    wild_pairs.check_size(WILD, PAIRS)
