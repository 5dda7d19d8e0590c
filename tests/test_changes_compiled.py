"""The compiled comparison steps (rust/src/diagnose/changes.rs: the walk of `matched_changes`, the
unexplained instructions of `regions.structure`) give every diff of every fixture pair
(tests/data/fixture_pairs.txt) exactly the causes, notes and verdict of the Python code."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from xlagraph.diagnose import instructions, regions
from xlagraph.diff import diff_modules
from xlagraph.parse.sources import load_module

if instructions._matched_walk is None or regions._core_unexplained is None:
    pytest.skip("a compiled core without the walk", allow_module_level=True)

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
            # The core declining (None) sends both walks to their Python loops.
            m.setattr(instructions, "_matched_walk", lambda *args: None)
            m.setattr(regions, "_core_unexplained", lambda *args: None)
            want = _answer(ma, mb)
        assert got == want, (a, b)
        compared += ma.format == "hlo" and mb.format == "hlo"
    assert compared
