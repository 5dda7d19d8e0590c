"""JAX programs nobody here tuned for, second batch (fixtures/jax/wild2, made by its generate.py): the
verdict and the cause kinds written down from what the two programs differ in, before the engine was
run on them.

Never a wrong `identical` above all. Pairs the engine still gets wrong are strict xfails whose reason
says exactly what it answers, so they turn into failures the day they are fixed.
"""

from __future__ import annotations

import pytest

from tests import wild_pairs
from tests.conftest import FIXTURES, load_manifest

WILD = FIXTURES / "jax" / "wild2"
PAIRS = load_manifest("jax/wild2")["pairs"]

# What the engine answers today where it is wrong (diff A B). These are for the lead to fix. A
# `call` and its inlined body (nested_jit_inline, where_vs_select) are one program since issue 37's
# inlining (rust/src/canon/inline.rs).
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
    assert sum(p["form"] == "compiled" for p in PAIRS.values()) >= 3


def test_fixture_stays_small() -> None:
    wild_pairs.check_size(WILD, PAIRS)
