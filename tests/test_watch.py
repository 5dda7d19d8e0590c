"""`xlagraph watch`: a capture told while it is written (report/watch.py, render/watch.py).

Replay: on a finished capture, watch tells every recompile the report explains, each once, in
the run's order, and ends. Live: real torch_xla 2.9 runs read while they run: the recompile is
told before the run ends (the run waits for the watcher's line), a stable loop gets only
"steady" and its end, a run killed with SIGKILL mid-run ends the watch with no traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from xlagraph.cli.main import xlagraph as cli

from xlagraph.api import watch
from xlagraph.capture.reader import read_capture
from xlagraph.errors import InputError
from xlagraph.report.build import build_report

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "fixtures" / "torch_xla" / "corpus" / "captures").glob("*"))[::10]
COMPILED = sorted((ROOT / "fixtures" / "torch_xla" / "compiled" / "captures").glob("*/capture"))
RANKS = sorted((ROOT / "fixtures" / "torch_xla" / "ranks").glob("*/capture"))


@pytest.mark.parametrize("path", [*COMPILED, *CORPUS, *RANKS], ids=lambda p: "/".join(p.parts[-3:]))
def test_replay_tells_every_recompile_the_report_explains_once(path: Path) -> None:
    events = list(watch(str(path), follow=False))
    logs = read_capture(str(path))
    told = [e for e in events if e.kind == "recompile"]
    reports = [build_report(log) for log in logs]
    want = [(rep.process, r.variant, r.sync) for rep in reports for r in rep.recompiles]
    assert sorted((e.process, e.raw.subject.variant, e.raw.subject.sync) for e in told) == sorted(want)
    for log in logs:  # per process, in the run's order
        syncs = [e.raw.subject.sync for e in told if e.process == log.process]
        assert syncs == sorted(syncs)
    dynamo = sum(len(r.dynamo.recompiles) for r in reports if r.dynamo)
    assert len([e for e in events if e.kind == "torch.compile"]) == dynamo
    ends = [e for e in events if e.kind == "end"]
    assert {e.process for e in ends} <= {log.process for log in logs}
    for e in events:
        assert e.text and json.loads(e.json)["event"] == e.kind


def test_cli_replays_a_finished_capture_and_exits() -> None:
    path = ROOT / "fixtures" / "torch_xla" / "compiled" / "captures" / "batch_size" / "capture"
    result = CliRunner().invoke(cli, ["watch", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "torch.compile traced `train_step`" in lines[0]  # dynamo's words before its XLA graphs
    assert any("steady" in line for line in lines) and "ended after 6 step(s)" in lines[-1]
    out = CliRunner().invoke(cli, ["watch", "--json", str(path)]).output.splitlines()
    assert [json.loads(x)["schema"] for x in out] == ["xlagraph.watch/1"] * len(out)


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    result = CliRunner().invoke(cli, ["watch", str(tmp_path)])
    assert result.exit_code == 2 and "not a capture folder" in result.output
    assert "Traceback" not in result.output
    with pytest.raises(InputError):
        list(watch(str(tmp_path / "missing"), follow=False))


@pytest.mark.parametrize("name", ["meta.json", "journal.jsonl", "torch_trace.log"])
@pytest.mark.parametrize("once", [True, False])
def test_a_fifo_in_place_of_a_capture_file_is_one_line_and_exit_2(
    tmp_path: Path, name: str, once: bool
) -> None:
    """A FIFO never becomes a file: watch says so at once (with --once too), never waits on it."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    proc = tmp_path / "host-1"
    proc.mkdir()
    if name != "meta.json":
        (proc / "meta.json").write_text('{"format": "xlagraph-capture", "format_version": 1}')
    os.mkfifo(proc / name)
    result = CliRunner().invoke(cli, ["watch", *(["--once"] if once else []), str(tmp_path)])
    assert result.exit_code == 2 and "FIFO" in result.output and name in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_ctrl_c_ends_watch_quietly(tmp_path: Path) -> None:
    """Ctrl-C while following a run (a process on another host: never known to have ended), once
    watch has told what is there: exit 0, every line whole, no traceback."""
    import shutil

    src = ROOT / "fixtures" / "torch_xla" / "compiled" / "captures" / "int_arg" / "capture" / "proc"
    dst = tmp_path / "cap" / "host-1"
    shutil.copytree(src, dst)
    meta = json.loads((dst / "meta.json").read_text())
    meta.update(host="elsewhere", clean_exit=False)
    (dst / "meta.json").write_text(json.dumps(meta))
    argv = [sys.executable, "-m", "xlagraph.cli.main", "watch", "--json", "--interval=0.1", str(dst.parent)]
    # As a terminal's Ctrl-C finds it: a test run started in the background by a shell without job
    # control inherits SIGINT ignored, and Python then keeps it ignored (watch followed forever).
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    # Never a hang: a watch still running a minute after the signal is ended, and the test fails.
    guard = threading.Timer(60, proc.kill)
    guard.start()
    first = proc.stdout.readline()  # (in its loop now, past its imports)
    proc.send_signal(signal.SIGINT)
    # Read on through the same buffered file: `communicate` reads the pipe itself, and the lines
    # `readline` had already read ahead (a loaded machine writes several before it returns) were
    # lost, which looked like a line cut in two.
    rest = proc.stdout.read()
    err = proc.stderr.read() if proc.stderr else ""
    proc.wait(timeout=60)
    guard.cancel()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert [json.loads(line)["schema"] for line in [first, *rest.splitlines()]]  # whole lines only


