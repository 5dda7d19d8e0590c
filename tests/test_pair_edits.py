"""`Comparison.pair_left` / `.pair_right` as the core's `EditedPairs` (rust/src/diagnose/pair_edits.rs):
a dictionary copy of the matcher's pairs, edited, answers as the dictionary does after the same
edits (items, order, lookups, `pop` with and without a default), and the compiled walks read
it as they read the dictionary."""

from __future__ import annotations

import functools
from collections.abc import MutableMapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURE_PAIRS, pair_spec
from tests.test_canon_map import _copy, _same
from xlagraph.canonical import CanonicalComputation

_core = pytest.importorskip("xlagraph._core")


@functools.cache
def _matchings() -> tuple[tuple[str, CanonicalComputation, CanonicalComputation, object], ...]:
    """(where, left, right, matching) of fixture pairs whose matching is the core's `PairMap`s."""
    from xlagraph.diff import diff_files

    found = []
    for a, b in FIXTURE_PAIRS[::3]:
        result = diff_files(pair_spec(a), pair_spec(b))
        for pair in result.pairs:
            m = pair.matching
            if m is not None and isinstance(m.left, _core.PairMap) and len(m.left) > 2:
                lc, rc = result.left.computations[pair.left], result.right.computations[pair.right]
                found.append((f"{a} {pair.left}", lc, rc, m))
    return tuple(found)


def test_there_are_matchings_to_edit() -> None:
    assert len(_matchings()) > 10


def test_edited_pairs_start_as_the_pairs() -> None:
    for where, _, _, m in _matchings():
        for side in (m.left, m.right):
            edited = _core.edited_pairs(side)
            assert isinstance(edited, MutableMapping), where
            _same(edited, dict(side), where)
        assert _core.edited_pairs(m.matcher) is None, where  # its values are not names


_OPS = ("pop", "pop_default", "pop_missing", "set", "set_again", "del", "del_missing")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_edits_answer_as_a_dictionarys(data: st.DataObject) -> None:
    where, left, right, m = data.draw(st.sampled_from(_matchings()))
    flip = data.draw(st.booleans())
    side, keyed, valued = (m.right, right, left) if flip else (m.left, left, right)
    keys, values = list(keyed.order), list(valued.order)
    edited, ref = _core.edited_pairs(side), dict(side)
    for _ in range(data.draw(st.integers(1, 12))):
        op = data.draw(st.sampled_from(_OPS))
        key = _copy(data.draw(st.sampled_from(list(ref) or keys)))
        if op == "pop":
            if key in ref:
                assert edited.pop(key) == ref.pop(key), where
            else:
                with pytest.raises(KeyError):
                    edited.pop(key)
        elif op == "pop_default":
            default = data.draw(st.sampled_from([None, (), "x"]))
            assert edited.pop(key, default) == ref.pop(key, default), where
        elif op == "pop_missing":
            assert edited.pop("not-a-name", ()) == () and edited.pop(7, None) is None, where
            with pytest.raises(KeyError):
                edited.pop("not-a-name")
        elif op in ("set", "set_again"):
            if op == "set":
                key = _copy(data.draw(st.sampled_from(keys)))
            value = _copy(data.draw(st.sampled_from(values)))
            edited[key] = value
            ref[key] = value
        elif op == "del":
            if key in ref:
                del edited[key]
                del ref[key]
        else:
            with pytest.raises(KeyError):
                del edited["not-a-name"]
        _same(edited, ref, f"{where} after {op}")


def test_only_names_of_the_two_computations_are_stored() -> None:
    where, left, right, m = _matchings()[0]
    edited = _core.edited_pairs(m.left)
    before = dict(edited)
    for key, value in (("not-a-name", right.order[0]), (left.order[0], "not-a-name"), (1, 2)):
        with pytest.raises(KeyError):
            edited[key] = value
    assert dict(edited) == before, where


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_compiled_walks_read_edits_as_dictionaries(data: st.DataObject) -> None:
    """`unexplained` and `matched_walk` give the same answers over edited pairs as over the
    dictionaries edited the same way."""
    where, left, right, m = data.draw(st.sampled_from(_matchings()))
    el, er = _core.edited_pairs(m.left), _core.edited_pairs(m.right)
    dl, dr = dict(m.left), dict(m.right)
    for _ in range(data.draw(st.integers(0, 6))):
        a = data.draw(st.sampled_from(left.order))
        b = data.draw(st.sampled_from(right.order))
        for pl, pr in ((el, er), (dl, dr)):  # `_repair`'s edit: `a` is now paired with `b`
            if (y0 := pl.pop(a, None)) is not None:
                pr.pop(y0, None)
            if (x0 := pr.pop(b, None)) is not None:
                pl.pop(x0, None)
            pl[a], pr[b] = b, a
    explained = set(data.draw(st.lists(st.sampled_from(left.order), max_size=5)))
    got = _core.unexplained(left.core, right.core, el, er, explained, set())
    want = _core.unexplained(left.core, right.core, dl, dr, explained, set())
    assert got is not None and got == want, where

    def agree(a: str, b: str) -> bool:
        return len(a) % 2 == len(b) % 2  # any answer: both calls ask the same questions

    def follows(sa: str, sb: str) -> bool:
        return False

    modes = (data.draw(st.booleans()), data.draw(st.booleans()))  # has_dtype, regrouped
    got = _core.matched_walk(left.core, right.core, el, agree, follows, *modes)
    want = _core.matched_walk(left.core, right.core, dl, agree, follows, *modes)
    assert got is not None and got == want, where
