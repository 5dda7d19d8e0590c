"""`xlagraph report` and `xlagraph check` on real torch_xla runs.

The scripts in tests/report_scripts are run once per session on CPU (PJRT_DEVICE=CPU), each twice:
with XLA_SAVE_TENSORS_FMT=hlo and =text (both with XLA_IR_DEBUG/XLA_HLO_DEBUG), and under
XLAGRAPH_CAPTURE. Each script prints torch_xla's own CompileTime count at exit and marks the line
that causes its recompile with `# CAUSE`; the tests compare the report with both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from xlagraph.cli.main import xlagraph

from xlagraph.diff import diff_files
from xlagraph.ir import Frame
from xlagraph.render.json import diff_to_json
from xlagraph.render.report_json import report_to_json
from xlagraph.render.report_text import render_report_text
from xlagraph.report import build_report, check_run, load_runs, runlog_from_save_file
from xlagraph.runlog import GraphRecord, LiveTensor, RunLog

SCRIPTS = Path(__file__).resolve().parent / "report_scripts"
SCENARIOS = ("clean_loop", "kept_alive", "ragged_batch", "slice_int", "item_mid_step")
FORMATS = ("hlo", "text")
RUN_TIMEOUT = 600


@dataclass(frozen=True)
class Run:
    """One real run of a script: where its dump or capture is and torch_xla's compile count."""

    scenario: str
    path: str
    compiles: int
    stdout: str


def _cause_line(scenario: str) -> str:
    """`script.py:N`, N the line marked `# CAUSE`."""
    for n, line in enumerate((SCRIPTS / f"{scenario}.py").read_text().splitlines(), 1):
        if "# CAUSE" in line:
            return f"{scenario}.py:{n}"
    raise AssertionError(f"{scenario}.py has no `# CAUSE` line")


def _short(loc: str) -> str:
    """`/a/b/script.py:12` -> `script.py:12` (lazy-IR dumps name files by base name only)."""
    path, _, line = loc.rpartition(":")
    return f"{Path(path).name}:{line}"


def _run_script(scenario: str, env: dict[str, str], out: str) -> Run:
    full = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONHASHSEED": "0", **env}
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / f"{scenario}.py")],
        cwd=SCRIPTS,
        env=full,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 0, f"{scenario} failed:\n{proc.stderr[-3000:]}"
    counts = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("TORCH_XLA_COMPILES")]
    assert counts, proc.stdout
    return Run(scenario, out, int(counts[-1]), proc.stdout)


@pytest.fixture(scope="session")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Run]:
    """Every scenario run with XLA_SAVE_TENSORS_FILE in both formats, in parallel."""
    base = tmp_path_factory.mktemp("save")

    def one(key: tuple[str, str]) -> tuple[tuple[str, str], Run]:
        scenario, fmt = key
        stem = base / f"{scenario}.{fmt}"
        env = {
            "XLA_SAVE_TENSORS_FILE": str(stem),
            "XLA_SAVE_TENSORS_FMT": fmt,
            "XLA_IR_DEBUG": "1",
            "XLA_HLO_DEBUG": "1",
        }
        return key, _run_script(scenario, env, f"{stem}.0")

    keys = [(s, f) for s in SCENARIOS for f in FORMATS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, keys))


def _report(run: Run):  # type: ignore[no-untyped-def]
    return build_report(runlog_from_save_file(run.path))


def cli(*args: str) -> Result:
    return CliRunner().invoke(xlagraph, list(args))