def test_a_journal_cut_mid_record_is_read_up_to_its_last_complete_line(tmp_path: Path) -> None:
    src = ROOT / "fixtures" / "torch_xla" / "compiled" / "captures" / "int_arg" / "capture" / "proc"
    dst = tmp_path / "cap" / "host-1"
    import shutil

    shutil.copytree(src, dst)
    meta = json.loads((dst / "meta.json").read_text())
    meta.pop("clean_exit", None)
    meta["host"] = "elsewhere"  # a process on another machine: not known to have ended
    (dst / "meta.json").write_text(json.dumps(meta))
    journal = (dst / "journal.jsonl").read_bytes()
    cut = journal.rindex(b'{"k":"step"')
    (dst / "journal.jsonl").write_bytes(journal[: cut + 20])  # the last step record half written
    events = list(watch(str(tmp_path / "cap"), follow=False))
    assert not any(e.kind == "end" for e in events)
    (dst / "journal.jsonl").write_bytes(journal)  # ... and finished later
    assert list(watch(str(tmp_path / "cap"), follow=False))


# -- live runs (real torch_xla) -----------------------------------------------------------------

LOOP = textwrap.dedent(
    """
    import os, sys, time
    import torch, torch_xla
    dev = torch_xla.device()
    w = torch.randn(16, 4, device=dev)
    torch_xla.sync()
    go = sys.argv[1]
    for step in range(8):
        rows = 8 if step != int(os.environ.get("SHORT", "-1")) else 5
        x = torch.randn(rows, 16, device=dev)
        loss = (x @ w).pow(2).mean()
        torch_xla.sync()
        time.sleep(0.1)
    deadline = time.time() + 60
    while os.environ.get("WAIT") and not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.05)  # the run does not end before the watcher has told the recompile
    print("done", os.path.exists(go))
    """
)


def _start(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], Path, Path]:
    pytest.importorskip("torch_xla")
    script, cap, go = tmp_path / "loop.py", tmp_path / "cap", tmp_path / "go"
    script.write_text(LOOP)
    full = {**os.environ, "PJRT_DEVICE": "CPU", "XLAGRAPH_CAPTURE": str(cap), **env}
    pipe = subprocess.PIPE
    argv = [sys.executable, str(script), str(go)]
    proc = subprocess.Popen(argv, env=full, stdout=pipe, stderr=pipe, text=True)
    deadline = time.time() + 120
    while not cap.is_dir() and time.time() < deadline:
        time.sleep(0.05)
    return proc, cap, go


def _told_while_it_runs(proc: subprocess.Popen[str], cap: Path, go: Path, kind: str) -> tuple[list, str]:
    """Follow the run; at the first unexpected event of `kind` the run is still going (it waits
    for `go`). The events, and the run's stdout once it ended cleanly."""
    told = []
    for event in watch(str(cap), interval=0.1):
        told.append(event)
        if event.kind == kind and not event.expected:
            assert proc.poll() is None  # told while the run is still going
            go.write_text("seen")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    return told, out


