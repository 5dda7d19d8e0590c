"""torch.compile, torch_xla.compile and eager mode: dynamo's half joined to the XLA graphs.

The scenarios are real torch_xla 2.9 runs (fixtures/torch_xla/compiled/generate.py): each was
captured with TORCH_LOGS=recompiles,graph_breaks in the same process, so torch's own account of the
run is the answer. For every scenario: every guard failure torch printed is named by xlagraph (same
count, same guard), every graph break (same line, same reason), xlagraph's compile count equals
torch_xla's, and its step count equals the loop's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from compiled_parity import torch_said
from xlagraph.cli.main import xlagraph as cli

from xlagraph.capture.reader import read_capture
from xlagraph.diagnose.guards import KINDS, explain_guard
from xlagraph.errors import InputError
from xlagraph.parse.torch_trace import read_torch_trace
from xlagraph.report.build import build_report

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "fixtures" / "torch_xla" / "compiled"
CAPTURES = sorted(p for p in (BASE / "captures").iterdir() if p.is_dir())
NAMES = [p.name for p in CAPTURES]
# eager mode: torch_xla compiles per op (EagerOpCompileTime), no XLA graph of the loop's
EAGER = {"eager_shape"}
NO_XLA = {"aot_eager_shape"}  # dynamo's half alone: a CPU backend, no torch_xla imported


def _loop_steps(name: str) -> int:
    text = (BASE / "scenarios" / f"{name}.py").read_text()
    return int(re.search(r"^for \w+ in range\((\d+)\):", text, re.M).group(1))


def _report(name: str):
    return build_report(read_capture(str(BASE / "captures" / name / "capture"))[0])


def _strip_note(text: str) -> str:
    return re.sub(r"\s+#.*$", "", text).strip()


@pytest.mark.parametrize("name", NAMES)
def test_every_guard_failure_torch_printed_is_named(name: str) -> None:
    said = torch_said(BASE / "captures" / name / "torch_logs.txt")
    report = _report(name)
    ours = []
    if report.dynamo is not None:
        ours = [
            (e.compile_id, tuple(_strip_note(g.text) for g in e.guards))
            for e in report.dynamo.events
            if e.guards
        ]
    assert sorted(ours) == sorted(said.recompiles)
    # ... and each in the user's words, not as a raw guard
    for e in report.dynamo.recompiles if report.dynamo else ():
        assert e.guards[0].kind != "guard", e.guards[0].text
        assert e.summary.startswith("torch.compile")


@pytest.mark.parametrize("name", NAMES)
def test_every_graph_break_torch_printed_is_named(name: str) -> None:
    said = torch_said(BASE / "captures" / name / "torch_logs.txt")
    report = _report(name)
    ours = {(b.at, b.reason) for b in report.dynamo.graph_breaks} if report.dynamo else set()
    assert {(f"{f}:{line}", reason) for f, line, reason in said.breaks} <= ours


def _measured(name: str) -> dict:
    """measure.py's counts of the same script, run apart (no capture): torch_xla's own metrics."""
    return json.loads((BASE / "out" / name / "counts.json").read_text())


@pytest.mark.parametrize("name", [n for n in NAMES if n not in NO_XLA])
def test_compiles_equal_torch_xla_and_steps_equal_the_loop(name: str) -> None:
    report = _report(name)
    assert report.compiles == report.compiles_reported
    assert report.steps == _loop_steps(name)
    eager = report.eager.compiles if report.eager is not None else 0
    if name in EAGER:
        assert eager == report.eager.reported == _measured(name)["eager_op_compiles"] > 0
    else:
        assert eager == 0


def test_eager_mode_names_the_ops_compiled_again_and_the_change() -> None:
    report = _report("eager_shape")
    e = report.eager
    assert e.by_step[0] == (0, 31) and [s.step for s in e.steps] == [3]
    (step,) = e.steps
    assert len(step.recompiled) == 15 and not step.new  # every op of the step, none new
    assert step.changes[0].startswith("8 -> 11")
    assert {o.op for o in step.recompiled} >= {"aten::addmm", "aten::relu", "aten::mse_loss", "aten::mm"}
    assert all(o.was for o in step.recompiled)
    made = [a for a in step.at if a.endswith(("eager_shape.py:22", "eager_shape.py:23"))]
    assert made, step.at  # the lines that made x and y
    assert e.fix and e.steps[0].seconds > 0
    text = CliRunner().invoke(cli, ["report", str(BASE / "captures" / "eager_shape" / "capture")]).output
    assert "eager recompile at step 3" in text and "6 steps" in text
    result = CliRunner().invoke(
        cli, ["check", "--max-recompiles", "0", str(BASE / "captures" / "eager_shape" / "capture")]
    )
    assert result.exit_code == 1 and "15 eager op recompile(s)" in result.output


def test_no_torch_xla_capture_holds_dynamos_record() -> None:
    proc = BASE / "captures" / "aot_eager_shape" / "capture" / "proc"
    assert (proc / "torch_trace.log").is_file() and (proc / "meta.json").is_file()
    assert not (proc / "journal.jsonl").exists()
    report = _report("aot_eager_shape")
    assert report.dynamo is not None and [e.guards[0].kind for e in report.dynamo.recompiles] == [
        "tensor_size"
    ]


def test_recompile_named_first_in_dynamos_terms_with_the_xla_graphs_it_added() -> None:
    report = _report("batch_size")
    (event,) = report.dynamo.recompiles
    assert "input `x`'s dimension 0 changed 8 -> 11" in event.summary
    assert event.step == 3 and event.variants
    made = {r.variant: r.dynamo for r in report.recompiles}
    assert all(made[v] == event.compile_id for v in event.variants if v in made)
    assert event.seconds > 0 and event.xla_seconds > 0
    text = CliRunner().invoke(cli, ["report", str(BASE / "captures" / "batch_size" / "capture")]).output
    first_xla = text.index("\nrecompile 1/")
    assert text.index("torch.compile recompile 1/1") < first_xla
    assert "from    torch.compile recompile" in text[first_xla:]


@pytest.mark.parametrize("name", ["int_arg", "flag_global", "loss_switch"])
def test_the_graphs_a_retrace_compiled_cite_the_failed_guards_lines(name: str) -> None:
    """The bridge runs dynamo's graph from library frames, so its instructions name no user line:
    the XLA recompile's causes are cited where the guarded value is set and where the frame reads
    it (dynamo's `made` and `at`), one of them the line marked CAUSE in each scenario."""
    report = _report(name)
    cause = {
        f"{name}.py:{i}"
        for i, line in enumerate((BASE / "scenarios" / f"{name}.py").read_text().splitlines(), 1)
        if "# CAUSE" in line
    }
    made = [r for r in report.recompiles if r.dynamo and r.causes and not r.first_of_program]
    assert made
    for r in made:
        assert any(x.rsplit("/", 1)[-1] in cause for a in r.attribution for x in a.lines), r.attribution
        assert any(x.rsplit("/", 1)[-1] in cause for x in r.lines[:2])  # made, at: first


def test_compiled_programs_runs_are_not_user_reads() -> None:
    """torch_xla calls a compiled program's run "user code trying to access tensor value"; its
    frames are the bridge's: no mid-step read finding, and a step of several graphs is not variants
    taking turns."""
    report = _report("batch_size")
    assert not report.findings
    assert report.steady_each_step and len(report.steady_variants) > 1
    assert {t.trigger for t in report.timeline if t.phase == "steady"} <= {"dynamo", "sync"}


def test_cache_limit_is_told_as_dynamo_giving_up() -> None:
    report = _report("cache_limit")
    kinds = [e.kind for e in report.dynamo.recompiles]
    assert kinds[-1] == "cache_limit" and kinds[:-1] == ["recompile"] * (len(kinds) - 1)
    assert "runs eagerly" in report.dynamo.recompiles[-1].summary


def test_train_eval_first_switch_is_expected() -> None:
    report = _report("train_eval")
    assert report.dynamo.recompiles and all(e.expected for e in report.dynamo.recompiles)


def test_report_json_carries_dynamo() -> None:
    out = CliRunner().invoke(cli, ["report", "--json", str(BASE / "captures" / "int_arg" / "capture")]).output
    data = json.loads(out)
    d = data["dynamo"]
    assert {"events", "recompiles", "graph_breaks", "ranking", "frames", "compiles", "seconds"} <= set(d)
    kinds = {g["kind"] for e in d["events"] for g in e["guards"][:1]}
    assert kinds == {"python_scalar"}
    assert all("dynamo" in r for r in data["recompiles"])


def test_check_gates_dynamo_recompiles_and_graph_breaks() -> None:
    runner = CliRunner()
    src = str(BASE / "captures" / "batch_size" / "capture")
    bad = runner.invoke(cli, ["check", src, "--max-recompiles", "0"])
    assert bad.exit_code == 1 and "dimension 0 changed 8 -> 11" in bad.output
    assert runner.invoke(cli, ["check", src, "--max-recompiles", "1"]).exit_code == 0
    breaks = runner.invoke(cli, ["check", src, "--no-graph-breaks"])
    assert breaks.exit_code == 1 and "Tensor.backward" in breaks.output
    stable = str(BASE / "captures" / "stable" / "capture")
    assert runner.invoke(cli, ["check", stable, "--max-recompiles", "0", "--no-graph-breaks"]).exit_code == 0
    assert runner.invoke(cli, ["check", src]).exit_code == 2


def test_every_guard_text_in_the_fixtures_maps_to_a_kind() -> None:
    texts = set()
    for name in NAMES:
        for _, guards in torch_said(BASE / "captures" / name / "torch_logs.txt").recompiles:
            texts.update(guards)
    assert texts
    for text in texts:
        g = explain_guard(text)
        assert g.kind in KINDS and g.kind != "guard", text


@pytest.mark.parametrize(
    ("text", "kind", "phrase"),
    [
        (
            "1/0: tensor 'x' size mismatch at index 0. expected 8, actual 11",
            "tensor_size",
            "dimension 0 changed 8 -> 11",
        ),
        ("0/6: tensor 'x' dtype mismatch. expected Float, actual Double", "tensor_dtype", "Float -> Double"),
        ("0/0: n == 3   # y = s.l(x) * n  # mp/s/train.py:7 in forward", "python_scalar", "`n` changed"),
        (
            "0/2: s.use_res == True  # if s.use_res:  # s/train.py:8 in forward",
            "module_attribute",
            "s.use_res",
        ),
        ("0/3: s.training == True  # if s.training:  # train.py:9 in forward", "train_eval", "(eval mode)"),
        ("0/4: G['FLAG'] == False  # if FLAG:  # train.py:10 in forward", "global_value", "global `FLAG`"),
        ("0/0: GLOBAL_STATE changed: grad_mode", "grad_mode", "gradient mode"),
        ("0/0: something new in torch 2.10", "guard", "guard `something new in torch 2.10` failed"),
    ],
)
def test_guard_rules(text: str, kind: str, phrase: str) -> None:
    g = explain_guard(text, "tmp/s/train.py")
    assert g.kind == kind and phrase in g.phrase
    if "#" in text:
        assert g.line > 0 and g.source


# -- bad input ------------------------------------------------------------------------------------
def _cli_error(path: Path) -> str:
    result = CliRunner().invoke(cli, ["report", str(path)])
    assert result.exit_code == 2, result.output
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output
    return lines[0]


def test_truncated_trace_keeps_what_is_complete(tmp_path: Path) -> None:
    src = (BASE / "captures" / "batch_size" / "capture" / "proc" / "torch_trace.log").read_text()
    cut = tmp_path / "dedicated_log_torch_trace_cut.log"
    cut.write_text(src[: len(src) - 40])
    log = read_torch_trace(str(cut))
    assert log.compiles and any("cut short" in n for n in log.notes)


def test_foreign_and_binary_trace_files_are_one_line_exit_2(tmp_path: Path) -> None:
    foreign = tmp_path / "dedicated_log_torch_trace_x.log"
    foreign.write_text("hello\nthis is not a trace\n")
    assert "not a torch structured trace" in _cli_error(foreign)
    binary = tmp_path / "dedicated_log_torch_trace_b.log"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    assert "binary" in _cli_error(binary)
    with pytest.raises(InputError):
        read_torch_trace(str(foreign))


def test_capture_with_a_broken_dynamo_record_reports_the_xla_half_with_a_note(tmp_path: Path) -> None:
    import shutil

    dst = tmp_path / "cap"
    shutil.copytree(BASE / "captures" / "batch_size" / "capture", dst)
    (dst / "proc" / "torch_trace.log").write_text("garbage\n")
    report = build_report(read_capture(str(dst))[0])
    assert report.dynamo is None and report.compiles > 0
    assert any("torch_trace.log" in n for n in report.notes)


def test_torch_trace_folder_reads_alone(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    trace.mkdir()
    src = BASE / "captures" / "int_arg" / "capture" / "proc" / "torch_trace.log"
    (trace / "dedicated_log_torch_trace_abc.log").write_text(src.read_text())
    result = CliRunner().invoke(cli, ["report", str(trace)])
    assert result.exit_code == 0, result.output
    assert "torch.compile recompile 1/" in result.output and "Python argument" in result.output


# -- live: capture with no torch_xla, any backend ------------------------------------------------
SCRIPT = """
import torch
f = torch.compile(lambda x, k: x * k + 1, backend="aot_eager")
for step in range(3):
    f(torch.ones(2 + step), 2)
"""


def test_live_capture_of_a_cpu_backend(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "loop.py").write_text(SCRIPT)
    env = {**os.environ, "XLAGRAPH_CAPTURE": str(tmp_path / "cap"), "TORCH_LOGS": "recompiles"}
    proc = subprocess.run(
        [sys.executable, "loop.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (folder,) = (tmp_path / "cap").iterdir()
    log = read_capture(str(folder))[0]
    report = build_report(log)
    assert [e.guards[0].phrase for e in report.dynamo.recompiles] == [
        "input `x`'s dimension 0 changed 2 -> 3"
    ]
    text = (folder / "torch_trace.log").read_text() + (folder / "meta.json").read_text()
    assert str(tmp_path) not in text  # portable: no path of the capturing machine


def test_an_inference_loop_without_syncs_keeps_the_bridges_boundaries() -> None:
    """With no sync of the user's, the bridge's records are the only step boundaries: joining them
    made one step and read the shape change as a step cut (found by check_same_answers)."""
    src = BASE / "heldout_captures" / "ragged_sentence_classifier" / "capture"
    report = build_report(read_capture(str(src))[0])
    assert report.steps > 1
    assert [str(c.kind) for c in report.recompiles[0].causes] == ["parameter_shape"]


def test_html_report_shows_both_halves_linked(tmp_path: Path) -> None:
    """The HTML page says what the text says: each torch.compile compile with dynamo's guard and
    links to the recompile sections of the XLA graphs it added; eager mode's ops per step."""
    out = tmp_path / "run.html"
    result = CliRunner().invoke(
        cli, ["report", "--html", str(out), str(BASE / "captures" / "batch_size" / "capture")]
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    report = _report("batch_size")
    (event,) = report.dynamo.recompiles
    assert "tensor &#39;x&#39; size mismatch at index 0. expected 8, actual 11" in page
    for letter in event.variants:
        anchor = re.search(rf'<a href="#(p0-recompile-[^"]+)">{letter}</a>', page)
        assert anchor and f'id="{anchor.group(1)}"' in page
    assert "Unsupported Tensor.backward() call" in page  # the graph break, with its fix
    out = tmp_path / "eager.html"
    eager = BASE / "captures" / "eager_shape" / "capture"
    CliRunner().invoke(cli, ["report", "--html", str(out), str(eager)])
    page = out.read_text()
    assert "Eager mode: 46 op compiles" in page and "Recompile at step 3" in page
    assert "<code>aten::addmm</code>" in page and "f32[8,16]" in page


def test_the_call_site_is_the_user_line_that_called_the_compiled_function() -> None:
    """dynamo's stack of a function called in a loop of `main` holds `<module>` alone; the capture's
    caller (the line in `main`) is the innermost user frame, so the call site is that line
    (heldout4's ner_tagger_train: `loss = loss_fn(...)`, not `main(TaggerConfig())`)."""
    capture = BASE / "heldout4_captures" / "ner_tagger_train" / "capture"
    report = build_report(read_capture(str(capture))[0])
    script = (BASE / "heldout4" / "ner_tagger_train.py").read_text().splitlines()
    for e in report.dynamo.events:
        line = int(e.call_site.rsplit(":", 1)[1])
        assert "loss_fn(" in script[line - 1], e.call_site