def assert_one_line_error(result: Result, *must_contain: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlagraph: error: "), result.stderr
    for text in must_contain:
        assert text in lines[0], (text, lines[0])


# --- save files: one scenario per cause --------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_clean_loop_compiles_once_and_settles(dumps: dict, fmt: str) -> None:
    run = dumps["clean_loop", fmt]
    report = _report(run)
    assert report.compiles == run.compiles == 1
    assert report.recompiles == ()
    assert report.syncs == report.steps == 8
    assert [e.variant for e in report.timeline] == ["A"] * 8
    assert [e.compiled for e in report.timeline] == [True] + [False] * 7
    assert {e.trigger for e in report.timeline} == {"sync"}
    assert report.steady_from_step == 1 and report.steady_variants == ("A",)
    assert [e.phase for e in report.timeline] == ["warm-up"] + ["steady"] * 7
    assert report.warnings == ()
    assert any("no compile counters" in n for n in report.notes)


@pytest.mark.parametrize("fmt", FORMATS)
def test_kept_alive_tensor_is_an_extra_output(dumps: dict, fmt: str) -> None:
    run = dumps["kept_alive", fmt]
    report = _report(run)
    assert report.compiles == run.compiles == 2
    assert [e.variant for e in report.timeline] == ["A", "B"] * 4
    assert report.steady_from_step == 2 and report.steady_variants == ("A", "B")
    (r,) = report.recompiles
    assert (r.variant, r.step, r.sync) == ("B", 1, 1)
    assert r.baseline is not None and (r.baseline.variant, r.baseline.sync) == ("A", 0)
    assert r.baseline.reason == "same call site"
    assert r.kinds[0] == "output_added"
    added = r.attribution[0]
    assert added.kind == "output_added" and added.items == ("output 5: f32[]",)
    assert [_short(x) for x in added.lines] == [_cause_line("kept_alive")]
    assert _short(r.lines[0]) == _cause_line("kept_alive")
    assert _short(r.call_site) == "kept_alive.py:21"  # the torch_xla.sync() line
    # the save file has no live-tensor report, so no tensor is named; the capture test checks that
    assert added.tensors == ()


@pytest.mark.parametrize("fmt", FORMATS)
def test_ragged_batch_is_an_input_shape_change(dumps: dict, fmt: str) -> None:
    run = dumps["ragged_batch", fmt]
    report = _report(run)
    assert report.compiles == run.compiles == 2
    assert [e.variant for e in report.timeline] == ["A", "A", "B", "A", "A", "B"]
    (r,) = report.recompiles
    assert (r.variant, r.step) == ("B", 2)
    assert r.kinds[0] == "parameter_shape"
    shapes = r.attribution[0]
    assert set(shapes.items) == {"input 0: f32[4,4] -> f32[2,4]", "input 3: f32[4,8] -> f32[2,8]"}
    assert _short(r.lines[0]) == _cause_line("ragged_batch")


def test_slice_int_hlo_names_the_slice_bounds(dumps: dict) -> None:
    run = dumps["slice_int", "hlo"]
    report = _report(run)
    assert report.compiles == run.compiles == 2
    (r,) = report.recompiles
    assert r.kinds[0] == "attribute"
    assert r.attribution[0].items == ("slice.2: slice {[0:4],[0:4]} -> {[0:4],[2:6]}",)
    assert _short(r.lines[0]) == _cause_line("slice_int")


def test_slice_int_lazy_ir_text_cannot_show_the_bounds(dumps: dict) -> None:
    """The lazy IR text prints no slice bounds: both graphs print the same, and the engine says
    so from the graph and root hashes. No source line comes from the causes, so the only line
    cited is the sync's call site."""
    run = dumps["slice_int", "text"]
    report = _report(run)
    assert report.compiles == run.compiles == 2
    (r,) = report.recompiles
    assert r.kinds == ("attribute",)
    summary = r.causes[0].summary
    assert "graph hashes differ" in summary and "XLA_SAVE_TENSORS_FMT=hlo" in summary
    assert r.causes[0].sources == ()
    assert [_short(x) for x in r.lines] == ["slice_int.py:19"]  # torch_xla.sync()


@pytest.mark.parametrize("fmt", FORMATS)
def test_item_mid_step_is_an_extra_graph_at_the_item_line(dumps: dict, fmt: str) -> None:
    run = dumps["item_mid_step", fmt]
    report = _report(run)
    assert report.compiles == run.compiles == 2
    steps = [e.step for e in report.timeline]
    assert steps == [0, 1, 2, 2, 3, 3, 4, 4, 5, 5]  # the .item() sync does not end a step
    triggers = [e.trigger for e in report.timeline]
    assert triggers == ["sync", "sync"] + [".item()", "sync"] * 4
    (r,) = report.recompiles
    assert (r.variant, r.step, r.trigger) == ("B", 2, ".item()")
    # issue 7: the .item() graph is the step cut short, `graph_break` citing the .item() line
    assert r.kinds == ("graph_break",)
    assert [_short(x) for x in r.causes[0].sources] == [_cause_line("item_mid_step")]
    assert r.baseline is not None and r.baseline.reason.startswith("nearest earlier graph")
    assert _short(r.call_site) == _cause_line("item_mid_step")
    assert _short(r.lines[0]) == _cause_line("item_mid_step")


def test_every_recompile_has_a_user_line(dumps: dict) -> None:
    for run in dumps.values():
        for r in _report(run).recompiles:
            assert r.lines and not r.note, (run.path, r)


# --- JSON ----------------------------------------------------------------------------------------


def test_report_json_causes_are_the_diff_causes(dumps: dict) -> None:
    run = dumps["kept_alive", "hlo"]
    result = cli("report", run.path, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema"] == "xlagraph.report/1"
    assert data["compiles"] == 2 and data["compiles_reported"] is None
    (r,) = data["recompiles"]
    assert (r["sync"], r["step"], r["variant"]) == (1, 1, "B")
    assert r["baseline"] == {
        "variant": "A",
        "sync": 0,
        "reason": "same call site",
        "why": "the only earlier graph compared",
        "compared": ["A"],
    }
    diff = diff_to_json(diff_files(f"{run.path}#0", f"{run.path}#1"))
    assert r["causes"] == [c for c in diff["causes"] if not c["info"]]
    assert r["attribution"][0]["items"] == ["output 5: f32[]"]
    assert _short(r["lines"][0]) == _cause_line("kept_alive")
    assert [f["line"] for f in r["frames"]] == [21]
    assert r["library_frames"][0]["function"] == "sync"
    assert [e["variant"] for e in data["timeline"]] == ["A", "B"] * 4
    assert [v["variant"] for v in data["variants"]] == ["A", "B"]
    assert data["ranking"]["causes"][0]["compiles"] == 1
    assert len(data["processes"]) == 1
    run_level = ("schema", "processes", "ranks", "runs", "runs_note", "mark_sharding")
    assert {k: v for k, v in data["processes"][0].items() if k not in run_level} == {
        k: v for k, v in data.items() if k not in run_level
    }


def test_report_json_is_deterministic(dumps: dict) -> None:
    run = dumps["ragged_batch", "hlo"]
    assert cli("report", run.path, "--json").stdout == cli("report", run.path, "--json").stdout


def test_report_text(dumps: dict) -> None:
    result = cli("report", dumps["kept_alive", "hlo"].path)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "2 graphs compiled" in out
    assert "A* B* (A B) x3" in out
    assert "recompile 1/1: graph B at step 1, sync 1" in out
    assert "output_added:" in out and "kept_alive.py:18" in out
    clean = cli("report", dumps["clean_loop", "text"].path).stdout
    assert "1 graph compiled" in clean and "no recompile" in clean and "A* A x7" in clean


# --- check ---------------------------------------------------------------------------------------


def test_check_exit_codes(dumps: dict) -> None:
    clean = dumps["clean_loop", "hlo"].path
    kept = dumps["kept_alive", "hlo"].path
    assert cli("check", clean, "--max-graphs", "1").exit_code == 0
    assert cli("check", clean, "--max-graphs", "0", "--after-step", "0").exit_code == 0
    assert cli("check", clean, "--max-graphs", "0").exit_code == 1
    assert cli("check", kept, "--max-graphs", "2").exit_code == 0
    assert cli("check", kept, "--max-graphs", "0", "--after-step", "1").exit_code == 0
    failed = cli("check", kept, "--max-graphs", "0", "--after-step", "0")
    assert failed.exit_code == 1
    (line,) = failed.stdout.splitlines()
    assert line.startswith("FAIL: 1 graph compiled after step 0, at most 0 allowed; extra: B (step 1")
    assert "output_added" in line and _cause_line("kept_alive") in line


def test_check_library_and_json(dumps: dict) -> None:
    log = runlog_from_save_file(dumps["item_mid_step", "text"].path)
    result = check_run(log, max_graphs=1)
    assert not result.passed and [g.variant for g in result.counted] == ["A", "B"]
    assert result.counted[1].kinds == ("graph_break",)  # issue 7: was the catch-all `structure`
    assert check_run(log, max_graphs=0, after_step=2).passed
    assert not check_run(log, max_graphs=0, after_step=1).passed
    data = json.loads(cli("check", log.source, "--max-graphs", "1", "--json").stdout)
    assert data["passed"] is False and data["processes"][0]["counted"][1]["variant"] == "B"


def test_check_and_report_bad_input(tmp_path: Path, dumps: dict) -> None:
    assert_one_line_error(cli("report", str(tmp_path / "missing")), "no such file")
    assert_one_line_error(cli("check", str(tmp_path), "--max-graphs", "1"), "not a capture folder")
    single = tmp_path / "one.hlo"
    single.write_text(Path(f"{dumps['clean_loop', 'hlo'].path}").read_text().split("## BEGIN_GRAPH\n")[1])
    assert_one_line_error(cli("report", str(single)), "not an XLA_SAVE_TENSORS_FILE dump")
    cut = tmp_path / "cut.0"
    text = Path(dumps["clean_loop", "hlo"].path).read_text()
    cut.write_text(text[: text.index("## END_GRAPH")])  # killed while writing the first block
    assert_one_line_error(cli("report", str(cut)), "no complete graph")
    usage = cli("check", dumps["clean_loop", "hlo"].path)
    assert usage.exit_code == 2 and "--max-graphs" in usage.output
    assert cli("check", dumps["clean_loop", "hlo"].path, "--max-graphs", "-1").exit_code == 2


def test_truncated_save_file_still_reports(tmp_path: Path, dumps: dict) -> None:
    text = Path(dumps["kept_alive", "hlo"].path).read_text()
    cut = tmp_path / "killed.0"
    cut.write_text(text[: len(text) - 200])  # the last block lost its end
    report = build_report(runlog_from_save_file(str(cut)))
    assert report.syncs == 7 and report.compiles == 2
    assert any("truncated" in n for n in report.notes)


# --- the report's own logic, on real graphs ------------------------------------------------------


def _frames(script: str, line: int) -> tuple[Frame, ...]:
    return (Frame("sync", "/x/site-packages/torch_xla/torch_xla.py", 87), Frame("<module>", script, line))


def test_baseline_prefers_the_same_call_site(dumps: dict) -> None:
    """Graphs from two call sites: the recompile at site 1 is explained against site 1's graph
    even though site 2's graph ran more recently."""
    log = runlog_from_save_file(dumps["kept_alive", "hlo"].path)
    site1, site2 = _frames("/u/train.py", 10), _frames("/u/eval.py", 5)
    ragged = runlog_from_save_file(dumps["ragged_batch", "hlo"].path)
    other = ragged.syncs[2]  # a graph of another shape, "run by the eval loop"
    syncs = (
        replace(log.syncs[0], index=0, step=0, frames=site1),
        replace(other, index=1, step=1, frames=site2, compiled=True),
        replace(log.syncs[1], index=2, step=2, frames=site1),
    )
    graphs = {**log.graphs, other.graph_hash: ragged.graphs[other.graph_hash]}
    report = build_report(RunLog("mixed", "save-file", syncs=syncs, graphs=graphs))
    assert report.compiles == 3
    r = report.recompiles[1]
    assert r.variant == "C" and r.baseline is not None
    assert (r.baseline.variant, r.baseline.reason) == ("A", "same call site")
    assert r.kinds[0] == "output_added"
    # The eval site's graph is expected (a program of its own): what to fix, train.py, comes first.
    assert report.recompiles[0].expected and not r.expected
    assert [(e.key, e.compiles) for e in report.by_call_site] == [("/u/train.py:10", 1), ("/u/eval.py:5", 1)]


def test_live_tensors_are_attributed_by_shape_and_user_line(dumps: dict) -> None:
    """Live tensors as the capture records them (torch_xla's tensors report) on the real graphs."""
    log = runlog_from_save_file(dumps["kept_alive", "hlo"].path)
    script = str(SCRIPTS / "kept_alive.py")
    cause = int(_cause_line("kept_alive").split(":")[1])
    lib = Frame("norm", "/x/site-packages/torch/functional.py", 1824)
    b_hash = log.syncs[1].graph_hash

    def attributed(tensors: tuple[LiveTensor, ...]):  # type: ignore[no-untyped-def]
        graphs = {**log.graphs, b_hash: replace(log.graphs[b_hash], tensors=tensors)}
        report = build_report(replace(log, graphs=graphs))
        return report, report.recompiles[0].attribution[0]

    loss = LiveTensor(12, "f32[]", "CPU:0", 4, (lib, Frame("<module>", script, 15)))
    weight = LiveTensor(11, "f32[4,16]", "CPU:0", 5, (Frame("<module>", script, 15),))
    norm = LiveTensor(13, "f32[]", "CPU:0", 9, (lib, Frame("<module>", script, cause)))
    report, added = attributed((weight, loss, norm))
    assert [(t.id, t.match) for t in added.tensors] == [(13, "shape and line")]
    assert _short(added.tensors[0].line) == _cause_line("kept_alive")
    assert added.tensors[0].library_frames == 1
    data = report_to_json((report,))
    assert data["recompiles"][0]["attribution"][0]["tensors"][0]["id"] == 13
    # no tensor made on the cited line: every tensor of the right shape is a candidate
    _, added = attributed((weight, loss))
    assert [(t.id, t.match) for t in added.tensors] == [(12, "shape")]


def test_missing_hlo_is_said_instead_of_causes(dumps: dict) -> None:
    log = runlog_from_save_file(dumps["kept_alive", "hlo"].path)
    b_hash = log.syncs[1].graph_hash
    graphs = {**log.graphs, b_hash: GraphRecord(b_hash)}
    (r,) = build_report(replace(log, graphs=graphs)).recompiles
    assert r.causes == () and "HLO was not kept" in r.note
    assert r.baseline is not None and r.baseline.variant == "A"
    assert "HLO was not kept" in render_report_text((build_report(replace(log, graphs=graphs)),))


def test_torch_xla_count_disagreeing_is_a_warning(dumps: dict) -> None:
    log = runlog_from_save_file(dumps["clean_loop", "hlo"].path)
    report = build_report(replace(log, compiles_reported=3))
    assert report.compiles == 1
    assert any("torch_xla counted 3" in w for w in report.warnings)
    assert build_report(replace(log, compiles_reported=1)).warnings == ()


def test_several_processes(dumps: dict) -> None:
    """Top-level JSON fields are the first process's; every process is in `processes`; check
    fails when any process is over budget."""
    logs = (
        replace(runlog_from_save_file(dumps["clean_loop", "hlo"].path), process="rank0"),
        replace(runlog_from_save_file(dumps["kept_alive", "hlo"].path), process="rank1"),
    )
    reports = tuple(build_report(log) for log in logs)
    data = report_to_json(reports)
    assert data["process"] == "rank0" and data["compiles"] == 1
    assert [p["process"] for p in data["processes"]] == ["rank0", "rank1"]
    assert [p["compiles"] for p in data["processes"]] == [1, 2]
    results = [check_run(log, 1) for log in logs]
    assert [r.passed for r in results] == [True, False]
    assert results[1].explanation.startswith("rank1: FAIL")
    text = render_report_text(reports)
    assert "process rank0" in text and "process rank1" in text


# --- capture folders (xlagraph.capture) ---------------------------------------------------------


@pytest.fixture(scope="session")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every scenario run unmodified under XLAGRAPH_CAPTURE=DIR (xlagraph.capture), in parallel."""
    base = tmp_path_factory.mktemp("capture")

    def one(scenario: str) -> tuple[str, Run]:
        folder = base / scenario
        run = _run_script(scenario, {"XLAGRAPH_CAPTURE": str(folder)}, str(folder))
        assert folder.is_dir(), (
            "XLAGRAPH_CAPTURE wrote nothing: is xlagraph.capture's start-up hook installed?"
        )
        return scenario, run

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, SCENARIOS))


# scenario -> (variants per sync, kind of the recompile's first cause or None)
CAPTURE_EXPECTED = {
    "clean_loop": (["A"] * 8, None),
    "kept_alive": (["A", "B"] * 4, "output_added"),
    "ragged_batch": (["A", "A", "B", "A", "A", "B"], "parameter_shape"),
    "slice_int": (["A", "B"] * 4, "attribute"),
    "item_mid_step": (["A", "A"] + ["B", "A"] * 4, "graph_break"),  # issue 7: was `structure`
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_report_on_a_capture_folder(captures: dict[str, Run], scenario: str) -> None:
    """`XLAGRAPH_CAPTURE=DIR python script.py`, then the report of DIR: the compile count is
    torch_xla's own, each recompile has the expected cause and cites the `# CAUSE` line."""
    run = captures[scenario]
    (log,) = load_runs(run.path)
    assert log.kind == "capture"
    report = build_report(log)
    variants, kind = CAPTURE_EXPECTED[scenario]
    assert report.compiles == run.compiles == log.compiles_reported
    assert report.warnings == ()
    assert [e.variant for e in report.timeline] == variants
    if kind is None:
        assert report.recompiles == () and report.steady_from_step == 1
        assert cli("check", run.path, "--max-graphs", "1").exit_code == 0
        return
    (r,) = report.recompiles
    assert r.kinds[0] == kind
    assert _short(r.lines[0]) == _cause_line(scenario)
    result = cli("check", run.path, "--max-graphs", "1")
    assert result.exit_code == 1 and kind in result.stdout


def test_capture_names_the_kept_alive_tensor(captures: dict[str, Run]) -> None:
    (log,) = load_runs(captures["kept_alive"].path)
    (r,) = build_report(log).recompiles
    added = r.attribution[0]
    assert added.kind == "output_added" and added.items == ("output 5: f32[]",)
    (tensor,) = added.tensors
    assert tensor.shape == "f32[]" and tensor.match == "shape and line"
    assert _short(tensor.line) == _cause_line("kept_alive")


def test_capture_item_trigger(captures: dict[str, Run]) -> None:
    (log,) = load_runs(captures["item_mid_step"].path)
    report = build_report(log)
    assert [e.trigger for e in report.timeline] == ["sync", "sync"] + [".item()", "sync"] * 4
    assert report.recompiles[0].trigger == ".item()"


# --- pytest plugin -------------------------------------------------------------------------------

_BUDGET_TESTS = """
import torch
import torch_xla


def test_stable_loop_within_budget(xla_graph_budget):
    x = torch.ones(4).to(torch_xla.device())  # device data: the graph is the same every time
    y = (x * 2).sum()
    torch_xla.sync()  # warm-up compile, outside the budget
    with xla_graph_budget(max_graphs=0):
        for _ in range(3):
            y = (x * 2).sum()
            torch_xla.sync()


def test_changing_shapes_over_budget(xla_graph_budget):
    with xla_graph_budget(max_graphs=1):
        for n in (2, 3, 5):
            y = torch.ones(n, device=torch_xla.device()).sum()
            torch_xla.sync()
"""


def test_pytest_plugin_graph_budget(tmp_path: Path) -> None:
    (tmp_path / "test_budget.py").write_text(_BUDGET_TESTS)
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xlagraph.pytest_plugin", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout
    assert "3 XLA graph(s) compiled inside xla_graph_budget, at most 1 allowed" in proc.stdout
    assert "--xla-explain" in proc.stdout  # how to see why


def test_pytest_plugin_graph_budget_names_each_extra_graphs_cause_and_line(tmp_path: Path) -> None:
    (tmp_path / "test_budget.py").write_text(_BUDGET_TESTS)
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("XLAGRAPH_CAPTURE", None)
    argv = [sys.executable, "-m", "pytest", "-p", "xlagraph.pytest_plugin", "-q", "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [*argv, "--xla-explain"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert proc.returncode == 1 and "1 failed, 1 passed" in proc.stdout, proc.stdout + proc.stderr
    # The failure's own block, up to its capture line: on CI (CI=true in the environment) pytest's
    # short summary repeats the whole message, so the rest of stdout holds each line twice.
    start = proc.stdout.index("3 XLA graph(s) compiled inside xla_graph_budget")
    failure = proc.stdout[start : proc.stdout.index("\n", proc.stdout.index("capture: ", start))]
    listed = [line for line in failure.splitlines() if line.strip().startswith("- step ")]
    assert len(listed) == 3, failure  # each graph of the block, with its cause and line
    shapes = [line for line in listed if "parameter_shape" in line]
    assert len(shapes) == 2 and all("test_budget.py:19" in line for line in shapes), failure
    capture = failure.split("capture: ", 1)[1].split()[0]
    assert Path(capture).is_dir()  # kept for `xlagraph report`


def test_capture_folder_without_journal_is_reported_with_a_note(tmp_path: Path) -> None:
    # A process killed before its first record leaves meta.json alone: not an error, a note.
    # (The capture reader is part of the core package, so "cannot read captures" is gone.)
    (tmp_path / "meta.json").write_text("{}")
    result = cli("report", str(tmp_path))
    assert result.exit_code == 0, (result.output, result.exception)
    assert "journal.jsonl missing" in result.output
    result = cli("check", str(tmp_path), "--max-graphs", "1")
    assert (result.exit_code in (0, 1) and result.exception is None) or isinstance(
        result.exception, SystemExit
    )


def test_capture_killed_before_its_first_record_still_reports(tmp_path: Path) -> None:
    (tmp_path / "host-1").mkdir()
    (tmp_path / "host-1" / "meta.json").write_text("{}")
    result = cli("report", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "0 graphs compiled" in result.stdout and "no sync recorded" in result.stdout
    assert cli("check", str(tmp_path), "--max-graphs", "0").exit_code == 0
