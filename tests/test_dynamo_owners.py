"""`diagnose.dynamo_join` joins torch.compile's compiles to the XLA graphs on real captures: which
graphs each compile made (`owners`), and which retrace switched a mode for good with what fix
(`switched_compiles`); `report/dynamo.py` only says them."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from xlagraph.diagnose.dynamo_join.expected import switched_compiles
from xlagraph.diagnose.dynamo_join.owners import owners
from xlagraph.diagnose.dynamo_join.retrace import Retrace
from xlagraph.report import build_report, load_runs
from xlagraph.report.dynamo import dynamo_section


def _joined(folder: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """(compile id -> the letters of its graphs, `switched_compiles`), from the capture's compiles
    and the report's graphs, retraces and timeline as `report.dynamo.joined` reads them."""
    (log,) = load_runs(str(folder))
    assert log.dynamo is not None
    report = build_report(log)
    made = owners(log.dynamo.compiles, report.variants)
    section = dynamo_section(log.dynamo, report.variants, log.syncs, None)
    retraces = {
        e.compile_id: Retrace(e.guards[0], e.function, e.call_site, e.expected)
        for e in section.events
        if e.kind == "recompile" and e.guards
    }
    last_run: dict[str, int] = {}
    for t in report.timeline:
        last_run[t.variant] = max(last_run.get(t.variant, t.sync), t.sync)
    letters = {k: [v.letter for v in graphs] for k, graphs in made.items()}
    return letters, switched_compiles(report.recompiles, retraces, last_run)


def test_dropout_switched_off_for_good() -> None:
    """held_out_36's wafer net: the first compile made step 0's graphs, the eval-mode retrace at
    step 3 the two it first ran; steps 1 and 2's graphs began with no compile of their step. The
    retrace read the mode in torch's dropout: dropout's fix."""
    owned, switched = _joined(
        FIXTURES / "torch_xla" / "corpus" / "captures" / "h36_wafer_openxla_dropout_off"
    )
    assert owned == {"0/0": list("ABCDE"), "0/1": list("HI")}
    assert switched == {"0/1": "conditional_work.dropout"}


def test_a_users_training_branch_switched_off_for_good() -> None:
    """DropPath put in eval mode for the last epoch: the first compile (step 1) owns none of
    step 0's graph A, which ran before it began; the retrace's fix is a training-only branch's."""
    owned, switched = _joined(FIXTURES / "torch_xla" / "mode_switch" / "drop_path_off_capture")
    assert owned == {"0/0": list("BCDE"), "0/1": list("HI")}
    assert switched == {"0/1": "conditional_work.training_branch"}
