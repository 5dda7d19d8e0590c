"""FSDP collectives issued in another order from step to step (issue 37; pytorch/xla issue 4160),
on real torch_xla 2.9 captures: fixtures/torch_xla/fsdp_turns, made by its generate.py under
XLAGRAPH_CAPTURE on the CPU device.

* routing_turns: nested FSDP with reduce-scatter buckets; two experts called in an order that
  flips every step, so their all-gathers, backward hooks and reduce-scatter buckets run in another
  order on alternate steps. torch_xla chains collectives in issue order: the step takes turns
  between two programs (C, D) whose collectives are the same, in another order;
* routing_fixed: the same loop with one call order (the fix the report prints): one step graph.

The steady-state line (text, JSON) must name the turns and the reordering of the collectives, and
the recompile must carry one `collective` cause with the order's fix, nothing else.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import CauseKind
from xlagraph.diagnose.collectives import collectives
from xlagraph.diff import diff_modules
from xlagraph.parse.sources import load_module
from xlagraph.render.report_json import report_to_json
from xlagraph.render.report_text import render_report_text
from xlagraph.report import build_report, load_runs
from xlagraph.report.model import Recompile, RunReport
from xlagraph.runlog import RunLog

HERE = FIXTURES / "torch_xla" / "fsdp_turns"
_PHRASE = "the same collectives in another order"
_STEP_SYNC = "fixtures/torch_xla/fsdp_turns/_routing.py:55"  # torch_xla.sync() of the step


@cache
def _log(name: str) -> RunLog:
    folder = HERE / f"{name}_capture"
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/fsdp_turns/generate.py")
    (log,) = load_runs(str(folder))
    return log


@cache
def _report(name: str) -> RunReport:
    return build_report(_log(name))


def _turning(report: RunReport) -> Recompile:
    (r,) = [r for r in report.recompiles if not r.expected]
    return r


def test_the_step_takes_turns_and_the_fixed_order_compiles_one_graph_fewer() -> None:
    bug, fixed = _report("routing_turns"), _report("routing_fixed")
    # FSDP's two set-up syncs (A, B), then the step: C, D by turns, or C alone.
    assert [e.variant for e in bug.timeline] == ["A", "A", "B"] + ["C", "D"] * 3
    assert (bug.steady_variants, bug.steady_each_step) == (("C", "D"), False)
    assert [e.variant for e in fixed.timeline] == ["A", "A", "B"] + ["C"] * 6
    assert (bug.compiles, fixed.compiles) == (4, 3)
    assert fixed.steady_turns is None and all(r.expected for r in fixed.recompiles)


def test_the_graphs_differ_by_the_order_of_the_same_collectives() -> None:
    c, d = (
        load_module(str(p))
        for p in sorted((next((HERE / "routing_turns_capture").iterdir()) / "hlo").glob("module_000[23]*"))
    )
    result = diff_modules(c, d)
    (cause,) = result.causes
    assert cause.kind is CauseKind.COLLECTIVE and cause.fix_id == "collective.order", cause
    assert "collectives issued in another order: the same 10 all-gather" in cause.summary
    assert "3 reduce-scatter (2, 2, 2 operands)" in cause.summary
    # The same collectives on both sides: no regrouping, only their order.
    left, right = collectives(result.left), collectives(result.right)
    assert sorted(x.signature for x in left) == sorted(x.signature for x in right)
    # Either way round: the other graph is the same collectives reordered.
    (back,) = diff_modules(d, c).causes
    assert back.fix_id == "collective.order"


def test_the_recompile_names_the_reordering_and_its_fix() -> None:
    d = _turning(_report("routing_turns"))
    assert (d.variant, d.baseline.variant if d.baseline else None) == ("D", "C")
    assert d.kinds == (str(CauseKind.COLLECTIVE),)
    assert [c.fix_id for c in d.causes] == ["collective.order"]
    (att,) = d.attribution
    assert att.summary.endswith("collective(s) of the baseline issued in another order")
    assert all(" is now " in item for item in att.items)


def test_the_steady_turns_name_the_reordering_of_the_collectives() -> None:
    report = _report("routing_turns")
    turns = report.steady_turns
    assert turns is not None
    (turn,) = turns.turns
    assert (turn.variant, turn.against, turn.fixes) == ("D", "C", ("collective.order",))
    assert turns.variants == ("C", "D") and turns.phrase == _PHRASE
    assert turns.kinds == ("collective",)
    # The capture knows no user frame of the collectives (their metadata is torch_xla's
    # xla_model.py): the line cited is the step's sync, where the two programs run.
    assert turns.line == _STEP_SYNC == _turning(report).lines[0]


def test_text_says_the_graphs_take_turns_over_the_collectives_order() -> None:
    text = " ".join(render_report_text((_report("routing_turns"),)).split())
    expected = f"steady state from step 5: 2 graphs take turns (C, D): {_PHRASE} at {_STEP_SYNC} (collective)"
    assert expected in text, text[:600]
    assert "[collective.order]" in text


def test_json_carries_the_turns_and_the_fix() -> None:
    data = report_to_json((_report("routing_turns"),))
    turns = data["steady_turns"]
    assert turns["variants"] == ["C", "D"] and turns["phrase"] == _PHRASE
    assert turns["kinds"] == ["collective"] and turns["line"] == _STEP_SYNC
    assert [(t["variant"], t["against"]) for t in turns["turns"]] == [("D", "C")]
    d = next(r for r in data["recompiles"] if r["variant"] == "D")
    assert [(c["kind"], c["fix_id"]) for c in d["causes"]] == [("collective", "collective.order")]
    assert data["processes"][0]["steady_turns"] == turns
