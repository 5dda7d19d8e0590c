"""The third blind round (fixtures/torch_xla/compiled/heldout3): the engine's fixes for the two scripts
its first run missed, each on the real capture, with a scenario of the same rule that must stay named."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from xlagraph.cli.main import xlagraph as cli

from xlagraph.capture.reader import read_capture
from xlagraph.report.build import build_report

BASE = Path(__file__).resolve().parents[1] / "fixtures" / "torch_xla" / "compiled"


def _capture(held: str, name: str) -> Path:
    return BASE / held / name / "capture"


def _report(held: str, name: str):
    return build_report(read_capture(str(_capture(held, name)))[0])


def test_eager_ops_of_code_run_for_the_first_time_are_new_not_recompiled() -> None:
    # validation runs eagerly first at step 5; its aten::expand at line 69 shares only its name with
    # the expands of other lines at step 0: a first compile of new code, not a recompile
    e = _report("heldout3_captures", "eager_masked_train").eager
    assert e.compiles == e.reported == 26
    assert not e.recompiled and not e.fix
    (step,) = e.steps
    assert step.step == 5 and len(step.new) == 18 and not step.recompiled
    assert any(o.op == "aten::expand" and o.at.endswith("eager_masked_train.py:69") for o in step.new)
    capture = str(_capture("heldout3_captures", "eager_masked_train"))
    assert CliRunner().invoke(cli, ["check", "--max-recompiles", "0", capture]).exit_code == 0


def test_an_eager_op_compiled_again_at_its_call_site_stays_a_recompile() -> None:
    # heldout2's curriculum: the sequence length doubles at step 4, the same lines compile again
    e = _report("heldout2_captures", "curriculum_eager_train").eager
    (step,) = e.steps
    assert step.step == 4 and len(step.recompiled) > 30 and e.fix
    assert any(a.endswith("curriculum_eager_train.py:33") for a in step.at), step.at


def test_a_flag_that_swaps_an_if_branch_of_an_xla_compiled_step_is_named_at_its_if() -> None:
    # `if LABEL_SMOOTHING:` in a torch_xla.compile'd step: the flag flips at step 3, cross_entropy's
    # work (else) leaves the graph and the smoothed loss's (body, and its helper) comes in; no
    # dynamo guard exists, so the graphs and the stored source must say it
    report = _report("heldout3_captures", "label_smooth_xla_train")
    assert report.dynamo is None
    (r,) = [r for r in report.recompiles if not r.expected]
    assert r.kinds == ("conditional_work",)  # the inputs each branch reads are folded into it
    (a,) = r.attribution
    script = "fixtures/torch_xla/compiled/heldout3/label_smooth_xla_train.py"
    assert a.lines[:2] == (f"{script}:40", f"{script}:53")  # the `if`, then where the flag is set
    assert "`if LABEL_SMOOTHING`" in a.summary and "LABEL_SMOOTHING, set at" in a.summary
    assert r.causes[0].fix_id == "conditional_work.host_branch"


def test_the_scorer_reads_the_xla_causes_where_there_is_no_dynamo_record(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(BASE.parents[2] / "benchmarks"))
    from score_compiled import score

    truth = json.loads((BASE / "heldout3" / "TRUTH.json").read_text())
    row = score("label_smooth_xla_train", truth["label_smooth_xla_train.py"], "heldout3_captures")
    assert row["named"] == "conditional_work" and row["cause"] and row["line"] and not row["false"]
    clean = score("eager_masked_train", truth["eager_masked_train.py"], "heldout3_captures")
    assert clean["named"] == "none" and clean["cause"] and not clean["false"]


def test_a_guard_note_shows_the_file_as_read_not_the_capturing_machines_cut_path() -> None:
    """Dynamo cuts the path in a guard's `# file:line in fn` note from the left, keeping the tail of
    the capturing machine's folder (`ork/h-x/fixtures/...`); the report shows the file it found
    again instead, also for the recompile limit's record, which names no compiled frame."""
    for held, name in (("heldout3_captures", "gumbel_vq_train"), ("heldout2_captures", "warmup_scale_train")):
        out = CliRunner().invoke(cli, ["report", "--json", str(_capture(held, name))]).output
        guards = [g for e in json.loads(out)["dynamo"]["events"] for g in e.get("guards", [])]
        assert guards and all(g["at"] and f"# {g['at']} in " in g["text"] for g in guards)
