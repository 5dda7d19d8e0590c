"""The compiled comparison steps (rust/src/diagnose/changes.rs: the walk of `matched_changes`, the
unexplained instructions of `regions.structure`) give every diff of every fixture pair
(tests/data/fixture_pairs.txt) exactly the causes, notes and verdict of their readable references
(tests/oracles/changes_reference.py), the walk's two rare modes (a `dtype` cause already found,
collectives regrouped) included."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from tests.oracles.changes_reference import matched_changes_reference, unexplained_reference
from xlagraph.diagnose import instructions, raw_causes, regions
from xlagraph.diff import diff_modules
from xlagraph.parse.sources import load_module

PAIRS = FIXTURE_PAIRS


_spec = pair_spec


def _answer(a, b):  # type: ignore[no-untyped-def]
    result = diff_modules(a, b)
    return result.verdict, result.causes, result.notes, result.unseen


@pytest.mark.parametrize("batch", range(8))
def test_compiled_steps_answer_what_the_python_code_answers(batch: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    compared = 0
    for a, b in PAIRS[batch::8]:
        ma, mb = load_module(_spec(a)), load_module(_spec(b))
        got = _answer(ma, mb)
        with monkeypatch.context() as m:
            m.setattr(raw_causes, "matched_changes", matched_changes_reference)
            m.setattr(regions, "_unexplained", unexplained_reference)
            want = _answer(ma, mb)
        assert got == want, (a, b)
        compared += ma.format == "hlo" and mb.format == "hlo"
    assert compared


def test_the_rare_modes_are_met(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Fixture pairs reach both modes the walk once left to Python: pairs absorbed into a dtype
    cause and into regrouped collectives (or the test above would not hold them)."""
    kinds: set[int] = set()

    def walk(*args):  # type: ignore[no-untyped-def]
        found = walk_core(*args)
        kinds.update(kind for kind, *_ in found[0])
        return found

    walk_core = instructions._matched_walk
    monkeypatch.setattr(instructions, "_matched_walk", walk)
    for a, b in PAIRS:
        diff_modules(load_module(_spec(a)), load_module(_spec(b)))
        if {instructions._DTYPE, instructions._COLLECTIVE} <= kinds:
            return
    pytest.fail(f"event kinds met: {sorted(kinds)}")
