"""Graphs that take turns, and the closest baseline (issue 37), on real torch_xla 2.9 captures:
fixtures/torch_xla/turns, made by its generate.py under XLAGRAPH_CAPTURE on the CPU device.

* running_stats_turns: two running statistics of different sizes and rates updated in an order
  that flips every step, made before the loop (A computes them from constants: warm-up state).
  The steady state alternates B, C; C has A's order, so against A it differs only by the warm-up
  state, a smaller diff than B's reordering;
* running_stats_cycle3: three of them in an order that rotates every step: B, C, D in turns.

C must be explained against B, and the report must say why.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import CauseKind
from xlagraph.report import build_report, load_runs
from xlagraph.report.baseline import closest
from xlagraph.report.model import RunReport
from xlagraph.runlog import RunLog

TURNS = FIXTURES / "torch_xla" / "turns"
_ORDER = {str(CauseKind.OUTPUT_PERMUTATION), str(CauseKind.PARAMETER_PERMUTATION)}
_WHY_C = "A differs only by warm-up state, B only by order (the same computation)"


@cache
def _log(name: str) -> RunLog:
    folder = TURNS / f"{name}_capture"
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/turns/generate.py")
    (log,) = load_runs(str(folder))
    return log


@cache
def _report(name: str) -> RunReport:
    return build_report(_log(name))


def test_a_graph_is_explained_against_the_one_it_takes_turns_with() -> None:
    b, c = _report("running_stats_turns").recompiles
    assert b.baseline is not None and b.baseline.variant == "A"
    # Against A, C differs only by the state A computed from constants (smaller than B's
    # reordering): B is C reordered, the same computation, so B is its baseline.
    assert c.baseline is not None and c.baseline.variant == "B", c.baseline
    assert c.baseline.compared == ("B", "A")
    assert c.baseline.why == f"closest of B, A: {_WHY_C}"
    assert not c.expected and set(c.kinds) <= _ORDER and c.kinds, c.kinds
    assert b.baseline.why == "the only earlier graph compared"


def test_each_graph_of_a_cycle_is_explained_against_the_one_before_it() -> None:
    b, c, d = _report("running_stats_cycle3").recompiles
    assert [r.baseline.variant for r in (b, c, d) if r.baseline] == ["A", "B", "C"]
    assert not c.expected and not d.expected


def test_the_screen_keeps_candidates_as_close_as_the_second() -> None:
    # Graphs that take turns are as far from each other by structure (a reordering keeps every
    # `h0`): a third at the second's distance is diffed too, one far off is not.
    assert closest([0, 0, 0, 31]) == [0, 1, 2]
    assert closest([20, 10, 11, 12, 30]) == [1, 2, 3]  # within a tenth of the second
    assert closest([5, 3, 3, 9, 4]) == [1, 2]
    assert closest([7, 2]) == [0, 1]


def test_state_made_mid_run_is_warmed_up_against_the_graph_that_made_it() -> None:
    # A corpus run (held_out_11) that unfreezes a layer at step 4 (graph C: new AdamW state) and
    # warms that state up at step 5 (D): D differs from C only by warm-up state and from B by
    # more than that, and no candidate is D reordered, so C stays its baseline (expected).
    (log,) = load_runs(str(FIXTURES / "torch_xla" / "corpus" / "captures" / "h11_ernie45_unfreeze_top_layer"))
    d = build_report(log).recompiles[-1]
    assert (d.variant, d.step, d.kinds, d.expected) == ("D", 5, ("state_init",), True)
    assert d.baseline is not None and d.baseline.variant == "C" and d.baseline.compared == ("C", "B")
