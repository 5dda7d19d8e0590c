"""Graphs that take turns under torch.compile and torch_xla.compile are paired by their place in the
step (issue 37), on real torch_xla 2.9 captures: fixtures/torch_xla/compiled_turns, made by its
generate.py under XLAGRAPH_CAPTURE on the CPU device.

* aux_loss_alternate: torch.compile(backend="openxla"), an auxiliary loss under `if with_aux:` in
  the compiled forward on every other step: the forward (B, F), its backward (D, G) and the update
  (E, H) take turns; the bridge's input sync (A) runs at the forward's frame every step;
* round_robin_heads: torch.compile, two task heads of other widths by turns (`task = step % 2`):
  (B, F), (D, G), (I, J);
* accumulate_xla_compile: torch_xla.compile, the optimizer on every second call: the step (B, D)
  takes turns, after the sync of the batch made before each call (A) from the same call.

The previous sync at a call site is there another program of the same step; each graph must be
paired with the one that held its place in the step before, and the steady-state line (text, JSON,
`check`) must name those turns, their cause kind and line.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import script_line
from xlagraph.render.report_json import check_to_json, report_to_json
from xlagraph.render.report_text import render_check_text, render_report_text
from xlagraph.report import build_report, check_run, load_runs
from xlagraph.report.model import RunReport
from xlagraph.runlog import RunLog

HERE = "fixtures/torch_xla/compiled_turns"
# name: (the pairs that take turns (against, variant), the first cause kind, the line it names)
TRUTH = {
    "aux_loss_alternate": (
        (("B", "F"), ("D", "G"), ("E", "H")),
        "conditional_work",
        script_line(f"{HERE}/aux_loss_alternate.py", "if with_aux:"),
    ),
    "round_robin_heads": (
        (("B", "F"), ("D", "G"), ("I", "J")),
        "parameter_shape",
        script_line(f"{HERE}/round_robin_heads.py", "        task = step % 2"),
    ),
    "accumulate_xla_compile": (
        (("B", "D"),),
        "conditional_work",
        script_line(f"{HERE}/accumulate_xla_compile.py", "        update = step % 2 == 1"),
    ),
}


@cache
def _log(name: str) -> RunLog:
    folder = FIXTURES / "torch_xla" / "compiled_turns" / f"{name}_capture"
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/compiled_turns/generate.py")
    (log,) = load_runs(str(folder))
    return log


@cache
def _report(name: str) -> RunReport:
    return build_report(_log(name))


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_each_graph_is_paired_with_the_one_that_held_its_place(name: str) -> None:
    report = _report(name)
    turns = report.steady_turns
    assert turns is not None and not report.steady_each_step, report.steady_variants
    assert tuple((t.against, t.variant) for t in turns.turns) == TRUTH[name][0], turns.turns
    # Alternatives, never two programs of one step.
    steady = [e for e in report.timeline if e.phase == "steady"]
    for t in turns.turns:
        steps = ({e.step for e in steady if e.variant == v} for v in (t.variant, t.against))
        assert not set.intersection(*steps), t


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_the_turns_name_the_cause_and_its_line(name: str) -> None:
    turns = _report(name).steady_turns
    assert turns is not None
    _, kind, line = TRUTH[name]
    assert turns.kinds[0] == kind and turns.line == line, (turns.kinds, turns.line)


def test_a_program_at_its_place_every_step_takes_no_turn() -> None:
    """The bridge's input sync and torch_xla.compile's sync of pending work run at the compiled
    call's frame before the graphs that take turns there: not one of them."""
    for name in TRUTH:
        report = _report(name)
        assert report.steady_turns is not None and "A" not in report.steady_turns.variants


def test_text_json_and_check_say_which_graphs_take_turns() -> None:
    report = _report("aux_loss_alternate")
    turns = report.steady_turns
    assert turns is not None
    said = (
        f"steady state from step 2: 8 graphs, 6 of them take turns (B, F, D, G, E, H): work that runs on "
        f"some steps only at {turns.line} ({', '.join(turns.kinds)})"
    )
    assert said in " ".join(render_report_text((report,)).split())
    assert report_to_json((report,))["steady_turns"]["variants"] == ["B", "F", "D", "G", "E", "H"]
    result = check_run(_log("aux_loss_alternate"), max_graphs=0, after_step=0)
    assert not result.passed  # F, G, H compiled at step 1
    assert result.steady_turns == turns
    assert said in " ".join(render_check_text((result,)).split())
    (process,) = check_to_json((result,))["processes"]
    assert [t["against"] for t in process["steady_turns"]["turns"]] == ["B", "D", "E"]


def test_a_torch_xla_compile_step_names_its_turns_alone() -> None:
    report = _report("accumulate_xla_compile")
    text = " ".join(render_report_text((report,)).split())
    line = TRUTH["accumulate_xla_compile"][2]
    assert (
        f"steady state from step 4: 3 graphs, 2 of them take turns (B, D): work that runs on some steps "
        f"only at {line} (conditional_work)"
    ) in text, text[:800]


def test_html_says_which_graphs_take_turns() -> None:
    from xlagraph.render.html_report import render_report_html

    page = render_report_html((_report("round_robin_heads"),))
    assert "8 graphs, 6 of them (B, F, D, G, I, J) take turns, inputs of other shapes at <code>" in page
