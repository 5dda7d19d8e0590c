"""The compiled matcher (`xlagraph.match.match`) pairs exactly what the Python reference
(`tests/oracles/match_reference.py`) pairs, in the same order and with the same phase names, on
every computation the diff of every fixture pair matches (tests/data/fixture_pairs.txt: the pairs
the tests diff)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from tests.oracles import phases
from tests.oracles.match_reference import PHASES, match_reference
from xlagraph.diff import diff_files
from xlagraph.match import match

PAIRS = FIXTURE_PAIRS


_spec = pair_spec


def test_every_fixture_pair_is_listed() -> None:
    assert len(PAIRS) > 400


def test_the_reference_has_every_phase_the_core_runs() -> None:
    assert set(phases()) == set(PHASES)
    assert phases()[:4] == ("outputs-exact", "outputs-context", "outputs-anchored", "outputs-balanced")


@pytest.mark.parametrize("batch", range(8))
def test_compiled_matcher_pairs_what_the_reference_pairs(batch: int) -> None:
    compared = 0
    for a, b in PAIRS[batch::8]:
        result = diff_files(_spec(a), _spec(b))
        for pair in result.pairs:
            if pair.matching is None:
                continue
            left, right = result.left.computations[pair.left], result.right.computations[pair.right]
            want = match_reference(left, right)
            got = match(left, right)
            # Same pairs, same phases, in the same order (later stages iterate these dicts).
            assert list(got.left.items()) == list(want.left.items()), (a, b, pair.left)
            assert list(got.right.items()) == list(want.right.items()), (a, b, pair.left)
            assert list(got.matcher.items()) == list(want.matcher.items()), (a, b, pair.left)
            compared += 1
    assert compared