def test_live_a_recompile_is_told_before_the_run_ends(tmp_path: Path) -> None:
    proc, cap, go = _start(tmp_path, SHORT="5", WAIT="1")
    told, out = _told_while_it_runs(proc, cap, go, "recompile")
    assert "done True" in out
    recompile = next(e for e in told if e.kind == "recompile" and not e.expected)
    assert recompile.step == 6 and "loop.py:" in recompile.text  # (the sync before the loop: step 0)
    report = build_report(read_capture(str(cap))[0])
    assert recompile.raw.subject.kinds == next(r for r in report.recompiles if r.step == 6).kinds
    assert told[-1].kind == "end"


def test_live_a_stable_loop_says_steady_and_ends(tmp_path: Path) -> None:
    proc, cap, _ = _start(tmp_path)
    kinds = [e.kind for e in watch(str(cap), interval=0.1)]
    proc.communicate(timeout=120)
    assert [k for k in kinds if k not in ("recompile",)] == ["steady", "end"]


def test_live_a_run_killed_mid_run_ends_the_watch(tmp_path: Path) -> None:
    proc, cap, _ = _start(tmp_path, WAIT="1")
    deadline = time.time() + 120
    while time.time() < deadline and not any(cap.glob("*/journal.jsonl")):
        time.sleep(0.05)
    time.sleep(1.5)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    result = CliRunner().invoke(cli, ["watch", "--interval", "0.1", str(cap)])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert "ended after" in result.output.splitlines()[-1]


# -- XLAGRAPH_ON_RECOMPILE (real torch_xla) -------------------------------------------------------

SLOW = textwrap.dedent(
    """
    import os, time
    import torch, torch_xla
    from xlagraph.errors import RecompileError
    dev = torch_xla.device()
    w = torch.randn(16, 4, device=dev)
    torch_xla.sync()
    try:
        for step in range(14):
            rows = 8 if step != int(os.environ.get("SHORT", "-1")) else 5
            x = torch.randn(rows, 16, device=dev)
            loss = (x @ w).pow(2).mean()
            torch_xla.sync()
            time.sleep(float(os.environ.get("SLEEP", "0.4")))
            print("step", step, flush=True)
    except RecompileError as e:
        print("raised at", step, "|", e.step, "|", e.explanation, "|", e.capture)
    """
)


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("torch_xla")
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    full = {**os.environ, "PJRT_DEVICE": "CPU", "XLAGRAPH_CAPTURE": str(tmp_path / "cap"), **env}
    argv = [sys.executable, str(script)]
    return subprocess.run(argv, env=full, capture_output=True, text=True, timeout=300)


def test_on_recompile_raise_stops_the_run_with_the_explanation(tmp_path: Path) -> None:
    out = _run(tmp_path, SHORT="5", XLAGRAPH_ON_RECOMPILE="raise")
    raised = [line for line in out.stdout.splitlines() if line.startswith("raised at")]
    assert raised, out.stdout + out.stderr[-3000:]
    at, step, explanation, capture = (part.strip() for part in raised[0].removeprefix("raised at").split("|"))
    assert int(at) > 5 and int(at) < 13  # stopped at a step boundary after the recompile, not at the end
    assert step == "6"  # the report's step (the sync before the loop is step 0)
    assert "slow.py:" in explanation and "fix:" in explanation
    assert Path(capture).is_dir() and Path(capture).parent == tmp_path / "cap"
    assert "xlagraph: recompile after the warm-up" in out.stderr


def test_on_recompile_raise_stops_a_fast_loop_at_the_next_boundary(tmp_path: Path) -> None:
    """No time between steps for the helper to look: the boundary after the compiled step waits
    for its reading, so the run stops at the very next sync, every time."""
    out = _run(tmp_path, SHORT="5", SLEEP="0", XLAGRAPH_ON_RECOMPILE="raise")
    raised = [line for line in out.stdout.splitlines() if line.startswith("raised at")]
    assert raised, out.stdout + out.stderr[-3000:]
    at, step, explanation, _ = (part.strip() for part in raised[0].removeprefix("raised at").split("|"))
    assert (at, step) == ("6", "6")  # loop step 5 is the report's step 6; stopped at loop step 6's sync
    assert "slow.py:" in explanation


