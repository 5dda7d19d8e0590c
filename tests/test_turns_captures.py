"""Graphs that take turns, and the closest baseline (issue 37), on real torch_xla 2.9 captures:
fixtures/torch_xla/turns, made by its generate.py under XLAGRAPH_CAPTURE on the CPU device.

* running_stats_turns: two running statistics of different sizes and rates updated in an order
  that flips every step, made before the loop (A computes them from constants: warm-up state).
  The steady state alternates B, C; C has A's order, so against A it differs only by the warm-up
  state, a smaller diff than B's reordering;
* running_stats_cycle3: three of them in an order that rotates every step: B, C, D in turns.

C must be explained against B, the report must say why, and the steady-state line (text, JSON,
HTML, `check`) must carry what the graphs taking turns differ in and where.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import CauseKind
from xlagraph.render.html_report import render_report_html
from xlagraph.render.report_json import check_to_json, report_to_json
from xlagraph.render.report_text import render_check_text, render_report_text
from xlagraph.report import build_report, check_run, load_runs
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


def _swapped_lines(name: str) -> set[str]:
    """`file:line` of the statements the script runs in another order (from its `# CAUSE` line
    to the sync)."""
    path = TURNS / f"{name}.py"
    lines = path.read_text().splitlines()
    start = next(n for n, text in enumerate(lines, 1) if "# CAUSE" in text)
    end = next(n for n, text in enumerate(lines, 1) if n > start and "torch_xla.sync()" in text)
    return {f"fixtures/torch_xla/turns/{name}.py:{n}" for n in range(start, end)}


def test_the_loop_settles_into_graphs_taking_turns() -> None:
    two, three = _report("running_stats_turns"), _report("running_stats_cycle3")
    assert [e.variant for e in two.timeline] == ["A", "B", "C", "B", "C", "B", "C"]
    assert (two.steady_from_step, two.steady_variants, two.steady_each_step) == (3, ("B", "C"), False)
    assert [e.variant for e in three.timeline] == ["A", "B", "C", "D"] + ["B", "C", "D"] * 2
    assert three.steady_variants == ("B", "C", "D")


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


def test_the_steady_turns_carry_the_diff_of_the_two_graphs_and_its_line() -> None:
    report = _report("running_stats_turns")
    turns = report.steady_turns
    assert turns is not None
    (turn,) = turns.turns  # B, C, B, C: one pair, the later compiled against the earlier
    assert (turn.variant, turn.against) == ("C", "B")
    c = report.recompiles[1]
    # Whatever the diff of the two variants names, the steady state carries it, and its line.
    assert turns.kinds == turn.kinds == c.kinds
    assert turns.line == c.lines[0] and turns.line in _swapped_lines("running_stats_turns")
    assert turns.variants == ("B", "C")


def test_the_steady_turns_name_the_reordering() -> None:
    turns = _report("running_stats_turns").steady_turns
    assert turns is not None
    assert turns.kinds and set(turns.kinds) <= _ORDER, turns.kinds
    assert turns.phrase == "the same updates in another order"


def test_a_cycle_of_three_is_explained_turn_by_turn() -> None:
    turns = _report("running_stats_cycle3").steady_turns
    assert turns is not None and turns.variants == ("B", "C", "D")
    assert [(t.variant, t.against) for t in turns.turns] == [("C", "B"), ("D", "C"), ("B", "D")]
    swapped = _swapped_lines("running_stats_cycle3")
    for t in turns.turns:  # B after D is a diff of its own: B's baseline is A
        assert t.kinds and set(t.kinds) <= _ORDER and t.lines[0] in swapped, t
    assert turns.phrase == "the same updates in another order"


def test_text_says_what_the_graphs_taking_turns_differ_in() -> None:
    report = _report("running_stats_turns")
    text = " ".join(render_report_text((report,)).split())  # unwrapped
    turns = report.steady_turns
    assert turns is not None
    expected = (
        f"steady state from step 3: 2 graphs take turns (B, C): the same updates in another order "
        f"at {turns.line} ({', '.join(turns.kinds)})"
    )
    assert expected in text, text[:600]
    assert f"vs B (sync 1, same call site; closest of B, A: {_WHY_C})" in text
    three = " ".join(render_report_text((_report("running_stats_cycle3"),)).split())
    assert "turns C after B: " in three and "; B after D: " in three


def test_json_carries_the_turns_and_why_the_baseline() -> None:
    report = _report("running_stats_turns")
    data = report_to_json((report,))
    turns = data["steady_turns"]
    assert turns["variants"] == ["B", "C"] and turns["phrase"] == "the same updates in another order"
    assert (
        turns["kinds"] == list(report.recompiles[1].kinds) and turns["line"] == report.recompiles[1].lines[0]
    )
    assert [(t["variant"], t["against"]) for t in turns["turns"]] == [("C", "B")]
    c = next(r for r in data["recompiles"] if r["variant"] == "C")
    assert c["baseline"]["variant"] == "B" and c["baseline"]["compared"] == ["B", "A"]
    assert c["baseline"]["why"] == f"closest of B, A: {_WHY_C}"
    assert data["processes"][0]["steady_turns"] == turns


def test_html_shows_the_turns_and_why_the_baseline() -> None:
    report = _report("running_stats_cycle3")
    page = render_report_html((report,))
    assert "3 graphs take turns, the same updates in another order at <code>" in page
    assert "C after B: " in page and "B after D: " in page
    assert "closest of C, B: as close as B, and the most recent" in page


def test_check_carries_the_turns() -> None:
    log = _log("running_stats_turns")
    result = check_run(log, max_graphs=1, after_step=0)
    assert not result.passed
    turns = result.steady_turns
    assert turns is not None and turns == _report("running_stats_turns").steady_turns
    text = render_check_text((result,))
    assert (
        f"steady state from step 3: 2 graphs take turns (B, C): the same updates in another order at "
        f"{turns.line} ({', '.join(turns.kinds)})"
    ) in text
    (process,) = check_to_json((result,))["processes"]
    assert process["steady_turns"]["turns"][0]["against"] == "B"


def test_a_report_that_compares_nothing_says_nothing_of_the_turns() -> None:
    assert build_report(_log("running_stats_turns"), explain=False).steady_turns is None


def test_the_screen_keeps_a_third_candidate_as_close_as_the_second() -> None:
    # Graphs that take turns are as far from each other by structure (a reordering keeps every
    # `h0`): a third at the second's distance is diffed too, one far off is not, and no fourth
    # (a run whose variants all tie would diff every candidate of every recompile).
    assert closest([0, 0, 0, 31], 200) == [0, 1, 2]
    assert closest([20, 10, 11, 12, 30], 200) == [1, 2, 3]  # within a tenth of the second
    assert closest([9, 10, 10, 10, 10], 200) == [0, 1, 2]  # ties: the most recent
    assert closest([5, 3, 3, 9, 4], 200) == [1, 2]
    assert closest([7, 2], 200) == [0, 1]
    # Where the second shares little with this graph (a shape that reaches every instruction),
    # a tie tells nothing the two diffs do not.
    assert closest([120, 120, 120, 120], 100) == [0, 1]


def test_state_made_mid_run_is_warmed_up_against_the_graph_that_made_it() -> None:
    # A corpus run (held_out_11) that unfreezes a layer at step 4 (graph C: new AdamW state) and
    # warms that state up at step 5 (D): D differs from C only by warm-up state and from B by
    # more than that, and no candidate is D reordered, so C stays its baseline (expected).
    (log,) = load_runs(str(FIXTURES / "torch_xla" / "corpus" / "captures" / "h11_ernie45_unfreeze_top_layer"))
    d = build_report(log).recompiles[-1]
    assert (d.variant, d.step, d.kinds, d.expected) == ("D", 5, ("state_init",), True)
    assert d.baseline is not None and d.baseline.variant == "C" and d.baseline.compared == ("C", "B")
