"""`diagnose.new_code` decides, on real captures, which recompiles are new code rather than a
changed graph and which are another use of the first step's code; the report only words it
(`report/explain.py`)."""

from __future__ import annotations

from pathlib import Path

from tests.test_recognizers_capture import _log
from xlagraph.diagnose.bridge import bridged_before
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS
from xlagraph.diagnose.new_code import NewCode, another_use, new_code
from xlagraph.report import build_report
from xlagraph.report.modules import Modules
from xlagraph.report.triggers import trigger_of
from xlagraph.runlog import RunLog, Sync


def _verdicts(log: RunLog) -> dict[str, tuple[NewCode | None, bool]]:
    """Each explained graph's letter -> (`new_code`, `another_use`) against the baseline the report
    chose, from the capture's syncs as the report reads them."""
    first: dict[str, Sync] = {}
    for s in log.syncs:
        first.setdefault(s.graph_hash, s)
    letters = {h: chr(ord("A") + k) for k, h in enumerate(first)}
    by_letter = {v: h for h, v in letters.items()}
    triggers = {s.index: trigger_of(s) for s in log.syncs}
    last_marker = max((s.index for s in log.syncs if triggers[s.index] not in IMPLICIT_TRIGGERS), default=-1)
    last_step = max(s.step for s in log.syncs)
    modules = Modules(log.graphs)
    report = build_report(log)
    out = {}
    for r in (*report.first_compiles, *report.recompiles):
        assert r.baseline is not None
        target, base = first[r.graph_hash], by_letter[r.baseline.variant]
        graphs = modules.get(base), modules.get(r.graph_hash)
        bridged = bridged_before(target, log.syncs, triggers)
        verdict = new_code(
            target, base, r.baseline.reason, graphs, log.syncs, triggers, first, last_marker, bridged
        )
        if verdict is not None and verdict.full_graph:
            verdict = NewCode(verdict.when, verdict.fixed, letters[verdict.full_graph])
        out[r.variant] = verdict, another_use(target, first[base], first, last_step)
    return out


def test_first_step_graphs_a_read_after_the_marker_and_the_bridge_s_warm_up(tmp_path: Path) -> None:
    """held_out_19's openxla SimCLR: step 0's graphs from other call sites are a program starting
    (`first step`); the print on the line after `xm.mark_step()` (H, step 1) reads what the step
    computed while its graph still runs: new code, no program start; the bridge's first
    inputs-only sync (I) takes over from its first full sync's graph (E)."""
    got = _verdicts(_log("h19_simclr_openxla_temperature_clean", tmp_path))
    assert {v for v, (verdict, _) in got.items() if verdict and verdict.when == "first step"} == set("BCDEFG")
    assert got["H"] == (NewCode("", False, ""), False)
    assert got["I"] == (NewCode("", False, "E"), False)


def test_another_use_in_the_first_step_is_no_new_code(tmp_path: Path) -> None:
    """A dual encoder's passage graph (B) is the query graph's code again in step 0: a changed
    graph by its call site, another use by the step; later same-site graphs are neither."""
    got = _verdicts(_log("h5_mpnet_inbatch_negatives", tmp_path))
    assert got["B"] == (None, True)
    assert got["C"][0] == NewCode("first step", False, "")
    assert [got[v] for v in "DEFG"] == [(None, False)] * 4


def test_after_constants_and_after_the_loop(tmp_path: Path) -> None:
    """A baseline that only materializes fixed values makes the first graph that reads data new
    code (`fixed`); a read after the loop's last step marker is new code `after the loop`."""
    got = _verdicts(_log("h8_segformer_cosine_clean", tmp_path / "a"))
    assert got == {"B": (NewCode("after constants", True, ""), False), "C": (None, False)}
    got = _verdicts(_log("h5_gptneo_warmup_clean", tmp_path / "b"))
    assert got == {"C": (NewCode("after the loop", False, ""), False), "B": (None, False)}