def test_on_recompile_raise_on_the_last_step_is_told_at_exit(tmp_path: Path) -> None:
    out = _run(tmp_path, SHORT="13", SLEEP="0", XLAGRAPH_ON_RECOMPILE="raise")
    assert out.returncode == 0 and "step 13" in out.stdout and "raised" not in out.stdout
    assert "xlagraph: recompile after the warm-up" in out.stderr, out.stderr[-3000:]
    assert "on the run's last step: the run had ended" in out.stderr


def test_on_recompile_a_stable_loop_runs_to_the_end(tmp_path: Path) -> None:
    out = _run(tmp_path, XLAGRAPH_ON_RECOMPILE="raise")
    assert "step 13" in out.stdout and "raised" not in out.stdout
    assert "recompile after the warm-up" not in out.stderr


def test_on_recompile_warn_prints_one_line_and_the_run_goes_on(tmp_path: Path) -> None:
    out = _run(tmp_path, SHORT="5", XLAGRAPH_ON_RECOMPILE="warn")
    assert "step 13" in out.stdout and "raised" not in out.stdout
    warned = [line for line in out.stderr.splitlines() if "recompile after the warm-up" in line]
    assert len(warned) == 1 and "step 6" in warned[0] and "slow.py:" in warned[0]


NO_XLA = textwrap.dedent(
    """
    import os, sys, time
    import torch
    from xlagraph.errors import RecompileError

    @torch.compile(backend="aot_eager")
    def f(x):
        return (x * 2).sum()

    short, go = int(os.environ.get("SHORT", "-1")), sys.argv[1]
    try:
        for step in range(16):
            f(torch.randn(8 if step != short else 5, 4))
            time.sleep(0.2)
            print("step", step, flush=True)
    except RecompileError as e:
        print("raised at", step, "|", e.step, "|", e.explanation)
    deadline = time.time() + 60
    while os.environ.get("WAIT") and not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.05)
    """
)


def _start_no_xla(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], Path, Path]:
    script, cap, go = tmp_path / "no_xla.py", tmp_path / "cap", tmp_path / "go"
    script.write_text(NO_XLA)
    full = {**os.environ, "XLAGRAPH_CAPTURE": str(cap), **env}
    argv = [sys.executable, str(script), str(go)]
    pipe = subprocess.PIPE
    return subprocess.Popen(argv, env=full, stdout=pipe, stderr=pipe, text=True), cap, go


def test_live_without_torch_xla_dynamos_recompile_is_told_while_it_runs(tmp_path: Path) -> None:
    """torch.compile on a CPU backend, no torch_xla: the folder is a capture from the first compiled
    call, and watch tells dynamo's recompile while the run goes on."""
    proc, cap, go = _start_no_xla(tmp_path, SHORT="5", WAIT="1")
    deadline = time.time() + 120
    while time.time() < deadline and not any(cap.glob("*/meta.json")):
        time.sleep(0.05)
    told, out = _told_while_it_runs(proc, cap, go, "torch.compile")
    assert "step 15" in out
    recompile = next(e for e in told if e.kind == "torch.compile" and not e.expected)
    assert recompile.step == 5 and "no_xla.py:" in recompile.text, recompile.text
    assert told[-1].kind == "end"


def test_on_recompile_raise_without_torch_xla(tmp_path: Path) -> None:
    proc, _, _ = _start_no_xla(tmp_path, SHORT="5", XLAGRAPH_ON_RECOMPILE="raise")
    out, err = proc.communicate(timeout=300)
    raised = [line for line in out.splitlines() if line.startswith("raised at")]
    assert raised, out + err[-3000:]
    at, step, explanation = (part.strip() for part in raised[0].removeprefix("raised at").split("|"))
    assert 5 < int(at) < 15 and step == "5" and "no_xla.py:" in explanation
    assert "xlagraph: recompile after the warm-up" in err


RANKED = textwrap.dedent(
    """
    import os, time
    import torch, torch_xla
    rank = int(os.environ["RANK"])
    dev = torch_xla.device()
    w = torch.randn(16, 4, device=dev)
    torch_xla.sync()
    for step in range(8):
        rows = 5 if (rank == 1 and step == 4) else 8
        x = torch.randn(rows, 16, device=dev)
        loss = (x @ w).pow(2).mean()
        torch_xla.sync()
        time.sleep(0.2)
    """
)


