"""The compiled reader votes (rust/src/diagnose/reader_votes.rs, which `pairing.pair_parameters`
asks) give every diff of every fixture pair (tests/data/fixture_pairs.txt) exactly what their
readable reference gives (tests/oracles/reader_votes_reference.py): the same inputs moved, in the
same order, and the same inputs supported."""

from __future__ import annotations

import random

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from tests.corpus_reports import CAPTURES
from tests.oracles.reader_votes_reference import reader_votes_reference
from xlagraph.diagnose import pairing
from xlagraph.diagnose.comparison import Comparison
from xlagraph.diagnose.shapes import shape_of
from xlagraph.diff import diff_files, diff_modules
from xlagraph.match import Matching
from xlagraph.parse.sources import load_module


@pytest.mark.parametrize("batch", range(8))
def test_compiled_votes_are_the_reference_votes(batch: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    asked: list[int] = []

    def both(cmp):  # type: ignore[no-untyped-def]
        got = core(cmp)
        want = reader_votes_reference(cmp)
        assert list(got[0].items()) == list(want[0].items()), (cmp.left.name, cmp.right.name)
        assert got[1] == want[1], (cmp.left.name, cmp.right.name)
        # The dictionaries' path (a matching built of dictionaries) answers the same.
        m = cmp.m
        plain = Matching(dict(m.left), dict(m.right), dict(m.matcher))
        cmp.m = plain
        try:
            assert core(cmp) == got
        finally:
            cmp.m = m
        asked.append(len(want[0]))
        return got

    core = pairing._reader_votes
    monkeypatch.setattr(pairing, "_reader_votes", both)
    for a, b in FIXTURE_PAIRS[batch::8]:
        diff_modules(load_module(pair_spec(a)), load_module(pair_spec(b)))
    assert asked and any(asked)


def _shuffled(m: Matching, seed: int) -> Matching:
    """`m` with a third of its pairs dealt out again at random."""
    rng = random.Random(seed)
    left = dict(m.left)
    names = [a for a in left if rng.random() < 0.3]
    twins = [left[a] for a in names]
    rng.shuffle(twins)
    left.update(zip(names, twins, strict=True))
    return Matching(left, {b: a for a, b in left.items()}, dict(m.matcher))


def _crossed(cmp: Comparison) -> Matching:
    """The matching with inputs of one shape paired across, two by two, each through its first
    reader (paired across too) while their other readers stay: the look-alike halves the votes
    were made for, where a top-down matcher met an input through the other half's reader."""
    m, left, rnum = cmp.m, cmp.left, cmp.right.param_number
    users = cmp.users(left)
    pairs = dict(m.left)
    by_shape: dict[str, list[str]] = {}
    for a in left.param_number:
        if pairs.get(a) in rnum and len(users.get(a, ())) >= 3 and users[a][0] in pairs:
            by_shape.setdefault(shape_of(left, a), []).append(a)
    used: set[str] = set()
    for a1, a2, *_ in (g for g in by_shape.values() if len(g) > 1):
        u1, u2 = users[a1][0], users[a2][0]
        if u1 != u2 and not {u1, u2} & used:
            used |= {u1, u2}
            pairs[a1], pairs[a2], pairs[u1], pairs[u2] = pairs[a2], pairs[a1], pairs[u2], pairs[u1]
    return Matching(pairs, {b: a for a, b in pairs.items()}, dict(m.matcher))


def test_the_moves_are_the_references_where_readers_split(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """No fixture pair has the votes move an input any more (the matcher's look-alike passes pair
    BYOL's two views, tests/test_folded_causes.py, as their readers do): the BYOL run's graphs B
    and C under matchings crossed as a top-down matcher once crossed them, and dealt out again at
    random, hold the moves and the rest."""
    moved: list[str] = []

    def spy(cmp):  # type: ignore[no-untyped-def]
        m = cmp.m
        for other in [_crossed(cmp), *(_shuffled(m, seed) for seed in range(8))]:
            cmp.m = other
            try:
                got, want = core(cmp), reader_votes_reference(cmp)
            finally:
                cmp.m = m
            assert list(got[0].items()) == list(want[0].items()) and got[1] == want[1]
            moved.extend(a for a, b in got[0].items() if other.left.get(a) != b)
        return core(cmp)

    core = pairing._reader_votes
    monkeypatch.setattr(pairing, "_reader_votes", spy)
    hlo = sorted((CAPTURES / "h12_byol_cnn_momentum_cosine" / "hlo").iterdir())
    diff_files(str(hlo[1]), str(hlo[2]))
    assert moved