def test_live_two_ranks_one_recompiles(tmp_path: Path) -> None:
    """A 2-process torchrun where rank 1 alone meets a short batch: watch, following the run, tells
    rank 1's recompile and that rank 1 compiled a graph rank 0 did not."""
    pytest.importorskip("torch_xla")
    script = tmp_path / "ranked.py"
    script.write_text(RANKED)
    cap = tmp_path / "cap"
    env = {**os.environ, "PJRT_DEVICE": "CPU", "XLAGRAPH_CAPTURE": str(cap)}
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", str(script)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(cap.glob("*/journal.jsonl"))) < 2:
        time.sleep(0.1)
    events = list(watch(str(cap), interval=0.2))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    recompiles = [e for e in events if e.kind == "recompile" and not e.expected]
    assert len({e.process for e in recompiles}) == 1 and all("ranked.py:" in e.text for e in recompiles)
    ranks = [e for e in events if e.kind == "ranks"]
    assert ranks and ranks[0].process == recompiles[0].process
    assert sum(e.kind == "end" for e in events) == 2


def test_watchdog_on_a_torch_compile_capture_warns_in_dynamos_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The helper's rule on a finished real capture (batch_size: the batch grows at step 3, after
    steps that compiled nothing): dynamo's recompile and the XLA graphs it added are told, each
    once; with raise, the first is the verdict the recorder raises."""
    import shutil

    from xlagraph.report.watchdog import run

    src = ROOT / "fixtures" / "torch_xla" / "compiled" / "captures" / "batch_size" / "capture" / "proc"
    proc = tmp_path / "proc"
    shutil.copytree(src, proc)
    assert run(str(proc), "warn", None, os.getpid(), interval=0.01) == 0
    told = [line for line in capsys.readouterr().err.splitlines() if "recompile after the warm-up" in line]
    assert told and "input `x`'s dimension 0 changed 8 -> 11" in told[0]
    assert run(str(proc), "raise", None, os.getpid(), interval=0.01) == 0
    verdict = json.loads((proc / "on_recompile.json").read_text())
    assert verdict["step"] == 3 and verdict["kind"] == "torch.compile"
    capsys.readouterr()
    assert run(str(proc), "warn", 3, os.getpid(), interval=0.01) == 0  # XLAGRAPH_WARMUP=3: all warm-up
    assert "recompile after the warm-up" not in capsys.readouterr().err


def test_a_capture_of_another_tool_or_a_newer_xlagraph(tmp_path: Path) -> None:
    """Another tool's meta.json is one line and exit 2 (report and watch); a newer capture format
    is read as far as this version knows, with a note saying so."""
    import shutil

    src = ROOT / "fixtures" / "torch_xla" / "compiled" / "captures" / "int_arg" / "capture" / "proc"
    for name, change in (("other", {"format": "someone-elses-capture"}), ("newer", {"format_version": 99})):
        dst = tmp_path / name / "host-1"
        shutil.copytree(src, dst)
        meta = json.loads((dst / "meta.json").read_text())
        meta.update(change)
        (dst / "meta.json").write_text(json.dumps(meta))
    for command in ("report", "watch"):
        result = CliRunner().invoke(cli, [command, str(tmp_path / "other")])
        assert result.exit_code == 2 and "not an xlagraph capture" in result.output, result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "newer")])
    assert result.exit_code == 0 and "written by a newer xlagraph (capture format 99" in result.output


def test_a_process_folder_made_before_its_journal_is_a_run_starting(tmp_path: Path) -> None:
    """The capture makes `<host>-<pid>/` (XLA's dump folder first) before its journal: a watcher
    polling then is early, not pointed at a wrong folder (CI met this race); a folder of other
    files still is one."""
    from xlagraph.errors import InputError
    from xlagraph.report.watch import Watcher

    (tmp_path / "run" / "node7-4242" / "hlo").mkdir(parents=True)
    assert Watcher(tmp_path / "run").poll() == []
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(InputError):
        Watcher(tmp_path / "other").poll()
